-- mnemo 0023: each scope numbers its own versions, from row-level triggers (issue 42, decision 5;
-- DESIGN §3 "PostgreSQL is the truth; a read index is a cache", §7 "never a global sequence").
-- Replaces migration 0018's machinery, which drew every version from one sequence and logged from
-- statement-level triggers with transition tables: Citus propagates only row-level triggers to the
-- shards, and a global sequence is a cross-node round trip on every write.
-- - A scope's version is its own counter: the first change a transaction makes to a scope's items
--   (its vectors, token embeddings, postings, lines, a memory's status, a block's tier) raises it
--   by one and notes the transaction (`xact`) on the row; the transaction's later changes of that
--   scope log their item ids under the same version without touching the row again. The row stays
--   locked until the writer commits, so a scope's versions become visible in order and a reader that
--   sees version v has seen every change up to v.
-- - A purge deletes the row; the scope written again starts a new row with a new random `epoch` and
--   counts from 1 again. A read index keeps the epoch it was built at beside its version: another
--   epoch means the scope it holds is gone, and it is rebuilt (the sequence made numbers unique
--   instead). A forget still moves `since` up to the version (the log cannot say which items went).
-- - Row triggers cost a function call per row: postings (many rows per item) are not watched on
--   insert and delete, their item is (see below).
-- - Every trigger touches only the rows of the changed row's own entity (checked with the statements,
--   tests/integration/test_single_entity.py).
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT tgname, tgrelid::regclass AS rel FROM pg_trigger
             WHERE tgfoid IN ('mnemo.note_scope_changes'::regproc, 'mnemo.note_scope_row_change'::regproc)
    LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', t.tgname, t.rel);
    END LOOP;
END $$;
DROP FUNCTION mnemo.watch_scope_changes(regclass, text, text);
DROP FUNCTION mnemo.note_scope_changes();
DROP FUNCTION mnemo.note_scope_row_change();
DROP SEQUENCE mnemo.scope_version_seq;

ALTER TABLE mnemo.scope_versions
    ADD COLUMN epoch uuid NOT NULL DEFAULT gen_random_uuid(),  -- new whenever the row is created
    ADD COLUMN xact  xid8;                                      -- the transaction that set `version`

-- TG_ARGV[0]: the column naming the item (id, item_id, turn_id or memory_id).
CREATE FUNCTION mnemo.note_scope_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
    item uuid;
    v bigint;
BEGIN
    FOR side IN 1..2 LOOP  -- the row before (a delete, an update) and after (an insert, an update)
        IF side = 1 THEN
            CONTINUE WHEN TG_OP = 'INSERT';
            r := OLD;
        ELSE
            CONTINUE WHEN TG_OP = 'DELETE';
            r := NEW;
        END IF;
        IF TG_ARGV[0] = 'item_id' THEN
            item := r.item_id;
        ELSIF TG_ARGV[0] = 'id' THEN
            item := r.id;
        ELSIF TG_ARGV[0] = 'turn_id' THEN
            item := r.turn_id;
        ELSE
            item := r.memory_id;
        END IF;
        CONTINUE WHEN item IS NULL;
        SELECT s.version INTO v FROM mnemo.scope_versions s
        WHERE s.entity_id = r.entity_id AND s.namespace = r.namespace AND s.xact = pg_current_xact_id();
        IF NOT FOUND THEN  -- this transaction's first change of the scope: the next version
            INSERT INTO mnemo.scope_versions AS s (entity_id, namespace, version, xact)
            VALUES (r.entity_id, r.namespace, 1, pg_current_xact_id())
            ON CONFLICT (entity_id, namespace) DO UPDATE SET version = s.version + 1, xact = excluded.xact
            RETURNING s.version INTO v;
        END IF;
        INSERT INTO mnemo.scope_changes (entity_id, namespace, version, item_id)
        VALUES (r.entity_id, r.namespace, v, item) ON CONFLICT DO NOTHING;
    END LOOP;
    RETURN NULL;
END $$;

-- A table's inserts and deletes always count; an update counts when `updated` (OLD/NEW) holds, a
-- condition checked before any function runs (every mutating recall updates memories' weights and
-- use, which do not count).
CREATE FUNCTION mnemo.watch_scope_changes(target regclass, item text, updated text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    name text := replace(target::text, '.', '_');
BEGIN
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR DELETE ON %s
                    FOR EACH ROW EXECUTE FUNCTION mnemo.note_scope_change(%L)',
                   name || '_changed', target, item);
    IF updated IS NOT NULL THEN
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s FOR EACH ROW WHEN (%s)
                        EXECUTE FUNCTION mnemo.note_scope_change(%L)',
                       name || '_updated', target, updated, item);
    END IF;
END $$;

SELECT mnemo.watch_scope_changes('mnemo.turns', 'id', NULL);
SELECT mnemo.watch_scope_changes(
    'mnemo.memories', 'id',
    '(OLD.status, OLD.tier, OLD.namespace, OLD.content) IS DISTINCT FROM (NEW.status, NEW.tier, NEW.namespace, NEW.content)');
-- Postings are the rows an import writes most of (one per term of each item): a row trigger on
-- their inserts and deletes would cost more than the rest of the write. Every write path inserts an
-- item's postings in the transaction that inserts the item (a turn, a memory, a line: lexicon's
-- add_postings, a packet's line_postings), whose own trigger logs the item, and a read index that
-- re-reads an item re-reads its postings; postings are deleted only by forget (which makes every
-- older index rebuild, and deletes the items too) and purge. Only their updates are watched (a turn
-- that became a line).
CREATE TRIGGER mnemo_postings_updated AFTER UPDATE ON mnemo.postings FOR EACH ROW
    WHEN ((OLD.item_kind, OLD.tf, OLD.doc_len) IS DISTINCT FROM (NEW.item_kind, NEW.tf, NEW.doc_len))
    EXECUTE FUNCTION mnemo.note_scope_change('item_id');
SELECT mnemo.watch_scope_changes(
    'mnemo.token_vectors', 'item_id', '(OLD.token_ids, OLD.vectors) IS DISTINCT FROM (NEW.token_ids, NEW.vectors)');
SELECT mnemo.watch_scope_changes('mnemo.block_lines', 'turn_id', NULL);
SELECT mnemo.watch_scope_changes('mnemo.blocks', 'memory_id', 'OLD.migrated_at IS DISTINCT FROM NEW.migrated_at');
-- A vector is compared as text: a trigger's WHEN clause is dumped as written, and IS DISTINCT FROM
-- on halfvec names pgvector's operator unqualified, which a restore (an empty search_path) cannot
-- find (text's operator is always found).
SELECT mnemo.watch_scope_changes(
    format('vectors.%I', table_name)::regclass, 'item_id',
    '(OLD.slug, OLD.item_kind, OLD.embedding::text) IS DISTINCT FROM (NEW.slug, NEW.item_kind, NEW.embedding::text)')
FROM vectors.spaces;
