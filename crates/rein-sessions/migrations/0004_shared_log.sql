-- Schema 4: appends of many sessions at once cost less. Every session's
-- events go into one table in the order they were appended (`n`), so a
-- commit of a thousand sessions' events writes a few pages at its end
-- instead of a leaf per session in a tree keyed by 36-byte ids; a small
-- index finds a session's events by an integer key. (Measured in
-- docs/BENCHMARKS.md, "Many busy conversations on one SQLite file".)
ALTER TABLE sessions ADD COLUMN key INTEGER;
UPDATE sessions SET key = rowid;
CREATE UNIQUE INDEX sessions_by_key ON sessions (key);

CREATE TABLE log (
    n           INTEGER PRIMARY KEY,
    session     INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    at_ms       INTEGER NOT NULL,
    agent_path  TEXT NOT NULL,
    kind        TEXT NOT NULL,
    version     INTEGER NOT NULL,
    data        TEXT NOT NULL
);
INSERT INTO log (session, seq, at_ms, agent_path, kind, version, data)
    SELECT s.key, e.seq, e.at_ms, e.agent_path, e.kind, e.version, e.data
    FROM events e JOIN sessions s ON s.id = e.session_id
    ORDER BY s.key, e.seq;
CREATE UNIQUE INDEX log_by_session ON log (session, seq);
DROP TABLE events;
