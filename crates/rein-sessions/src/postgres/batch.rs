//! Group commit for the PostgreSQL store: the appends of every conversation
//! in this process that are waiting at the same moment are committed in one
//! transaction, with one statement per kind of write (the heads locked, the
//! events inserted, the heads moved, the commit announced) instead of one
//! per append. One transaction at a time: while one commits, the next
//! batch gathers, so a process's commits cost one round of statements and
//! one flush however many conversations it runs — and several processes
//! add up instead of queueing for the same CPU.
//!
//! Each append is checked on its own (its session, its holder's lock, its
//! turns) and refused alone; a statement failing in a batch of several
//! runs each again in a transaction of its own, so one append's fault
//! never fails another's (a database that cannot be reached fails them
//! all at once). A session has at most one append in a batch; a second
//! waits for the next, so a session's appends commit in the order given.
//!
//! Not here: the other writes (`write`), the feed of committed events
//! (`live`).

use std::collections::{HashMap, HashSet, VecDeque};

use rein_wire::{AgentError, error::codes};
use sqlx::postgres::PgPool;
use sqlx::{Postgres, Row, Transaction};
use tokio::sync::{mpsc, oneshot};

use super::{db_error, not_found, to_i64, to_u64};
use crate::event::{NewEvent, StoredEvent};
use crate::projection::{Numbered, TurnChange, number, turn_refs};
use crate::store::{ControlRecord, SessionLock};
use crate::validate::{check_append, lock_lost, now_ms};

/// The channel each commit's events are announced on (`SESSION FIRST
/// LAST`): this, then the database's `channel_key`, which only a role that
/// may read rein's tables knows.
pub(super) const EVENTS_CHANNEL: &str = "rein_events_";
/// Appends committed in one transaction, at most.
const MAX_BATCH: usize = 64;
/// Appends waiting for the writer, at most (a caller past it waits).
const QUEUE: usize = 1024;

/// One append: events for a session, by the holder of `token` (none: the
/// session is being created in the same transaction), with `take_inbox` the
/// inbox items up to that number marked taken.
#[derive(Debug, Clone)]
pub(super) struct Append {
    pub(super) session: String,
    pub(super) token: Option<String>,
    pub(super) events: Vec<NewEvent>,
    pub(super) take_inbox: Option<u64>,
}

impl Append {
    /// The append `lock`'s holder asks for.
    pub(super) fn by(lock: &SessionLock, events: Vec<NewEvent>, take_inbox: Option<u64>) -> Self {
        Append {
            session: lock.session_id.clone(),
            token: Some(lock.token.clone()),
            events,
            take_inbox,
        }
    }
}

type Answer = Result<Vec<StoredEvent>, AgentError>;

struct Pending {
    append: Append,
    reply: oneshot::Sender<Answer>,
}

/// The process's writer of appends: a task committing what is queued.
#[derive(Debug)]
pub(super) struct Writer {
    queue: mpsc::Sender<Pending>,
}

fn writer_gone() -> AgentError {
    AgentError::new(
        codes::STORE_UNAVAILABLE,
        "the store's writer stopped (its runtime shut down)",
    )
}

impl Writer {
    /// Start the writer on the current runtime; it ends when the store is
    /// dropped.
    pub(super) fn start(pool: PgPool) -> Self {
        let (queue, waiting) = mpsc::channel(QUEUE);
        tokio::spawn(run(pool, waiting));
        Writer { queue }
    }

    /// Commit `append` with whatever else is waiting.
    pub(super) async fn append(&self, append: Append) -> Answer {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Pending { append, reply })
            .await
            .map_err(|_| writer_gone())?;
        answer.await.map_err(|_| writer_gone())?
    }
}

async fn run(pool: PgPool, mut waiting: mpsc::Receiver<Pending>) {
    let mut carried: VecDeque<Pending> = VecDeque::new();
    loop {
        let first = match carried.pop_front() {
            Some(first) => first,
            None => match waiting.recv().await {
                Some(first) => first,
                None => return,
            },
        };
        let mut sessions = HashSet::from([first.append.session.clone()]);
        let mut batch = vec![first];
        let mut later = VecDeque::new();
        let mut offer = |pending: Pending, batch: &mut Vec<Pending>| {
            if batch.len() < MAX_BATCH && sessions.insert(pending.append.session.clone()) {
                batch.push(pending);
            } else {
                later.push_back(pending);
            }
        };
        while let Some(pending) = carried.pop_front() {
            offer(pending, &mut batch);
        }
        while batch.len() < MAX_BATCH {
            match waiting.try_recv() {
                Ok(pending) => offer(pending, &mut batch),
                Err(_) => break,
            }
        }
        carried = later;
        commit_batch(&pool, batch).await;
    }
}

