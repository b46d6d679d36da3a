-- mnemo 0010: the long-term tier (issue 13).
-- Seeds: memory-architecture §5 (cortex, migration, RAPTOR tree), §6 (bifocal
-- packets: prose fades while vectors persist), §7 (structural references).
-- The cortex itself is a LanceDB directory (mnemo.cortex); PostgreSQL keeps
-- what ties the two stores together: which memories live in the cortex, the
-- verbatim live-zone lines of every block with their full-precision vectors
-- (a block hit quotes the lines that match the query, memory-architecture §6),
-- and the cortex table versions each night run ended at (DESIGN §9).

-- Where a memory's vector lives: the hippocampus (pgvector) or the cortex (LanceDB).
ALTER TABLE mnemo.memories ADD COLUMN tier text NOT NULL DEFAULT 'hippocampus'
    CHECK (tier IN ('hippocampus', 'cortex'));
ALTER TABLE mnemo.blocks ADD COLUMN migrated_at timestamptz;
-- Recall asks whether a scope has anything in the cortex before it opens LanceDB at all.
CREATE INDEX blocks_migrated ON mnemo.blocks (entity_id, namespace) WHERE migrated_at IS NOT NULL;

-- A block's live-zone turns, verbatim, with the turn's vector (float32 bytes, model `slug`).
-- They outlive the raw turns (retention), and move to the cortex with their block.
CREATE TABLE mnemo.block_lines (
    entity_id    text        NOT NULL,
    namespace    text        NOT NULL,
    block_id     uuid        NOT NULL,
    turn_id      uuid        NOT NULL,
    turn_number  integer     NOT NULL,
    role         text        NOT NULL,
    speaker      text,
    content      text        NOT NULL CHECK (length(content) > 0),
    created_at   timestamptz NOT NULL,
    slug         text        NOT NULL,
    vector       bytea       NOT NULL,
    PRIMARY KEY (entity_id, block_id, turn_id),
    FOREIGN KEY (entity_id, block_id) REFERENCES mnemo.blocks ON DELETE CASCADE
);

-- The cortex (LanceDB) this database owns: its directory is named after `id`
-- unless MNEMO_CORTEX_URI says otherwise, so two databases never share one.
CREATE TABLE mnemo.cortex (
    singleton   boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    id          uuid        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- The cortex table versions a night run's migrate and cluster stages ended at.
ALTER TABLE mnemo.night_runs ADD COLUMN cortex_versions jsonb NOT NULL DEFAULT '{}'::jsonb;
