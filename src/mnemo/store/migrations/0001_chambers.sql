-- mnemo 0001: the four chambers and the foundation tables.
-- Seeds: archive-adr §2 (chambers), memory-architecture §2.2 (day table),
-- cognitive-plan §2.2-2.5 (memory schema, halfvec, hybrid search).
-- Every table of `mnemo` and `vectors` carries entity_id, and it leads every
-- primary or unique key, so the tables can be distributed by entity (DESIGN §7).

CREATE EXTENSION IF NOT EXISTS vector;

CREATE SCHEMA IF NOT EXISTS mnemo;
CREATE SCHEMA IF NOT EXISTS vectors;
CREATE SCHEMA IF NOT EXISTS traces;
CREATE SCHEMA IF NOT EXISTS queue;

CREATE TABLE mnemo.scopes (
    entity_id   text        NOT NULL,
    namespace   text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, namespace)
);

-- A grant lets `grantee` read the owner's (entity_id, namespace).
CREATE TABLE mnemo.grants (
    entity_id   text        NOT NULL,
    namespace   text        NOT NULL,
    grantee     text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, namespace, grantee),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);

-- The day table: raw exchanges, embedded immediately.
CREATE TABLE mnemo.turns (
    entity_id    text        NOT NULL,
    id           uuid        NOT NULL,
    namespace    text        NOT NULL,
    session_id   text        NOT NULL,
    turn_number  integer     NOT NULL CHECK (turn_number >= 0),
    role         text        NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    speaker      text,
    content      text        NOT NULL CHECK (length(content) > 0),
    created_at   timestamptz NOT NULL DEFAULT now(),
    token_count  integer     NOT NULL DEFAULT 0,
    surprisal    double precision,
    flux_state   text CHECK (flux_state IN ('baseline', 'spike', 'resolution', 'stable')),
    user_tier    text        NOT NULL DEFAULT 'normal' CHECK (user_tier IN ('normal', 'meso', 'elder')),
    metadata     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    tsv          tsvector GENERATED ALWAYS AS (to_tsvector('english', coalesce(speaker, '') || ' ' || content)) STORED,
    PRIMARY KEY (entity_id, id),
    UNIQUE (entity_id, namespace, session_id, turn_number),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);
CREATE INDEX turns_scope_time ON mnemo.turns (entity_id, namespace, created_at);
CREATE INDEX turns_tsv ON mnemo.turns USING gin (tsv);

-- Curated memories with Beta(alpha, beta) weights and ACT-R access traces.
CREATE TABLE mnemo.memories (
    entity_id          text        NOT NULL,
    id                 uuid        NOT NULL,
    namespace          text        NOT NULL,
    kind               text        NOT NULL CHECK (kind IN ('episodic', 'semantic', 'procedural', 'preference',
                                          'reflection', 'correction', 'narrative', 'tension', 'insight')),
    content            text        NOT NULL CHECK (length(content) > 0),
    compressed         text,
    alpha              double precision NOT NULL DEFAULT 1.0 CHECK (alpha > 0),
    beta               double precision NOT NULL DEFAULT 4.0 CHECK (beta > 0),
    access_timestamps  timestamptz[] NOT NULL DEFAULT '{}',
    access_count       integer     NOT NULL DEFAULT 0,
    last_accessed      timestamptz,
    status             text        NOT NULL DEFAULT 'active'
                                   CHECK (status IN ('candidate', 'active', 'archived', 'pruned')),
    anchored           boolean     NOT NULL DEFAULT false,
    source_tag         text,
    source_confidence  double precision NOT NULL DEFAULT 1.0 CHECK (source_confidence BETWEEN 0 AND 1),
    provenance         text[]      NOT NULL DEFAULT '{}',
    event_time         timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    token_count        integer     NOT NULL DEFAULT 0,
    metadata           jsonb       NOT NULL DEFAULT '{}'::jsonb,
    tsv                tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    PRIMARY KEY (entity_id, id),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);
CREATE INDEX memories_scope_status ON mnemo.memories (entity_id, namespace, status);
CREATE INDEX memories_tsv ON mnemo.memories USING gin (tsv);

-- Key/value facts about this database (active embedder slug, ...).
CREATE TABLE mnemo.meta (
    key         text PRIMARY KEY,
    value       jsonb       NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Vector spaces: one table per (space, dimension), created on first use as
-- vectors.<space>_<dim> with halfvec(dim) and an HNSW cosine index.
CREATE TABLE vectors.spaces (
    table_name  text PRIMARY KEY,
    space       text        NOT NULL,
    dim         integer     NOT NULL CHECK (dim BETWEEN 1 AND 16000),
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (space, dim)
);

-- Every recall, appended.
CREATE TABLE traces.retrievals (
    entity_id       text        NOT NULL,
    id              uuid        NOT NULL,
    namespace       text        NOT NULL,
    reader          text        NOT NULL,
    at              timestamptz NOT NULL DEFAULT now(),
    query           text        NOT NULL,
    k               integer     NOT NULL,
    outcome         text        NOT NULL CHECK (outcome IN ('hits', 'refusal')),
    best_similarity double precision,
    threshold       double precision NOT NULL,
    hit_ids         uuid[]      NOT NULL DEFAULT '{}',
    latency_ms      double precision NOT NULL,
    read_only       boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (entity_id, id)
);
CREATE INDEX retrievals_scope_time ON traces.retrievals (entity_id, namespace, at);