/// Commit `batch` together; after a statement fails, each alone (until
/// the database cannot be reached: the rest are told so, not made to wait
/// for it one by one).
async fn commit_batch(pool: &PgPool, batch: Vec<Pending>) {
    let (appends, replies): (Vec<Append>, Vec<_>) =
        batch.into_iter().map(|p| (p.append, p.reply)).unzip();
    let spare = (appends.len() > 1).then(|| appends.clone());
    let failed = match in_own_transaction(pool, appends).await {
        Ok(answers) => {
            for (reply, answer) in replies.into_iter().zip(answers) {
                let _ = reply.send(answer);
            }
            return;
        }
        Err(failed) => failed,
    };
    let (Some(appends), Failed::Statement(_)) = (spare, &failed) else {
        for reply in replies {
            let _ = reply.send(Err(failed.error().clone()));
        }
        return;
    };
    let mut unreachable: Option<AgentError> = None;
    for (reply, append) in replies.into_iter().zip(appends) {
        let answer = match &unreachable {
            Some(err) => Err(err.clone()),
            None => match in_own_transaction(pool, vec![append]).await {
                Ok(mut answers) => answers.pop().unwrap_or_else(|| Err(failed.error().clone())),
                Err(Failed::Connect(err)) => {
                    unreachable = Some(err.clone());
                    Err(err)
                }
                Err(Failed::Statement(err)) => Err(err),
            },
        };
        let _ = reply.send(answer);
    }
}

/// Why a transaction of appends did not commit.
enum Failed {
    /// No connection could be had: the database is not reachable now.
    Connect(AgentError),
    /// A statement or the commit failed.
    Statement(AgentError),
}

impl Failed {
    fn error(&self) -> &AgentError {
        match self {
            Failed::Connect(err) | Failed::Statement(err) => err,
        }
    }
}

async fn in_own_transaction(pool: &PgPool, appends: Vec<Append>) -> Result<Vec<Answer>, Failed> {
    let mut tx = pool
        .begin()
        .await
        .map_err(|err| Failed::Connect(db_error(err)))?;
    let answers = append_all(&mut tx, appends)
        .await
        .map_err(Failed::Statement)?;
    tx.commit()
        .await
        .map_err(|err| Failed::Statement(db_error(err)))?;
    Ok(answers)
}

/// A session's head as its locked row holds it.
struct Head {
    seq: u64,
    turn: Option<String>,
    control: ControlRecord,
}

/// One append checked and numbered, to be written.
struct Ready {
    session: String,
    numbered: Numbered,
    last: u64,
    first: u64,
    take_inbox: Option<u64>,
}

/// Check, number and write `appends` (each session at most once) in `tx`:
/// one answer per append, in order. `Err` is the database failing, after
/// which the transaction is not to be committed.
pub(super) async fn append_all(
    tx: &mut Transaction<'static, Postgres>,
    appends: Vec<Append>,
) -> Result<Vec<Answer>, AgentError> {
    let mut heads = lock_heads(tx, &appends).await?;
    let held = held_locks(tx, &appends).await?;
    let owners = turn_owners(tx, &appends).await?;
    let at_ms = now_ms();
    let mut answers: Vec<Option<Answer>> = Vec::with_capacity(appends.len());
    let mut written = Vec::new();
    for append in appends {
        let checked = heads
            .remove(&append.session)
            .ok_or_else(|| not_found(&append.session))
            .and_then(|head| {
                if append.token.is_some() && !held.contains(&append.session) {
                    return Err(lock_lost(&append.session));
                }
                check_append(&append.session, &append.events, &|turn| {
                    owners.get(turn).cloned()
                })?;
                Ok(head)
            });
        match checked {
            Err(err) => answers.push(Some(Err(err))),
            Ok(head) => {
                let numbered = number(
                    &append.session,
                    head.seq,
                    head.turn,
                    head.control,
                    append.events,
                    at_ms,
                );
                answers.push(None);
                written.push(Ready {
                    last: head.seq + numbered.stored.len() as u64,
                    first: head.seq + 1,
                    session: append.session,
                    numbered,
                    take_inbox: append.take_inbox,
                });
            }
        }
    }
    write_all(tx, &written).await?;
    let mut stored = written.into_iter().map(|w| w.numbered.stored);
    Ok(answers
        .into_iter()
        .map(|answer| answer.unwrap_or_else(|| Ok(stored.next().unwrap_or_default())))
        .collect())
}

