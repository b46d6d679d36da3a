-- mnemo 0016: reflexes, procedural memory (issue 18 item 8).
-- Seed: memory-architecture §10.3 (what was done in a context and how it turned out), §10.4
-- (causal edges between reflexes), §10.5 (the night prunes stale, unsuccessful reflexes and
-- weakens old edges). The context's embedding is stored with its model slug (the Dimension
-- Lock: only vectors of the active model are compared); a scope holds few enough reflexes that
-- they are scored exactly, without an index.
CREATE TABLE mnemo.reflexes (
    entity_id      text        NOT NULL,
    id             uuid        NOT NULL DEFAULT uuidv7(),
    namespace      text        NOT NULL,
    context        text        NOT NULL CHECK (length(context) > 0),
    action         text        NOT NULL CHECK (length(action) > 0),
    action_type    text        NOT NULL CHECK (action_type IN ('tool_call', 'response_pattern', 'delegation')),
    slug           text        NOT NULL,
    embedding      halfvec     NOT NULL,
    success_count  integer     NOT NULL DEFAULT 0 CHECK (success_count >= 0),
    failure_count  integer     NOT NULL DEFAULT 0 CHECK (failure_count >= 0),
    total_count    integer     GENERATED ALWAYS AS (success_count + failure_count) STORED,
    success_rate   double precision GENERATED ALWAYS AS (
                       CASE WHEN success_count + failure_count > 0
                            THEN success_count::float8 / (success_count + failure_count) ELSE 0 END) STORED,
    last_accessed  timestamptz NOT NULL DEFAULT now(),
    last_success   timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    process_id     text        NOT NULL DEFAULT coalesce(nullif(current_setting('mnemo.process', true), ''), 'core'),
    PRIMARY KEY (entity_id, id),
    UNIQUE (entity_id, namespace, action_type, action, context),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);
CREATE INDEX reflexes_scope ON mnemo.reflexes (entity_id, namespace, last_accessed);

CREATE TABLE mnemo.causal_edges (
    entity_id     text        NOT NULL,
    namespace     text        NOT NULL,
    source_id     uuid        NOT NULL,
    target_id     uuid        NOT NULL,
    strength      double precision NOT NULL CHECK (strength >= 0),
    gap_seconds   double precision NOT NULL DEFAULT 0 CHECK (gap_seconds >= 0),
    observations  integer     NOT NULL DEFAULT 1 CHECK (observations > 0),
    last_observed timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, source_id, target_id),
    FOREIGN KEY (entity_id, source_id) REFERENCES mnemo.reflexes ON DELETE CASCADE,
    FOREIGN KEY (entity_id, target_id) REFERENCES mnemo.reflexes ON DELETE CASCADE
);
CREATE INDEX causal_edges_target ON mnemo.causal_edges (entity_id, target_id);
