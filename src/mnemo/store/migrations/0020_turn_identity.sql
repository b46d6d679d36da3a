-- mnemo 0020: a turn's content identity (issue 39 item 3).
-- A client that retries a committed but unacknowledged write, or imports the same file again,
-- must not store its turns twice. Every turn carries an identity, unique in its scope (the key
-- keeps entity_id, DESIGN §7): `key:<idempotency key>` when the client named the turn, else
-- `sha256:<hex>` of its session, role, time, content and ordinal (how many identical turns of
-- the same write came before it); mnemo.cognition.turn_identity computes it for new turns. A writer
-- inserts against the unique index, so two writers retrying at once cannot both store a turn.
-- Existing turns get the hash of their stored fields, their ordinal counted among the identical
-- turns of their session in turn order: earlier duplicates stay (each its own ordinal), and the
-- same file imported again finds the first copy of each turn.
ALTER TABLE mnemo.turns ADD COLUMN identity text;

UPDATE mnemo.turns t
   SET identity = 'sha256:' || encode(sha256(convert_to(
           '12:mnemo.turn/1'
           || length(t.session_id) || ':' || t.session_id
           || length(t.role) || ':' || t.role
           || length(o.micros) || ':' || o.micros
           || length(t.content) || ':' || t.content
           || length(o.ordinal) || ':' || o.ordinal, 'UTF8')), 'hex')
  FROM (SELECT entity_id, id,
               ((extract(epoch FROM created_at) * 1000000)::bigint)::text AS micros,
               (row_number() OVER (PARTITION BY entity_id, namespace, session_id, role, created_at, content
                                   ORDER BY turn_number) - 1)::text AS ordinal
          FROM mnemo.turns) o
 WHERE t.entity_id = o.entity_id AND t.id = o.id;

ALTER TABLE mnemo.turns ALTER COLUMN identity SET NOT NULL;
ALTER TABLE mnemo.turns ADD CONSTRAINT turns_identity_length CHECK (length(identity) BETWEEN 5 AND 300);
CREATE UNIQUE INDEX turns_identity ON mnemo.turns (entity_id, namespace, identity);
