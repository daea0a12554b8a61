-- rein's PostgreSQL store, schema 1: the same tables as the SQLite store's
-- schemas 1-3. Ids sort bytewise (COLLATE "C"): UUIDv7 text sorts by
-- creation. Event data is kept as the text it was written as (not jsonb),
-- so a copy between stores is byte for byte.
CREATE TABLE sessions (
    id          TEXT COLLATE "C" PRIMARY KEY,
    created_ms  BIGINT NOT NULL,
    metadata    TEXT NOT NULL,
    head_seq    BIGINT NOT NULL DEFAULT 0,
    head_turn   TEXT,
    control     TEXT NOT NULL DEFAULT '{}'
);

-- The append-only log. Rows are only ever inserted.
CREATE TABLE events (
    session_id  TEXT COLLATE "C" NOT NULL REFERENCES sessions(id),
    seq         BIGINT NOT NULL,
    at_ms       BIGINT NOT NULL,
    agent_path  TEXT NOT NULL,
    kind        TEXT NOT NULL,
    version     BIGINT NOT NULL,
    data        TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE turns (
    id            TEXT COLLATE "C" PRIMARY KEY,
    session_id    TEXT COLLATE "C" NOT NULL REFERENCES sessions(id),
    parent        TEXT,
    prompt        TEXT NOT NULL,
    started_seq   BIGINT NOT NULL,
    finished_seq  BIGINT,
    outcome       TEXT
);
CREATE INDEX turns_by_session ON turns (session_id, started_seq);

CREATE TABLE session_locks (
    session_id   TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions(id),
    holder       TEXT NOT NULL,
    token        TEXT NOT NULL,
    acquired_ms  BIGINT NOT NULL,
    expires_ms   BIGINT NOT NULL,
    process      TEXT
);

CREATE TABLE artifacts (
    hash        TEXT PRIMARY KEY,
    size        BIGINT NOT NULL,
    media_type  TEXT NOT NULL,
    bytes       BYTEA NOT NULL
);

-- A session's inbox: decisions, words and stops posted by a person's surface
-- without the session's lease, taken by the driver into the log.
CREATE TABLE inbox (
    id           BIGSERIAL PRIMARY KEY,
    session_id   TEXT COLLATE "C" NOT NULL REFERENCES sessions(id),
    at_ms        BIGINT NOT NULL,
    approval_id  TEXT,
    item         TEXT NOT NULL,
    taken        BOOLEAN NOT NULL DEFAULT FALSE
);
-- One decision per approval: a second one is a conflict.
CREATE UNIQUE INDEX inbox_one_decision ON inbox (session_id, approval_id)
    WHERE approval_id IS NOT NULL;
CREATE INDEX inbox_open ON inbox (session_id, taken, id);
