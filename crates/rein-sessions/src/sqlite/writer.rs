//! Group commit: every write of a [`super::SqliteStore`] goes to one writer
//! thread, which commits whatever is queued in one `BEGIN IMMEDIATE`
//! transaction — one fsync for the lot — and then answers each caller.
//!
//! A write that is refused (a lost lease, an event that breaks the log's
//! rules) leaves the rest of the batch to commit: refused before it changed
//! anything, it needs no undo; refused after, the batch runs again with a
//! savepoint per write, and it is rolled back alone. A commit that fails
//! fails every caller in the batch. A caller hears "appended" only after the
//! commit returned, so whatever a caller was told is on disk; a crash in
//! between leaves the whole batch or none of it.
//!
//! The queue is bounded ([`QUEUE`]): callers wait for room (back-pressure)
//! rather than pile up without limit. A batch holds at most [`MAX_BATCH`]
//! writes so one commit never grows without limit either.
//!
//! Leases are taken, renewed and given back here too, so no other
//! transaction of this process waits for SQLite's write lock.
//!
//! Not here: reads (`reader`), artifacts put and inbox posts (the sqlx pool);
//! what a write does (`append`, `leases`).

use std::path::Path;
use std::time::Duration;

use rein_wire::{AgentError, error::codes};
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use super::Durability;
use super::append::{Done, Write, apply_write};
use super::failed::sql_error;

/// Writes waiting for the writer, at most.
const QUEUE: usize = 4_096;

/// Writes committed together, at most.
const MAX_BATCH: usize = 1_024;

/// WAL pages between automatic checkpoints.
const WAL_AUTOCHECKPOINT: i64 = 10_000;

type Answer = Result<Done, AgentError>;

struct Job {
    write: Write,
    answer: oneshot::Sender<Answer>,
}

/// The handle callers queue writes on.
#[derive(Debug, Clone)]
pub(super) struct Writer {
    jobs: mpsc::Sender<Job>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job").field("write", &self.write).finish()
    }
}

fn writer_gone() -> AgentError {
    AgentError::new(
        codes::STORE_UNAVAILABLE,
        "the store's writer has stopped; reopen the store",
    )
}

impl Writer {
    /// Open the writer's own connection to `path` and start its thread.
    pub(super) fn start(path: &Path, durability: Durability) -> Result<Writer, AgentError> {
        let conn = Connection::open(path).map_err(sql_error)?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(sql_error)?;
        let synchronous = match durability {
            Durability::Full => "FULL",
            Durability::Process => "NORMAL",
        };
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(sql_error)?;
        conn.pragma_update(None, "synchronous", synchronous)
            .map_err(sql_error)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(sql_error)?;
        conn.set_prepared_statement_cache_capacity(32);
        // Many sessions' appends touch many pages per commit; checkpointing
        // every 10,000 WAL pages (~40 MB) instead of SQLite's 1,000 copies a
        // page rewritten by many commits into the database once, not ten
        // times (`append/hundred_sessions/full`: ~11k → ~15–19k events/s).
        conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT)
            .map_err(sql_error)?;
        let (jobs, queue) = mpsc::channel(QUEUE);
        std::thread::Builder::new()
            .name("rein-store-writer".into())
            .spawn(move || run(&conn, queue))
            .map_err(|err| {
                AgentError::new(
                    codes::STORE_UNAVAILABLE,
                    format!("cannot start the store's writer: {err}"),
                )
            })?;
        Ok(Writer { jobs })
    }

    /// Queue `write` and wait until it is committed (or refused).
    pub(super) async fn commit(&self, write: Write) -> Answer {
        let (answer, answered) = oneshot::channel();
        self.jobs
            .send(Job { write, answer })
            .await
            .map_err(|_| writer_gone())?;
        answered.await.map_err(|_| writer_gone())?
    }
}

/// The writer thread: wait for a write, take whatever else is queued,
/// commit them together, answer. Ends when every handle is dropped.
fn run(conn: &Connection, mut queue: mpsc::Receiver<Job>) {
    while let Some(first) = queue.blocking_recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        commit_batch(conn, batch);
    }
}

/// Commit `batch` in one transaction. Each write runs as it is: a write
/// refused before it changed anything (a lost lease, an event that breaks
/// the log's rules — the usual refusals) leaves nothing to undo, and the
/// rest commit. Only when a refused write had changed something already,
/// or the transaction was lost, is the batch rolled back and run again
/// with a savepoint per write (`commit_isolated`).
fn commit_batch(conn: &Connection, batch: Vec<Job>) {
    if let Err(err) = run_cached(conn, "BEGIN IMMEDIATE") {
        fail_all(batch.into_iter().map(|job| job.answer), &sql_error(err));
        return;
    }
    let mut results = Vec::with_capacity(batch.len());
    for job in &batch {
        let before = conn.total_changes();
        let result = apply_write(conn, &job.write);
        if result.is_err() && (conn.total_changes() != before || conn.is_autocommit()) {
            let _ = conn.execute_batch("ROLLBACK");
            commit_isolated(conn, batch);
            return;
        }
        results.push(result);
    }
    let answers = batch.into_iter().map(|job| job.answer);
    match run_cached(conn, "COMMIT") {
        Ok(()) => {
            for (answer, result) in answers.zip(results) {
                let _ = answer.send(result);
            }
        }
        Err(err) => {
            let _ = conn.execute_batch("ROLLBACK");
            fail_all(answers, &sql_error(err));
        }
    }
}

/// Commit `batch` with each write in a savepoint of its own, so a write
/// refused halfway is rolled back alone; a commit that fails fails every
/// caller in the batch.
fn commit_isolated(conn: &Connection, batch: Vec<Job>) {
    if let Err(err) = run_cached(conn, "BEGIN IMMEDIATE") {
        fail_all(batch.into_iter().map(|job| job.answer), &sql_error(err));
        return;
    }
    let mut done: Vec<(oneshot::Sender<Answer>, Answer)> = Vec::with_capacity(batch.len());
    for Job { write, answer } in batch {
        let result = run_cached(conn, "SAVEPOINT write")
            .map_err(sql_error)
            .and_then(|()| apply_write(conn, &write));
        let closed = match &result {
            Ok(_) => run_cached(conn, "RELEASE write"),
            Err(_) => run_cached(conn, "ROLLBACK TO write")
                .and_then(|()| run_cached(conn, "RELEASE write")),
        };
        if let Err(err) = closed {
            // The transaction is in an unknown state: give it up whole.
            let _ = conn.execute_batch("ROLLBACK");
            let answers = done.into_iter().map(|(answer, _)| answer);
            fail_all(answers.chain([answer]), &sql_error(err));
            return;
        }
        done.push((answer, result));
    }
    match run_cached(conn, "COMMIT") {
        Ok(()) => {
            for (answer, result) in done {
                let _ = answer.send(result);
            }
        }
        Err(err) => {
            let _ = conn.execute_batch("ROLLBACK");
            fail_all(done.into_iter().map(|(answer, _)| answer), &sql_error(err));
        }
    }
}

/// Run one statement from the connection's statement cache: the
/// savepoints around each write are prepared once, not parsed per write
/// (`execute_batch` parsed them anew: ~9% of the writer's time in
/// `append/hundred_sessions`).
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// Tell every caller of a batch that was not committed why.
fn fail_all(answers: impl IntoIterator<Item = oneshot::Sender<Answer>>, error: &AgentError) {
    for answer in answers {
        let _ = answer.send(Err(error.clone()));
    }
}
