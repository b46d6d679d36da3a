-- mnemo 0008: bearer tokens may expire (issue 12, "expiry on create").
-- NULL: the token never expires. A token whose expires_at has passed is refused
-- like an unknown one (mnemo.interfaces.auth.verify); the row stays, so
-- `mnemo token list` can show it as expired.
ALTER TABLE mnemo.tokens ADD COLUMN expires_at timestamptz;
