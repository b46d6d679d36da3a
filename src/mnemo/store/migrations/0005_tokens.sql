-- mnemo 0005: bearer tokens for the HTTP service (archive-adr §7 "Sigil Scope").
-- A token maps to one entity (and optionally one namespace). Only its SHA-256
-- is stored; the token itself is shown once, at creation. The entity id is
-- part of the token, so the lookup key starts with entity_id (DESIGN §7).
CREATE TABLE mnemo.tokens (
    entity_id    text        NOT NULL,
    token_hash   text        NOT NULL,
    id           uuid        NOT NULL,
    namespace    text,                   -- NULL: any namespace of the entity
    label        text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz,
    PRIMARY KEY (entity_id, token_hash),
    UNIQUE (entity_id, id)
);
