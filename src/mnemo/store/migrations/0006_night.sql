-- mnemo 0006: the night cycle (issue 5).
-- Seeds: memory-architecture §3.4 (holographic block schema), §4.2-4.3
-- (session continuity, metablocks), §7.3 (structural relationship table),
-- §8 (pipeline, day-table cleanup); archive-adr §4, §9 (candidate facts and
-- triples with provenance, staged curation versions); cognitive-plan §4.4
-- (supersedes links, why_do_i_believe).
-- Blocks and facts are searched through a memory row each (`memory_id`,
-- status 'candidate' until the curator decides), so recall, weights, decay and
-- forgetting treat them like every other memory.

-- The curator may quarantine a memory that contradicts an anchored one.
ALTER TABLE mnemo.memories DROP CONSTRAINT memories_status_check;
ALTER TABLE mnemo.memories ADD CONSTRAINT memories_status_check
    CHECK (status IN ('candidate', 'active', 'archived', 'pruned', 'quarantined'));

-- Per-scope state the night cycle carries from one run to the next
-- (the surprisal model's counts, ...).
CREATE TABLE mnemo.night_state (
    entity_id   text        NOT NULL,
    namespace   text        NOT NULL,
    key         text        NOT NULL,
    value       jsonb       NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, namespace, key),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);

-- One row per night-cycle run; a run that did not finish is resumed with its own `as_of`.
CREATE TABLE mnemo.night_runs (
    entity_id    text        NOT NULL,
    id           uuid        NOT NULL,
    namespace    text        NOT NULL,
    as_of        timestamptz NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    stages_done  text[]      NOT NULL DEFAULT '{}',
    report       jsonb       NOT NULL DEFAULT '{}'::jsonb,
    PRIMARY KEY (entity_id, id),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);
CREATE INDEX night_runs_scope ON mnemo.night_runs (entity_id, namespace, started_at);

-- Per-session progress: turns up to these numbers went through each stage.
CREATE TABLE mnemo.night_sessions (
    entity_id       text        NOT NULL,
    namespace       text        NOT NULL,
    session_id      text        NOT NULL,
    blocks_through  integer     NOT NULL DEFAULT -1,
    facts_through   integer     NOT NULL DEFAULT -1,
    open_arc        boolean     NOT NULL DEFAULT false,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, namespace, session_id),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);

-- Holographic blocks: an episode cut at a flux arc (or the stretch between arcs).
CREATE TABLE mnemo.blocks (
    entity_id            text        NOT NULL,
    id                   uuid        NOT NULL,
    namespace            text        NOT NULL,
    kind                 text        NOT NULL CHECK (kind IN ('arc', 'span', 'compound')),
    session_id           text,
    first_turn           integer,
    last_turn            integer,
    turn_ids             uuid[]      NOT NULL DEFAULT '{}',
    prose                jsonb       NOT NULL,
    content              text        NOT NULL CHECK (length(content) > 0),
    flux_metrics         jsonb       NOT NULL DEFAULT '{}'::jsonb,
    salience_scores      jsonb       NOT NULL DEFAULT '{}'::jsonb,
    coherence_gain       double precision NOT NULL DEFAULT 0,
    ties_weight          double precision NOT NULL DEFAULT 0,
    user_tier            text        NOT NULL DEFAULT 'normal' CHECK (user_tier IN ('normal', 'meso', 'elder')),
    arc_start_time       timestamptz NOT NULL,
    arc_end_time         timestamptz NOT NULL,
    session_continuity   boolean     NOT NULL DEFAULT false,
    parent_metablock_id  uuid,
    continues_from       uuid,
    continued_by         uuid,
    derived_from         uuid,
    citations            jsonb       NOT NULL DEFAULT '[]'::jsonb,
    memory_id            uuid,
    run_id               uuid,
    created_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, id),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);
CREATE INDEX blocks_session ON mnemo.blocks (entity_id, namespace, session_id, first_turn);
CREATE INDEX blocks_time ON mnemo.blocks (entity_id, namespace, arc_end_time);
CREATE INDEX blocks_memory ON mnemo.blocks (entity_id, memory_id);

-- Structural links between blocks and memories (memory-architecture §7.3, cognitive-plan §4.2).
CREATE TABLE mnemo.links (
    entity_id   text        NOT NULL,
    namespace   text        NOT NULL,
    source_id   uuid        NOT NULL,
    target_id   uuid        NOT NULL,
    link_type   text        NOT NULL CHECK (link_type IN ('cites', 'continues', 'derived_from', 'thematic',
                                                          'supersedes')),
    strength    double precision,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, source_id, target_id, link_type),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);
CREATE INDEX links_target ON mnemo.links (entity_id, target_id);

