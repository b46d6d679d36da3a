-- mnemo 0022: what each turn claims about a slot (issue 40 item 2).
-- Seeds: cognitive-plan §4.4 (a new value supersedes the old one, which is kept).
-- The write path reads each turn's first-person statements with the offline extractor
-- (mnemo.cognition.claims) and keeps one row per statement: the slot it is about (an entity's
-- attribute, the fact key), the value in canonical form, whether it ends the value, whether the
-- slot holds one value at a time, and when it was said. Recall asks which later claim of the
-- same slot makes a returned turn stale, before any night has run. Derived data: forgetting a
-- turn forgets its claims; retention keeps them (the turn's words live on as a block's line, with
-- the turn's id). The key keeps entity_id (DESIGN §7).
CREATE TABLE mnemo.claims (
    entity_id  text        NOT NULL,
    namespace  text        NOT NULL,
    turn_id    uuid        NOT NULL,
    slot       text        NOT NULL CHECK (length(slot) = 64),
    value      text        NOT NULL,
    negated    boolean     NOT NULL,
    single     boolean     NOT NULL,
    said_at    timestamptz NOT NULL,
    PRIMARY KEY (entity_id, turn_id, slot, value, negated),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);
CREATE INDEX claims_slot ON mnemo.claims (entity_id, namespace, slot, said_at);
