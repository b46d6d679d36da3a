-- mnemo 0009: when a turn arrived in mnemo (issue 12).
-- `created_at` is the turn's event time, which imported history sets years in
-- the past; retention (memory-architecture §2.3, §8.3: one cycle of raw turns)
-- counts cycles from arrival instead, so the first night after an import does
-- not remove what it has just consolidated. Rows that exist already get the
-- time of this migration: they are kept longer, never shorter.
ALTER TABLE mnemo.turns ADD COLUMN recorded_at timestamptz NOT NULL DEFAULT now();
