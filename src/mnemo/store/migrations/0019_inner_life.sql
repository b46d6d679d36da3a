-- mnemo 0019: the inner life and self-tuning (issue 31).
-- Seeds: cognitive-plan §3.9 phases B and C (safety events about parameters and patterns, not only
-- one memory's weight), §4.2 (tensions are memories: no table), §4.3 and §5.3 (forward-linkable
-- outcome ids on every gate decision, retrieval and gut delta; outcomes link back), §4.5 (tuned
-- blend alphas and gate parameters per scope, with their history), §4.7 and §3.10 (the agent's
-- pending inputs and scheduled tasks survive a restart), §5.1 (gut deltas and the axes the night
-- finds in them), §5.2 (readiness milestones); memory-architecture §10.4-10.6.3 (tasks attempted by
-- strategies or sub-agents, with lineage: the frustration ledger).

-- Safety events about a parameter change or a pattern name no memory or weight change.
ALTER TABLE traces.safety_events
    ALTER COLUMN memory_id DROP NOT NULL,
    ALTER COLUMN change_id DROP NOT NULL,
    ADD COLUMN subject text NOT NULL DEFAULT 'weight',
    ADD COLUMN evidence jsonb NOT NULL DEFAULT '{}'::jsonb;

-- A gate decision's forward-linkable id: an outcome that comes later names it.
ALTER TABLE traces.gate_decisions ADD COLUMN outcome_id uuid NOT NULL DEFAULT uuidv7();
CREATE INDEX gate_decisions_outcome ON traces.gate_decisions (entity_id, outcome_id);

-- A retrieval's blend components per returned hit, for the alphas' tuning.
ALTER TABLE traces.retrievals ADD COLUMN parts jsonb;

-- Outcomes that link back to a retrieval, a gate decision or a gut delta by its outcome id.
CREATE TABLE traces.outcomes (
    entity_id   text        NOT NULL,
    id          uuid        NOT NULL DEFAULT uuidv7(),
    namespace   text        NOT NULL,
    outcome_id  uuid        NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('feedback', 'task', 'reaccess')),
    value       double precision NOT NULL CHECK (value BETWEEN -1 AND 1),
    used        uuid[]      NOT NULL DEFAULT '{}',
    at          timestamptz NOT NULL DEFAULT now(),
    detail      text        NOT NULL DEFAULT '',
    PRIMARY KEY (entity_id, id)
);
CREATE INDEX outcomes_link ON traces.outcomes (entity_id, namespace, outcome_id);

-- Every gut delta the agent felt: attention centroid minus subconscious centroid.
CREATE TABLE mnemo.gut_deltas (
    entity_id   text        NOT NULL,
    id          uuid        NOT NULL DEFAULT uuidv7(),
    namespace   text        NOT NULL,
    agent       text        NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    vector      real[]      NOT NULL,
    magnitude   double precision NOT NULL CHECK (magnitude >= 0),
    valence     double precision NOT NULL CHECK (valence BETWEEN -1 AND 1),
    context     text        NOT NULL DEFAULT '',
    action      text        NOT NULL DEFAULT '',
    outcome_id  uuid        NOT NULL DEFAULT uuidv7(),
    PRIMARY KEY (entity_id, id),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);
CREATE INDEX gut_deltas_scope ON mnemo.gut_deltas (entity_id, namespace, at);

-- The gut axes the night found: principal components of the logged deltas.
CREATE TABLE mnemo.gut_axes (
    entity_id   text        NOT NULL,
    namespace   text        NOT NULL,
    rank        integer     NOT NULL CHECK (rank >= 0),
    axis        real[]      NOT NULL,
    variance    double precision NOT NULL,
    correlation double precision,  -- with the outcomes linked to the deltas; NULL: too few outcomes
    name        text        NOT NULL,
    deltas      integer     NOT NULL,
    computed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, namespace, rank),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);

-- Bootstrap readiness: the first time each milestone was reached, and what showed it.
CREATE TABLE mnemo.milestones (
    entity_id   text        NOT NULL,
    namespace   text        NOT NULL,
    milestone   text        NOT NULL,
    reached_at  timestamptz NOT NULL,
    evidence    jsonb       NOT NULL DEFAULT '{}'::jsonb,
    PRIMARY KEY (entity_id, namespace, milestone),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);

-- A scope's tuned parameters ('blend': the Dirichlet alphas; 'gate': exit-gate thresholds;
-- 'breaker': the circuit breaker's counts; 'sampling': the idle loop's breadth), and their history.
CREATE TABLE mnemo.tuning (
    entity_id   text        NOT NULL,
    namespace   text        NOT NULL,
    name        text        NOT NULL CHECK (name IN ('blend', 'gate', 'breaker', 'sampling', 'coherence')),
    params      jsonb       NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, namespace, name),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);

CREATE TABLE traces.tuning_history (
    entity_id   text        NOT NULL,
    id          uuid        NOT NULL DEFAULT uuidv7(),
    namespace   text        NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    name        text        NOT NULL,
    previous    jsonb,
    params      jsonb       NOT NULL,
    applied     boolean     NOT NULL,
    reason      text        NOT NULL,
    evidence    jsonb       NOT NULL DEFAULT '{}'::jsonb,
    PRIMARY KEY (entity_id, id)
);
CREATE INDEX tuning_history_scope ON traces.tuning_history (entity_id, namespace, name, at);

-- What an agent holds between cycles: inputs waiting for attention and tasks not yet due.
CREATE TABLE mnemo.agent_inputs (
    entity_id   text        NOT NULL,
    id          uuid        NOT NULL DEFAULT uuidv7(),
    namespace   text        NOT NULL,
    agent       text        NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('pending', 'scheduled')),
    source      text        NOT NULL,
    text        text        NOT NULL CHECK (length(text) > 0),
    urgency     double precision NOT NULL DEFAULT 0 CHECK (urgency >= 0),
    charge      double precision NOT NULL DEFAULT 0,
    confidence  double precision NOT NULL DEFAULT 1 CHECK (confidence BETWEEN 0 AND 1),
    waited      integer     NOT NULL DEFAULT 0 CHECK (waited >= 0),
    due_at      timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, id),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);
CREATE INDEX agent_inputs_agent ON mnemo.agent_inputs (entity_id, namespace, agent, kind, created_at);

-- The frustration ledger: tasks attempted by a strategy or sub-agent, generation by generation.
CREATE TABLE mnemo.task_attempts (
    entity_id          text        NOT NULL,
    id                 uuid        NOT NULL DEFAULT uuidv7(),
    namespace          text        NOT NULL,
    lineage            text        NOT NULL CHECK (length(lineage) > 0),
    task               text        NOT NULL CHECK (length(task) > 0),
    generation         integer     NOT NULL CHECK (generation >= 0),
    mutation_id        uuid        NOT NULL DEFAULT uuidv7(),
    parent_mutation_id uuid,
    mutation           text        NOT NULL DEFAULT '',
    success            boolean     NOT NULL,
    failure_mode       text,
    turns              integer     CHECK (turns >= 0),
    propagated         boolean     NOT NULL DEFAULT false,
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, id),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);
CREATE INDEX task_attempts_scope ON mnemo.task_attempts (entity_id, namespace, task, generation);
