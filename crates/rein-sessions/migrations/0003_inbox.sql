-- A session's inbox: decisions, words and stops posted by a person's surface
-- without the session's lease, taken by the driver into the log.
CREATE TABLE inbox (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id   TEXT NOT NULL REFERENCES sessions(id),
    at_ms        INTEGER NOT NULL,
    approval_id  TEXT,
    item         TEXT NOT NULL,
    taken        INTEGER NOT NULL DEFAULT 0
);
-- One decision per approval: a second one is a conflict.
CREATE UNIQUE INDEX inbox_one_decision ON inbox (session_id, approval_id)
    WHERE approval_id IS NOT NULL;
CREATE INDEX inbox_open ON inbox (session_id, taken, id);
