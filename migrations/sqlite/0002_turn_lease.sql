-- A running turn's lease: the replica running it renews it; once it lapses, any replica may
-- close the turn as interrupted (the process that ran it died).
ALTER TABLE turns ADD COLUMN lease_expires_at TEXT;
