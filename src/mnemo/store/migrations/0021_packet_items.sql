-- mnemo 0021: whole copies (issue 39).
-- Seeds: memory-architecture §6 (bifocal packets: the unit of memory transfer) and archive-adr
-- "Logical Domain Isolation" (a fork starts as a copy of its parent).
-- A fork, a merge and a packet import carry a scope's consolidated state too (blocks and their
-- lines, entities, facts, triples, links, the cortex tree, the night's bookkeeping). Turns and
-- memories remember the packet they came from in their metadata; the state's rows have no such
-- column, so this table maps each state packet an import wrote to the row it became: a
-- re-import skips them (imports stay idempotent by packet id).
CREATE TABLE mnemo.packet_items (
    entity_id    text        NOT NULL,
    namespace    text        NOT NULL,
    packet_id    text        NOT NULL CHECK (length(packet_id) > 0),
    packet_type  text        NOT NULL,
    item_id      uuid        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, namespace, packet_id),
    FOREIGN KEY (entity_id, namespace) REFERENCES mnemo.scopes ON DELETE CASCADE
);
