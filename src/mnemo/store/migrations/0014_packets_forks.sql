-- mnemo 0014: consent-governed sharing and forks (issue 16).
-- Seeds: memory-architecture §6 (bifocal packets: the unit of memory transfer), archive-adr
-- "Consent-Governed Sharing" (an export is a deliberate grant, not a read) and "Logical Domain
-- Isolation" (speculative timelines branch off a scope and never write back on their own).

-- A grant may also let the grantee export the scope's packets (reading does not imply it).
ALTER TABLE mnemo.grants ADD COLUMN export boolean NOT NULL DEFAULT false;

-- A fork is a namespace of the same entity that began as a copy of another: the scope it
-- branched from and when. Discarding or merging asks for it, so a plain scope is never taken
-- for a fork.
ALTER TABLE mnemo.scopes ADD COLUMN forked_from text;
ALTER TABLE mnemo.scopes ADD COLUMN forked_at timestamptz;
