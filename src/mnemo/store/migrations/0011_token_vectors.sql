-- mnemo 0011: token embeddings for late-interaction re-ranking (issue 14).
-- Seed: cognitive-plan §2.6. A cache of what the embedder's model read for an
-- item (turn, line or memory): its content token ids (int32) and their unit
-- embeddings (int8 codes of unit vectors, x 127, one row per token), sealed with the model slug. Written
-- with the item's vector on import, otherwise the first time a recall re-ranks
-- the item; forgetting an item or purging its scope deletes its rows.
CREATE TABLE mnemo.token_vectors (
    entity_id text NOT NULL,
    namespace text NOT NULL,
    item_id uuid NOT NULL,
    slug text NOT NULL,
    token_ids bytea NOT NULL,
    vectors bytea NOT NULL,
    PRIMARY KEY (entity_id, item_id, slug)
);
-- the codes do not compress: stored out of line uncompressed, read without a pglz pass.
ALTER TABLE mnemo.token_vectors ALTER COLUMN vectors SET STORAGE EXTERNAL;