/// Lock the appends' session rows, in the order of their ids (so two
/// batches never deadlock), and read their heads.
async fn lock_heads(
    tx: &mut Transaction<'static, Postgres>,
    appends: &[Append],
) -> Result<HashMap<String, Head>, AgentError> {
    let ids: Vec<&str> = appends.iter().map(|a| a.session.as_str()).collect();
    let rows = sqlx::query(
        "SELECT id, head_seq, head_turn, control FROM sessions WHERE id = ANY($1) ORDER BY id FOR UPDATE",
    )
    .bind(&ids)
    .fetch_all(&mut **tx)
    .await
    .map_err(db_error)?;
    let mut heads = HashMap::with_capacity(rows.len());
    for row in rows {
        let control: String = row.try_get("control").map_err(db_error)?;
        heads.insert(
            row.try_get("id").map_err(db_error)?,
            Head {
                seq: to_u64(row.try_get("head_seq").map_err(db_error)?),
                turn: row.try_get("head_turn").map_err(db_error)?,
                control: serde_json::from_str(&control).unwrap_or_default(),
            },
        );
    }
    Ok(heads)
}

/// The sessions whose appender still holds the lock it names.
async fn held_locks(
    tx: &mut Transaction<'static, Postgres>,
    appends: &[Append],
) -> Result<HashSet<String>, AgentError> {
    let (sessions, tokens): (Vec<&str>, Vec<&str>) = appends
        .iter()
        .filter_map(|a| Some((a.session.as_str(), a.token.as_deref()?)))
        .unzip();
    if sessions.is_empty() {
        return Ok(HashSet::new());
    }
    let rows = sqlx::query(
        "SELECT l.session_id FROM session_locks l \
         JOIN unnest($1::text[], $2::text[]) AS u(session_id, token) \
           ON l.session_id = u.session_id AND l.token = u.token \
         WHERE l.expires_ms > $3",
    )
    .bind(&sessions)
    .bind(&tokens)
    .bind(now_ms())
    .fetch_all(&mut **tx)
    .await
    .map_err(db_error)?;
    rows.iter()
        .map(|row| row.try_get("session_id").map_err(db_error))
        .collect()
}

/// The session each turn the appends name already belongs to.
async fn turn_owners(
    tx: &mut Transaction<'static, Postgres>,
    appends: &[Append],
) -> Result<HashMap<String, String>, AgentError> {
    let turns: Vec<&str> = appends.iter().flat_map(|a| turn_refs(&a.events)).collect();
    if turns.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = sqlx::query("SELECT id, session_id FROM turns WHERE id = ANY($1)")
        .bind(&turns)
        .fetch_all(&mut **tx)
        .await
        .map_err(db_error)?;
    rows.iter()
        .map(|row| {
            Ok((
                row.try_get("id").map_err(db_error)?,
                row.try_get("session_id").map_err(db_error)?,
            ))
        })
        .collect()
}

/// Insert the events, apply the turn changes, move the heads, take the
/// inbox items and announce the commit.
async fn write_all(
    tx: &mut Transaction<'static, Postgres>,
    written: &[Ready],
) -> Result<(), AgentError> {
    if written.is_empty() {
        return Ok(());
    }
    let events: Vec<&StoredEvent> = written.iter().flat_map(|w| &w.numbered.stored).collect();
    for page in events.chunks(1_000) {
        insert_events(tx, page).await?;
    }
    for w in written {
        for change in &w.numbered.changes {
            turn_change(tx, &w.session, change).await?;
        }
    }
    move_heads(tx, written).await?;
    take_inbox(tx, written).await?;
    let announced: Vec<String> = written
        .iter()
        .filter(|w| !w.numbered.stored.is_empty())
        .map(|w| format!("{} {} {}", w.session, w.first, w.last))
        .collect();
    if !announced.is_empty() {
        // Delivered to every listening process when (and only if) the
        // transaction commits.
        sqlx::query(
            "SELECT pg_notify($1 || (SELECT key FROM channel_key), m) FROM unnest($2::text[]) AS m",
        )
        .bind(EVENTS_CHANNEL)
        .bind(&announced)
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
    }
    Ok(())
}

