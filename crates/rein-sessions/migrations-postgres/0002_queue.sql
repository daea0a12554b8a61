-- Work shared by many processes (`rein worker`): graphs waiting for a
-- process to drive them, and each task attempt waiting for one to run it.
-- A row is held by a lease (holder, token, expiry); a lapsed one is taken
-- by the next to ask. A task's result is accepted only from the holder of
-- its lease, once.
CREATE TABLE graph_runs (
    graph_session  TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions(id),
    submitted_ms   BIGINT NOT NULL,
    holder         TEXT,
    token          TEXT,
    expires_ms     BIGINT NOT NULL DEFAULT 0,
    finished       BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX graph_runs_open ON graph_runs (finished, expires_ms);

CREATE TABLE task_queue (
    graph_session  TEXT COLLATE "C" NOT NULL REFERENCES sessions(id),
    task           TEXT COLLATE "C" NOT NULL,
    attempt        INTEGER NOT NULL,
    enqueued_ms    BIGINT NOT NULL,
    payload        TEXT NOT NULL,
    state          TEXT NOT NULL DEFAULT 'ready',
    holder         TEXT,
    token          TEXT,
    expires_ms     BIGINT NOT NULL DEFAULT 0,
    claims         INTEGER NOT NULL DEFAULT 0,
    result         TEXT,
    PRIMARY KEY (graph_session, task, attempt)
);
CREATE INDEX task_queue_open ON task_queue (state, expires_ms);
