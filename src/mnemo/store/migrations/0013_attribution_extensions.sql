-- mnemo 0013: process attribution and extension schemas (issue 16).
-- Seeds: archive-adr §4 ("All ingestion writes are attributed: entity_id -> identity,
-- process_id -> calling subsystem (core, extension, simulation branch). This attribution
-- is mandatory for downstream isolation and pruning.") and §8 ("Schema Extensions").

-- Which subsystem wrote a row. Writers name it for their transaction (SET LOCAL mnemo.process,
-- mnemo.store.pool.Store.transaction); a row written without one is the core's.
ALTER TABLE mnemo.turns ADD COLUMN process_id text NOT NULL
    DEFAULT coalesce(nullif(current_setting('mnemo.process', true), ''), 'core');
ALTER TABLE mnemo.memories ADD COLUMN process_id text NOT NULL
    DEFAULT coalesce(nullif(current_setting('mnemo.process', true), ''), 'core');
ALTER TABLE mnemo.facts ADD COLUMN process_id text NOT NULL
    DEFAULT coalesce(nullif(current_setting('mnemo.process', true), ''), 'core');
ALTER TABLE mnemo.triples ADD COLUMN process_id text NOT NULL
    DEFAULT coalesce(nullif(current_setting('mnemo.process', true), ''), 'core');
CREATE INDEX turns_process ON mnemo.turns (entity_id, namespace, process_id) WHERE process_id <> 'core';
CREATE INDEX memories_process ON mnemo.memories (entity_id, namespace, process_id) WHERE process_id <> 'core';

-- Extensions (a Python entry point in the group "mnemo.extensions") own a schema each and
-- their ordered SQL migrations, applied and recorded like mnemo's own; backups cover them.
CREATE TABLE mnemo.extensions (
    name         text        PRIMARY KEY,
    schema_name  text        NOT NULL UNIQUE CHECK (schema_name ~ '^[a-z_][a-z0-9_]{0,62}$'),
    registered_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE mnemo.extension_migrations (
    extension   text        NOT NULL REFERENCES mnemo.extensions ON DELETE CASCADE,
    version     integer     NOT NULL,
    name        text        NOT NULL,
    checksum    text        NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (extension, version)
);
