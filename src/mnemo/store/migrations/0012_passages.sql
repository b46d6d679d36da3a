-- mnemo 0012: long items as overlapping passages (issue 14 item 6).
-- Seed: cognitive-plan §2.5. An item longer than the embedding model's window also gets the
-- vectors of its later windows here (passage 1, 2, ...; its own vector, in the vector space's
-- table, reads the first window). Few items are long, so a scope's passages are scanned
-- exactly rather than indexed; any dimension (halfvec without a fixed width), sealed with the
-- model slug. Forgetting an item or purging its scope deletes its passages.
CREATE TABLE mnemo.passages (
    entity_id text NOT NULL,
    namespace text NOT NULL,
    item_id uuid NOT NULL,
    item_kind text NOT NULL CHECK (item_kind IN ('turn', 'memory')),
    slug text NOT NULL,
    passage integer NOT NULL CHECK (passage >= 1),
    embedding halfvec NOT NULL,
    PRIMARY KEY (entity_id, item_id, slug, passage)
);
CREATE INDEX passages_scope ON mnemo.passages (entity_id, namespace, slug);
