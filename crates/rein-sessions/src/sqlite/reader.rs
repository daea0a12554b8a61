//! The store's reads, on its own connections, run on the caller's thread:
//! no hop to a connection's worker thread and back, which at ten thousand
//! conversations was a third of the CPU of a step.
//!
//! Running a read where it is asked is sound here because every read is
//! small and never waits on a writer: in WAL mode a reader reads its
//! snapshot while the writer commits, and each read is bounded (a page of
//! events, a session's row, a list with a limit). A connection is taken
//! for one read and given back; at most [`IDLE`] are kept between reads,
//! and one more is opened only while every kept one is in use. Each is
//! `query_only`: nothing read here can write.
//!
//! Not here: writes (the writer thread's), inbox posts and artifacts put
//! (the sqlx pool's).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rein_wire::AgentError;
use rusqlite::{Connection, OpenFlags, Params};

use super::failed::sql_error;
use crate::rows::Columns;

/// Connections kept between reads, at most.
const IDLE: usize = 8;

/// Statements each connection keeps prepared.
const STATEMENTS: usize = 32;

/// Read-only connections to one store's file.
pub(super) struct Reader {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl Reader {
    /// A reader of the store at `path`; its first connection is opened now,
    /// so a file that cannot be read is said at open.
    pub(super) fn open(path: &Path) -> Result<Reader, AgentError> {
        let first = connect(path)?;
        Ok(Reader {
            path: path.to_path_buf(),
            idle: Mutex::new(vec![first]),
        })
    }

    /// Every row `sql` gives for `params`, each made by `decode`.
    pub(super) fn all<T>(
        &self,
        sql: &str,
        params: impl Params,
        decode: impl Fn(&dyn Columns) -> Result<T, AgentError>,
    ) -> Result<Vec<T>, AgentError> {
        self.with(|conn| {
            let mut statement = conn.prepare_cached(sql).map_err(sql_error)?;
            let mut rows = statement.query(params).map_err(sql_error)?;
            let mut all = Vec::new();
            while let Some(row) = rows.next().map_err(sql_error)? {
                all.push(decode(row)?);
            }
            Ok(all)
        })
    }

    /// The first row `sql` gives for `params`, made by `decode`, if any.
    pub(super) fn one<T>(
        &self,
        sql: &str,
        params: impl Params,
        decode: impl Fn(&dyn Columns) -> Result<T, AgentError>,
    ) -> Result<Option<T>, AgentError> {
        self.with(|conn| {
            let mut statement = conn.prepare_cached(sql).map_err(sql_error)?;
            let mut rows = statement.query(params).map_err(sql_error)?;
            rows.next()
                .map_err(sql_error)?
                .map(|row| decode(row))
                .transpose()
        })
    }

    /// Run `read` on one of the reader's connections.
    fn with<T>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T, AgentError>,
    ) -> Result<T, AgentError> {
        let kept = self.lock().pop();
        let conn = match kept {
            Some(conn) => conn,
            None => connect(&self.path)?,
        };
        let answer = read(&conn);
        let mut idle = self.lock();
        if idle.len() < IDLE {
            idle.push(conn);
        }
        answer
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn connect(path: &Path) -> Result<Connection, AgentError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(sql_error)?;
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(sql_error)?;
    conn.pragma_update(None, "query_only", "ON")
        .map_err(sql_error)?;
    conn.set_prepared_statement_cache_capacity(STATEMENTS);
    Ok(conn)
}

/// The `bytes` column of a row, a blob.
pub(super) fn bytes(row: &dyn Columns) -> Result<Vec<u8>, AgentError> {
    row.blob("bytes")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rein_wire::error::codes;

    use super::{IDLE, Reader};

    fn file_with_a_table(dir: &tempfile::TempDir) -> std::path::PathBuf {
        let path = dir.path().join("t.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2);")
            .unwrap();
        path
    }

    #[test]
    fn a_read_cannot_write() {
        let dir = tempfile::tempdir().unwrap();
        let reader = Reader::open(&file_with_a_table(&dir)).unwrap();
        let err = reader
            .all("INSERT INTO t VALUES (3) RETURNING n", [], |row| {
                row.int("n")
            })
            .unwrap_err();
        assert_eq!(err.code, codes::STORE_UNAVAILABLE);
        let all = reader
            .all("SELECT n FROM t ORDER BY n", [], |row| row.int("n"))
            .unwrap();
        assert_eq!(all, [1, 2], "the refused write changed nothing");
    }

    #[test]
    fn reads_at_once_on_many_threads_keep_at_most_idle_connections() {
        let dir = tempfile::tempdir().unwrap();
        let reader = Arc::new(Reader::open(&file_with_a_table(&dir)).unwrap());
        let threads: Vec<_> = (0..IDLE * 3)
            .map(|_| {
                let reader = Arc::clone(&reader);
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let sum = reader
                            .one("SELECT sum(n) AS n FROM t", [], |row| row.int("n"))
                            .unwrap();
                        assert_eq!(sum, Some(3));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let kept = reader.lock().len();
        assert!((1..=IDLE).contains(&kept), "{kept} connections kept");
    }
}
