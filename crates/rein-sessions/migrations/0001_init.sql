-- rein's embedded store, schema 1.
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    created_ms  INTEGER NOT NULL,
    metadata    TEXT NOT NULL,
    head_seq    INTEGER NOT NULL DEFAULT 0,
    head_turn   TEXT,
    control     TEXT NOT NULL DEFAULT '{}'
);

-- The append-only log. Rows are only ever inserted.
CREATE TABLE events (
    session_id  TEXT NOT NULL REFERENCES sessions(id),
    seq         INTEGER NOT NULL,
    at_ms       INTEGER NOT NULL,
    agent_path  TEXT NOT NULL,
    kind        TEXT NOT NULL,
    version     INTEGER NOT NULL,
    data        TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

CREATE TABLE turns (
    id            TEXT PRIMARY KEY,
    session_id    TEXT NOT NULL REFERENCES sessions(id),
    parent        TEXT,
    prompt        TEXT NOT NULL,
    started_seq   INTEGER NOT NULL,
    finished_seq  INTEGER,
    outcome       TEXT
);
CREATE INDEX turns_by_session ON turns (session_id, started_seq);

CREATE TABLE session_locks (
    session_id   TEXT PRIMARY KEY REFERENCES sessions(id),
    holder       TEXT NOT NULL,
    token        TEXT NOT NULL,
    acquired_ms  INTEGER NOT NULL,
    expires_ms   INTEGER NOT NULL
);

CREATE TABLE artifacts (
    hash        TEXT PRIMARY KEY,
    size        INTEGER NOT NULL,
    media_type  TEXT NOT NULL,
    bytes       BLOB NOT NULL
);
