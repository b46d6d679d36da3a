-- mnemo 0002: an inverted index for BM25 inside PostgreSQL.
-- PostgreSQL's ts_rank has no inverse document frequency; BM25 needs term
-- document frequencies per scope. Postings are derived from the same
-- english-stemmed tsvector as the GIN index, written in the same transaction
-- as the item, and read with index-only scans (entity_id leads every key).

CREATE TABLE mnemo.postings (
    entity_id  text    NOT NULL,
    namespace  text    NOT NULL,
    term       text    NOT NULL,
    item_id    uuid    NOT NULL,
    item_kind  text    NOT NULL CHECK (item_kind IN ('turn', 'memory')),
    tf         integer NOT NULL CHECK (tf > 0),
    doc_len    integer NOT NULL CHECK (doc_len > 0),
    PRIMARY KEY (entity_id, namespace, term, item_id)
);
CREATE INDEX postings_item ON mnemo.postings (entity_id, item_id);

-- Per-scope corpus statistics for BM25's length normalisation.
CREATE TABLE mnemo.lexical_stats (
    entity_id  text   NOT NULL,
    namespace  text   NOT NULL,
    docs       bigint NOT NULL DEFAULT 0,
    total_len  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (entity_id, namespace)
);

-- Backfill what 0001 databases already hold.
INSERT INTO mnemo.postings (entity_id, namespace, term, item_id, item_kind, tf, doc_len)
SELECT d.entity_id, d.namespace, u.lexeme, d.id, d.kind, coalesce(array_length(u.positions, 1), 1),
       sum(coalesce(array_length(u.positions, 1), 1)) OVER (PARTITION BY d.entity_id, d.id)
FROM (SELECT entity_id, namespace, id, tsv, 'turn' AS kind FROM mnemo.turns
      UNION ALL
      SELECT entity_id, namespace, id, tsv, 'memory' FROM mnemo.memories WHERE status IN ('candidate', 'active')) d
CROSS JOIN LATERAL unnest(d.tsv) u;

INSERT INTO mnemo.lexical_stats (entity_id, namespace, docs, total_len)
SELECT entity_id, namespace, count(DISTINCT item_id), sum(tf)
FROM mnemo.postings GROUP BY entity_id, namespace;
