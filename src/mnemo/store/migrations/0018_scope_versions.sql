-- mnemo 0018: per-scope versions and change logs, so an in-memory read index can tell it is behind
-- and catch up (issue 29; DESIGN §3 "PostgreSQL is the truth; a read index is a cache").
-- Every statement that changes what a scope's first-stage retrieval can see (its items, their
-- vectors, token embeddings and postings, a memory's status, a block's tier) gives the scope a new
-- version and logs the item ids it touched under it, in the same transaction, from a trigger: no
-- write path can forget to. The version row is locked until the writer commits, so a scope's
-- versions become visible in order and a reader that sees version v has seen every change up to v.
-- Versions come from one sequence, so a scope purged and written again never reuses a number an
-- index still holds; a new version row (and a forget, which leaves no forgotten id in the log)
-- moves `since` up to itself: an index from before must be rebuilt.
CREATE SEQUENCE mnemo.scope_version_seq;

CREATE TABLE mnemo.scope_versions (
    entity_id text   NOT NULL,
    namespace text   NOT NULL,
    version   bigint NOT NULL CHECK (version > 0),
    since     bigint NOT NULL DEFAULT 0 CHECK (since >= 0),  -- the log holds every change after this
    PRIMARY KEY (entity_id, namespace)
);

CREATE TABLE mnemo.scope_changes (
    entity_id text   NOT NULL,
    namespace text   NOT NULL,
    version   bigint NOT NULL,
    item_id   uuid   NOT NULL,
    PRIMARY KEY (entity_id, namespace, version, item_id)
);

-- TG_ARGV[0]: the column naming the item; TG_ARGV[1] (updates): when an updated row counts.
CREATE FUNCTION mnemo.note_scope_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        changed := format('SELECT entity_id, namespace, %I FROM new_rows', TG_ARGV[0]);
    ELSIF TG_OP = 'DELETE' THEN
        changed := format('SELECT entity_id, namespace, %I FROM old_rows', TG_ARGV[0]);
    ELSE  -- an update counts for the scope the row left and the one it joined
        changed := format(
            'SELECT s.* FROM new_rows n JOIN old_rows o ON o.entity_id = n.entity_id AND o.%1$I = n.%1$I
               CROSS JOIN LATERAL (VALUES (o.entity_id, o.namespace, o.%1$I), (n.entity_id, n.namespace, n.%1$I)) s
             WHERE %2$s', TG_ARGV[0], coalesce(TG_ARGV[1], 'true'));
    END IF;
    EXECUTE format(
        $sql$WITH c AS (SELECT DISTINCT * FROM (%s) AS x (entity_id, namespace, item_id) WHERE item_id IS NOT NULL),
              v AS (INSERT INTO mnemo.scope_versions AS s (entity_id, namespace, version, since)
                    SELECT d.entity_id, d.namespace, x.n, x.n - 1
                    FROM (SELECT DISTINCT entity_id, namespace FROM c ORDER BY 1, 2) AS d
                    CROSS JOIN LATERAL (SELECT nextval('mnemo.scope_version_seq') AS n) AS x
                    ON CONFLICT (entity_id, namespace)
                    DO UPDATE SET version = nextval('mnemo.scope_version_seq')
                    RETURNING entity_id, namespace, version)
         INSERT INTO mnemo.scope_changes (entity_id, namespace, version, item_id)
         SELECT c.entity_id, c.namespace, v.version, c.item_id FROM c JOIN v USING (entity_id, namespace)$sql$,
        changed);
    RETURN NULL;
END $$;

-- A row update that matters (a memory's status, a block's tier) is rare beside the updates that do
-- not (every mutating recall updates memories' weights and use): those rows are watched one by one,
-- with a WHEN condition checked before any function runs.
CREATE FUNCTION mnemo.note_scope_row_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    item uuid := (to_jsonb(NEW) ->> TG_ARGV[0])::uuid;
    place record;
    v bigint;
BEGIN
    IF item IS NULL THEN
        RETURN NULL;
    END IF;
    FOR place IN SELECT DISTINCT e, ns FROM (VALUES (OLD.entity_id, OLD.namespace), (NEW.entity_id, NEW.namespace))
                 AS s (e, ns) ORDER BY 1, 2
    LOOP
        v := nextval('mnemo.scope_version_seq');
        INSERT INTO mnemo.scope_versions AS sv (entity_id, namespace, version, since)
        VALUES (place.e, place.ns, v, v - 1)
        ON CONFLICT (entity_id, namespace) DO UPDATE SET version = nextval('mnemo.scope_version_seq')
        RETURNING sv.version INTO v;
        INSERT INTO mnemo.scope_changes (entity_id, namespace, version, item_id)
        VALUES (place.e, place.ns, v, item) ON CONFLICT DO NOTHING;
    END LOOP;
    RETURN NULL;
END $$;

-- One trigger per (table, operation): transition tables allow one event per trigger.
CREATE FUNCTION mnemo.watch_scope_changes(target regclass, item text, updated text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    name text := replace(target::text, '.', '_');
BEGIN
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS new_rows
                    FOR EACH STATEMENT EXECUTE FUNCTION mnemo.note_scope_changes(%L)',
                   name || '_inserted', target, item);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS old_rows
                    FOR EACH STATEMENT EXECUTE FUNCTION mnemo.note_scope_changes(%L)',
                   name || '_deleted', target, item);
    IF updated IS NOT NULL THEN
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows
                        FOR EACH STATEMENT EXECUTE FUNCTION mnemo.note_scope_changes(%L, %L)',
                       name || '_updated', target, item, updated);
    END IF;
END $$;

SELECT mnemo.watch_scope_changes('mnemo.turns', 'id', NULL);
SELECT mnemo.watch_scope_changes('mnemo.memories', 'id', NULL);
CREATE TRIGGER mnemo_memories_updated AFTER UPDATE ON mnemo.memories FOR EACH ROW
    WHEN ((OLD.status, OLD.tier, OLD.namespace, OLD.content) IS DISTINCT FROM
          (NEW.status, NEW.tier, NEW.namespace, NEW.content))
    EXECUTE FUNCTION mnemo.note_scope_row_change('id');
SELECT mnemo.watch_scope_changes(
    'mnemo.postings', 'item_id', '(o.item_kind, o.tf, o.doc_len) IS DISTINCT FROM (n.item_kind, n.tf, n.doc_len)');
SELECT mnemo.watch_scope_changes(
    'mnemo.token_vectors', 'item_id', '(o.token_ids, o.vectors) IS DISTINCT FROM (n.token_ids, n.vectors)');
SELECT mnemo.watch_scope_changes('mnemo.block_lines', 'turn_id', NULL);
SELECT mnemo.watch_scope_changes('mnemo.blocks', 'memory_id', NULL);
CREATE TRIGGER mnemo_blocks_updated AFTER UPDATE ON mnemo.blocks FOR EACH ROW
    WHEN (OLD.migrated_at IS DISTINCT FROM NEW.migrated_at)
    EXECUTE FUNCTION mnemo.note_scope_row_change('memory_id');
SELECT mnemo.watch_scope_changes(
    format('vectors.%I', table_name)::regclass, 'item_id',
    '(o.slug, o.embedding, o.item_kind) IS DISTINCT FROM (n.slug, n.embedding, n.item_kind)')
FROM vectors.spaces;
