-- mnemo 0004: memory dynamics (issue 4).
-- Seeds: cognitive-plan §2.3 (bounded access history), §2.7 (ACT-R), §2.8-2.9
-- (entry/exit gates, scratch buffer with TTL), §3.1 (co-access table), §3.9
-- (audit trail and safety events, shadow mode).

-- Access history beyond the newest timestamps kept in access_timestamps:
-- how many older accesses there were and when the oldest happened.
ALTER TABLE mnemo.memories
    ADD COLUMN older_access_count integer NOT NULL DEFAULT 0 CHECK (older_access_count >= 0),
    ADD COLUMN oldest_access timestamptz;

-- Identity injection reads a scope's strongest memories by weight centre.
CREATE INDEX memories_center ON mnemo.memories (entity_id, namespace, (alpha / (alpha + beta)) DESC)
    WHERE status = 'active';

-- Hebbian links between memories retrieved together; one row per unordered pair (a < b).
CREATE TABLE mnemo.co_access (
    entity_id    text        NOT NULL,
    namespace    text        NOT NULL,
    a            uuid        NOT NULL,
    b            uuid        NOT NULL,
    count        integer     NOT NULL DEFAULT 1 CHECK (count > 0),
    last_at      timestamptz NOT NULL,
    PRIMARY KEY (entity_id, a, b),
    CHECK (a < b),
    FOREIGN KEY (entity_id, a) REFERENCES mnemo.memories ON DELETE CASCADE,
    FOREIGN KEY (entity_id, b) REFERENCES mnemo.memories ON DELETE CASCADE
);
CREATE INDEX co_access_b ON mnemo.co_access (entity_id, b);

-- The scratch buffer between the entry and the exit gate.
CREATE TABLE mnemo.scratch (
    entity_id    text        NOT NULL,
    id           uuid        NOT NULL,
    namespace    text        NOT NULL,
    content      text        NOT NULL CHECK (length(content) > 0),
    kind         text        NOT NULL,
    role         text,
    source_tag   text,
    metadata     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    rounds       integer     NOT NULL DEFAULT 0,  -- exit-gate evaluations that kept it buffered
    PRIMARY KEY (entity_id, id),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);
CREATE INDEX scratch_scope ON mnemo.scratch (entity_id, namespace, created_at);

-- Every weight change, with its reason and evidence (the audit log).
CREATE TABLE traces.weight_changes (
    entity_id    text        NOT NULL,
    id           uuid        NOT NULL,
    namespace    text        NOT NULL,
    memory_id    uuid        NOT NULL,
    at           timestamptz NOT NULL DEFAULT now(),
    operation    text        NOT NULL CHECK (operation IN ('reinforce', 'contradict', 'create')),
    gain         double precision NOT NULL,
    old_alpha    double precision,
    old_beta     double precision,
    new_alpha    double precision NOT NULL,
    new_beta     double precision NOT NULL,
    reason       text        NOT NULL,
    evidence     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    blocked      boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (entity_id, id)
);
CREATE INDEX weight_changes_memory ON traces.weight_changes (entity_id, memory_id, at);

-- Ceilings that fired: enforced ones blocked the change, shadow ones only recorded it.
CREATE TABLE traces.safety_events (
    entity_id    text        NOT NULL,
    id           uuid        NOT NULL,
    namespace    text        NOT NULL,
    memory_id    uuid        NOT NULL,
    at           timestamptz NOT NULL DEFAULT now(),
    ceiling      text        NOT NULL,
    enforced     boolean     NOT NULL,
    detail       text        NOT NULL,
    change_id    uuid        NOT NULL,
    PRIMARY KEY (entity_id, id)
);
CREATE INDEX safety_events_memory ON traces.safety_events (entity_id, memory_id, at);

-- Every entry- and exit-gate decision.
CREATE TABLE traces.gate_decisions (
    entity_id    text        NOT NULL,
    id           uuid        NOT NULL,
    namespace    text        NOT NULL,
    at           timestamptz NOT NULL DEFAULT now(),
    gate         text        NOT NULL CHECK (gate IN ('entry', 'exit')),
    item_id      uuid        NOT NULL,
    action       text        NOT NULL,
    reason       text        NOT NULL,
    relevance    double precision,
    similarity   double precision,
    contradiction text,
    related_id   uuid,
    memory_id    uuid,
    content      text        NOT NULL,
    PRIMARY KEY (entity_id, id)
);
CREATE INDEX gate_decisions_scope ON traces.gate_decisions (entity_id, namespace, at);
