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

-- A block's verbatim lines: the turns its content quotes whole (live zones, short dead zones).
-- When retention removes a raw turn that is a line, the turn leaves the day table but its text
-- lives on here and its index entries (postings, vector) become the line's (item kind 'line',
-- same id): recall still finds it, as a line of its block. A line's vector moves to the cortex
-- with its block; its row and postings stay, as a migrated block's memory row does.
CREATE TABLE mnemo.block_lines (
    entity_id    text        NOT NULL,
    namespace    text        NOT NULL,
    block_id     uuid        NOT NULL,
    turn_id      uuid        NOT NULL,
    session_id   text        NOT NULL,
    turn_number  integer     NOT NULL,
    role         text        NOT NULL,
    speaker      text,
    content      text        NOT NULL CHECK (length(content) > 0),
    created_at   timestamptz NOT NULL,
    metadata     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    PRIMARY KEY (entity_id, block_id, turn_id),
    FOREIGN KEY (entity_id, block_id) REFERENCES mnemo.blocks ON DELETE CASCADE
);
CREATE INDEX block_lines_turn ON mnemo.block_lines (entity_id, turn_id);
CREATE INDEX block_lines_session ON mnemo.block_lines (entity_id, namespace, session_id, turn_number);

-- Lines are items of their own in the lexical index and the vector spaces.
ALTER TABLE mnemo.postings DROP CONSTRAINT postings_item_kind_check;
ALTER TABLE mnemo.postings ADD CONSTRAINT postings_item_kind_check CHECK (item_kind IN ('turn', 'memory', 'line'));
DO $$
DECLARE t text;
BEGIN
    FOR t IN SELECT table_name FROM vectors.spaces LOOP
        EXECUTE format('ALTER TABLE vectors.%I DROP CONSTRAINT IF EXISTS %I', t, t || '_item_kind_check');
        EXECUTE format('ALTER TABLE vectors.%I ADD CONSTRAINT %I CHECK (item_kind IN (''turn'', ''memory'', ''line''))',
                       t, t || '_item_kind_check');
    END LOOP;
END $$;

-- The cortex (LanceDB) this database owns: its directory is named after `id`
-- unless MNEMO_CORTEX_URI says otherwise, so two databases never share one.
CREATE TABLE mnemo.cortex (
    singleton   boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    id          uuid        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- The cortex table versions a night run's migrate and cluster stages ended at.
ALTER TABLE mnemo.night_runs ADD COLUMN cortex_versions jsonb NOT NULL DEFAULT '{}'::jsonb;
