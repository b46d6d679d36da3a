-- mnemo 0017: the reference agent's age and costs (issue 18 item 9).
-- Seed: cognitive-plan §4.8 (every model call logged with its tokens and cost; session, 24-hour and
-- lifetime totals) and §4.9 (restart count, uptime and age kept in the database).
CREATE TABLE mnemo.agents (
    entity_id      text        NOT NULL,
    name           text        NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.:@+-]{0,63}$'),
    first_started  timestamptz NOT NULL DEFAULT now(),
    last_started   timestamptz NOT NULL DEFAULT now(),
    starts         integer     NOT NULL DEFAULT 1 CHECK (starts > 0),
    PRIMARY KEY (entity_id, name)
);

CREATE TABLE traces.model_calls (
    entity_id      text        NOT NULL,
    id             uuid        NOT NULL DEFAULT uuidv7(),
    agent          text        NOT NULL,
    at             timestamptz NOT NULL DEFAULT now(),
    model          text        NOT NULL,
    purpose        text        NOT NULL,
    input_tokens   integer     NOT NULL CHECK (input_tokens >= 0),
    output_tokens  integer     NOT NULL CHECK (output_tokens >= 0),
    cost_usd       double precision,  -- NULL: the price table does not know the model
    seconds        double precision NOT NULL CHECK (seconds >= 0),
    PRIMARY KEY (entity_id, id)
);
CREATE INDEX model_calls_agent_time ON traces.model_calls (entity_id, agent, at);