-- Third-normal-form knowledge: entities, attribute facts, subject-predicate-object triples.
CREATE TABLE mnemo.entities (
    entity_id      text        NOT NULL,
    id             uuid        NOT NULL,
    namespace      text        NOT NULL,
    name           text        NOT NULL CHECK (length(name) > 0),
    norm           text        NOT NULL CHECK (length(norm) > 0),
    mention_count  integer     NOT NULL DEFAULT 1 CHECK (mention_count > 0),
    first_seen     timestamptz NOT NULL,
    last_seen      timestamptz NOT NULL,
    PRIMARY KEY (entity_id, id),
    UNIQUE (entity_id, namespace, norm),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);

CREATE TABLE mnemo.facts (
    entity_id      text        NOT NULL,
    id             uuid        NOT NULL,
    namespace      text        NOT NULL,
    subject_id     uuid        NOT NULL,
    attribute      text        NOT NULL CHECK (length(attribute) > 0),
    value          text        NOT NULL CHECK (length(value) > 0),
    fact_kind      text        NOT NULL CHECK (fact_kind IN ('fact', 'preference', 'relation', 'event')),
    key_hash       text        NOT NULL,  -- normalised (subject, attribute)
    hash           text        NOT NULL,  -- normalised (subject, attribute, value)
    confidence     double precision NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    mention_count  integer     NOT NULL DEFAULT 1 CHECK (mention_count > 0),
    first_seen     timestamptz NOT NULL,
    last_seen      timestamptz NOT NULL,
    provenance     uuid[]      NOT NULL DEFAULT '{}',  -- the turns that stated it
    source         text        NOT NULL DEFAULT 'user' CHECK (source IN ('tool', 'user', 'inferred')),
    valid_from     timestamptz,
    valid_to       timestamptz,
    closed_by      uuid,
    memory_id      uuid,
    PRIMARY KEY (entity_id, id),
    FOREIGN KEY (entity_id, subject_id) REFERENCES mnemo.entities ON DELETE CASCADE
);
CREATE UNIQUE INDEX facts_open_hash ON mnemo.facts (entity_id, namespace, hash) WHERE valid_to IS NULL;
CREATE INDEX facts_subject ON mnemo.facts (entity_id, subject_id, attribute);
CREATE INDEX facts_key ON mnemo.facts (entity_id, namespace, key_hash);

CREATE TABLE mnemo.triples (
    entity_id      text        NOT NULL,
    id             uuid        NOT NULL,
    namespace      text        NOT NULL,
    subject_id     uuid        NOT NULL,
    predicate      text        NOT NULL CHECK (length(predicate) > 0),
    object         text        NOT NULL CHECK (length(object) > 0),
    object_id      uuid,
    hash           text        NOT NULL,
    confidence     double precision NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    mention_count  integer     NOT NULL DEFAULT 1 CHECK (mention_count > 0),
    first_seen     timestamptz NOT NULL,
    last_seen      timestamptz NOT NULL,
    provenance     uuid[]      NOT NULL DEFAULT '{}',
    valid_from     timestamptz,
    valid_to       timestamptz,
    PRIMARY KEY (entity_id, id),
    FOREIGN KEY (entity_id, subject_id) REFERENCES mnemo.entities ON DELETE CASCADE
);
CREATE UNIQUE INDEX triples_open_hash ON mnemo.triples (entity_id, namespace, hash) WHERE valid_to IS NULL;
CREATE INDEX triples_subject ON mnemo.triples (entity_id, subject_id);

-- Staged curation (archive-adr §9): a numbered version per scope, inspectable before it is applied.
CREATE TABLE mnemo.curation_versions (
    entity_id   text        NOT NULL,
    namespace   text        NOT NULL,
    version     integer     NOT NULL CHECK (version > 0),
    run_id      uuid,
    as_of       timestamptz NOT NULL,
    status      text        NOT NULL DEFAULT 'staged' CHECK (status IN ('staged', 'applied', 'discarded')),
    counts      jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    applied_at  timestamptz,
    PRIMARY KEY (entity_id, namespace, version),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);

CREATE TABLE mnemo.curation_items (
    entity_id    text        NOT NULL,
    namespace    text        NOT NULL,
    version      integer     NOT NULL,
    memory_id    uuid        NOT NULL,
    verdict      text        NOT NULL CHECK (verdict IN ('promote', 'keep', 'archive', 'prune', 'quarantine')),
    score        double precision NOT NULL,
    reasons      text[]      NOT NULL DEFAULT '{}',
    from_status  text        NOT NULL,
    to_status    text        NOT NULL,
    PRIMARY KEY (entity_id, namespace, version, memory_id),
    FOREIGN KEY (entity_id, namespace, version) REFERENCES mnemo.curation_versions ON DELETE CASCADE
);