async fn turn_change(
    tx: &mut Transaction<'static, Postgres>,
    session: &str,
    change: &TurnChange,
) -> Result<(), AgentError> {
    match change {
        TurnChange::Started(turn) => sqlx::query(
            "INSERT INTO turns (id, session_id, parent, prompt, started_seq) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&turn.id)
        .bind(session)
        .bind(&turn.parent)
        .bind(&turn.prompt)
        .bind(to_i64(turn.started_seq)),
        TurnChange::Finished { id, seq, outcome } => sqlx::query(
            "UPDATE turns SET finished_seq = $1, outcome = $2 WHERE id = $3 AND session_id = $4",
        )
        .bind(to_i64(*seq))
        .bind(outcome.as_str())
        .bind(id)
        .bind(session),
    }
    .execute(&mut **tx)
    .await
    .map_err(db_error)?;
    Ok(())
}

/// Every written session's head, head turn and control record, in one
/// statement.
async fn move_heads(
    tx: &mut Transaction<'static, Postgres>,
    written: &[Ready],
) -> Result<(), AgentError> {
    let mut ids = Vec::with_capacity(written.len());
    let mut seqs = Vec::with_capacity(written.len());
    let mut turns = Vec::with_capacity(written.len());
    let mut controls = Vec::with_capacity(written.len());
    for w in written {
        ids.push(w.session.as_str());
        seqs.push(to_i64(w.last));
        turns.push(w.numbered.head_turn.as_deref());
        controls.push(serde_json::to_string(&w.numbered.control).map_err(|err| {
            AgentError::new(
                codes::INTERNAL,
                format!("cannot write the control record: {err}"),
            )
        })?);
    }
    sqlx::query(
        "UPDATE sessions AS s SET head_seq = u.seq, head_turn = u.turn, control = u.control \
         FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[]) AS u(id, seq, turn, control) \
         WHERE s.id = u.id",
    )
    .bind(&ids)
    .bind(&seqs)
    .bind(&turns)
    .bind(&controls)
    .execute(&mut **tx)
    .await
    .map_err(db_error)?;
    Ok(())
}

/// The inbox items each append took, marked taken.
async fn take_inbox(
    tx: &mut Transaction<'static, Postgres>,
    written: &[Ready],
) -> Result<(), AgentError> {
    let (sessions, upto): (Vec<&str>, Vec<i64>) = written
        .iter()
        .filter_map(|w| Some((w.session.as_str(), to_i64(w.take_inbox?))))
        .unzip();
    if sessions.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "UPDATE inbox SET taken = TRUE FROM unnest($1::text[], $2::bigint[]) AS u(session_id, upto) \
         WHERE inbox.session_id = u.session_id AND inbox.id <= u.upto AND NOT inbox.taken",
    )
    .bind(&sessions)
    .bind(&upto)
    .execute(&mut **tx)
    .await
    .map_err(db_error)?;
    Ok(())
}

/// Insert the numbered events in one statement.
pub(super) async fn insert_events(
    tx: &mut Transaction<'static, Postgres>,
    stored: &[&StoredEvent],
) -> Result<(), AgentError> {
    if stored.is_empty() {
        return Ok(());
    }
    let mut insert = sqlx::QueryBuilder::<Postgres>::new(
        "INSERT INTO events (session_id, seq, at_ms, agent_path, kind, version, data) ",
    );
    let mut rows = Vec::with_capacity(stored.len());
    for event in stored {
        let data = serde_json::to_string(&event.event.data()).map_err(|err| {
            AgentError::new(codes::INTERNAL, format!("cannot write an event: {err}"))
        })?;
        rows.push((event, data));
    }
    insert.push_values(rows, |mut row, (event, data)| {
        row.push_bind(event.session_id.clone())
            .push_bind(to_i64(event.seq))
            .push_bind(event.at_ms)
            .push_bind(event.agent_path.clone())
            .push_bind(event.event.kind().to_owned())
            .push_bind(i64::from(event.event.version()))
            .push_bind(data);
    });
    insert.build().execute(&mut **tx).await.map_err(db_error)?;
    Ok(())
}
