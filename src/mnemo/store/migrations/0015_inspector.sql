-- mnemo 0015: the inspector (issue 17).
-- Seeds: archive-adr §2 (traces: every change leaves a record) and §9 (curation is inspectable).

-- What a person did through the inspector (forget, anchor, unanchor, supersede, apply a curation):
-- who, when, to which item. A forgotten item's row keeps its id, never its text.
CREATE TABLE traces.actions (
    entity_id  text        NOT NULL,
    id         uuid        NOT NULL DEFAULT uuidv7(),
    namespace  text        NOT NULL,
    item_id    uuid,
    at         timestamptz NOT NULL DEFAULT now(),
    action     text        NOT NULL CHECK (action IN ('forget', 'anchor', 'unanchor', 'supersede', 'apply_curation')),
    actor      text        NOT NULL,
    detail     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    PRIMARY KEY (entity_id, id)
);
CREATE INDEX actions_scope_time ON traces.actions (entity_id, namespace, at);

-- Paging a scope's memories newest first, over 100k+ of them, without sorting them all.
CREATE INDEX memories_scope_time ON mnemo.memories (entity_id, namespace, created_at DESC, id DESC);
CREATE INDEX weight_changes_scope_time ON traces.weight_changes (entity_id, namespace, at);
CREATE INDEX safety_events_scope_time ON traces.safety_events (entity_id, namespace, at);
