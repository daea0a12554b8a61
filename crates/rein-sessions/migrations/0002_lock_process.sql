-- The process that took a session's lease (JSON of rein_sessions::ProcessMark),
-- so a holder provably dead on this host can be taken over at once.
ALTER TABLE session_locks ADD COLUMN process TEXT;
