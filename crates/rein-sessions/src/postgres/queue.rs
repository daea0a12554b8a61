//! [`WorkQueue`]: work that processes on any machine share through the
//! PostgreSQL store — graphs waiting for a process to drive them, and each
//! task attempt waiting for one to run it (`rein worker`).
//!
//! Claims use `FOR UPDATE SKIP LOCKED`: many workers ask at once, each
//! gets a different row, none waits on another's. A claim is a lease
//! (holder, secret token, expiry) its holder renews while it works; a
//! lease that lapsed — its holder died or lost the database — is claimed
//! by the next to ask. A task's result is taken only from the holder of
//! its current lease and only once, so a task is completed exactly once
//! even when a worker thought dead comes back.
//!
//! The payloads and results are JSON text the caller defines: this
//! module knows no graph.
//!
//! Not here: what a graph or a task is (`rein-orchestrator`), running one
//! (`rein worker`).

use std::time::Duration;

use rein_wire::AgentError;
use sqlx::Row;
use sqlx::postgres::PgPool;

use super::db_error;
use crate::validate::{now_ms, ttl_ms};

/// The queue of a [`super::PgStore`]'s database.
#[derive(Debug, Clone)]
pub struct WorkQueue {
    pool: PgPool,
}

/// A claim on a row: who holds it and the token proving it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The graph's session.
    pub graph: String,
    /// The task (empty for a graph's claim).
    pub task: String,
    /// The attempt (0 for a graph's claim).
    pub attempt: i32,
    /// The secret token of this claim.
    pub token: String,
}

/// A task attempt claimed to run.
#[derive(Debug, Clone)]
pub struct ClaimedTask {
    /// The claim.
    pub claim: Claim,
    /// What the submitter put with it.
    pub payload: String,
    /// How many times it was claimed (more than 1: a worker lost it).
    pub claims: i32,
}

/// Where a task attempt is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskResult {
    /// Waiting for a worker, or running.
    Open,
    /// Finished: `ok` with its result text.
    Done {
        /// Whether it succeeded.
        ok: bool,
        /// The result its worker gave.
        result: String,
    },
}

/// Task attempts one claim takes at most (a worker with more free places
/// claims again).
pub const MAX_CLAIMED_AT_ONCE: usize = 256;

fn new_token() -> String {
    rein_wire::ids::new_id()
}

impl WorkQueue {
    pub(super) fn new(pool: PgPool) -> Self {
        WorkQueue { pool }
    }

    /// Offer the graph recorded in session `graph` to be driven.
    pub async fn submit_graph(&self, graph: &str) -> Result<(), AgentError> {
        sqlx::query(
            "INSERT INTO graph_runs (graph_session, submitted_ms) VALUES ($1, $2) \
             ON CONFLICT (graph_session) DO UPDATE SET finished = FALSE",
        )
        .bind(graph)
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    /// Claim the oldest graph no live process drives, for `ttl`.
    pub async fn claim_graph(
        &self,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<Claim>, AgentError> {
        let now = now_ms();
        let token = new_token();
        let row = sqlx::query(
            "UPDATE graph_runs SET holder = $1, token = $2, expires_ms = $3 WHERE graph_session = (\
               SELECT graph_session FROM graph_runs WHERE NOT finished AND expires_ms < $4 \
               ORDER BY submitted_ms FOR UPDATE SKIP LOCKED LIMIT 1) \
             RETURNING graph_session",
        )
        .bind(holder)
        .bind(&token)
        .bind(now.saturating_add(ttl_ms(ttl)))
        .bind(now)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(row
            .map(|row| row.try_get::<String, _>("graph_session"))
            .transpose()
            .map_err(db_error)?
            .map(|graph| Claim {
                graph,
                task: String::new(),
                attempt: 0,
                token,
            }))
    }

    /// Extend a graph's claim; `false` when it was lost.
    pub async fn renew_graph(&self, claim: &Claim, ttl: Duration) -> Result<bool, AgentError> {
        let now = now_ms();
        let changed = sqlx::query(
            "UPDATE graph_runs SET expires_ms = $1 WHERE graph_session = $2 AND token = $3 \
             AND expires_ms > $4 AND NOT finished",
        )
        .bind(now.saturating_add(ttl_ms(ttl)))
        .bind(&claim.graph)
        .bind(&claim.token)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(db_error)?
        .rows_affected();
        Ok(changed == 1)
    }

    /// The graph is finished: nobody claims it again.
    pub async fn finish_graph(&self, claim: &Claim) -> Result<(), AgentError> {
        sqlx::query(
            "UPDATE graph_runs SET finished = TRUE WHERE graph_session = $1 AND token = $2",
        )
        .bind(&claim.graph)
        .bind(&claim.token)
        .execute(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    /// Offer a task attempt to the workers (nothing when it is offered
    /// already: a driver that took a graph over asks again).
    pub async fn enqueue(
        &self,
        graph: &str,
        task: &str,
        attempt: i32,
        payload: &str,
    ) -> Result<(), AgentError> {
        sqlx::query(
            "INSERT INTO task_queue (graph_session, task, attempt, enqueued_ms, payload) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
        )
        .bind(graph)
        .bind(task)
        .bind(attempt)
        .bind(now_ms())
        .bind(payload)
        .execute(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    /// Claim the oldest task attempt waiting, or one whose worker's lease
    /// lapsed, for `ttl`.
    pub async fn claim_task(
        &self,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<ClaimedTask>, AgentError> {
        Ok(self.claim_tasks(holder, ttl, 1).await?.pop())
    }

    /// Claim up to `up_to` of the oldest task attempts waiting (or whose
    /// worker's lease lapsed) for `ttl`, in one statement and one commit:
    /// a worker with several free places fills them at once. Each claim
    /// has a token of its own. Fewer (or none) when fewer are free; at
    /// most [`MAX_CLAIMED_AT_ONCE`] whatever `up_to` says.
    pub async fn claim_tasks(
        &self,
        holder: &str,
        ttl: Duration,
        up_to: usize,
    ) -> Result<Vec<ClaimedTask>, AgentError> {
        let up_to = up_to.min(MAX_CLAIMED_AT_ONCE);
        if up_to == 0 {
            return Ok(Vec::new());
        }
        let now = now_ms();
        let tokens: Vec<String> = (0..up_to).map(|_| new_token()).collect();
        // Row locks cannot be taken under a window function: the rows are
        // locked first, then numbered to give each its token.
        let rows = sqlx::query(
            "WITH locked AS (SELECT graph_session, task, attempt, enqueued_ms FROM task_queue \
                 WHERE state = 'ready' OR (state = 'running' AND expires_ms < $4) \
                 ORDER BY enqueued_ms FOR UPDATE SKIP LOCKED LIMIT $5), \
               next AS (SELECT graph_session, task, attempt, \
                 row_number() OVER (ORDER BY enqueued_ms, graph_session, task, attempt) AS n \
                 FROM locked) \
             UPDATE task_queue q SET state = 'running', holder = $1, token = ($2::text[])[next.n], \
               expires_ms = $3, claims = q.claims + 1 \
             FROM next \
             WHERE q.graph_session = next.graph_session AND q.task = next.task \
               AND q.attempt = next.attempt \
             RETURNING q.graph_session, q.task, q.attempt, q.payload, q.claims, q.token",
        )
        .bind(holder)
        .bind(&tokens)
        .bind(now.saturating_add(ttl_ms(ttl)))
        .bind(now)
        .bind(i64::try_from(up_to).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.iter()
            .map(|row| {
                Ok(ClaimedTask {
                    claim: Claim {
                        graph: row.try_get("graph_session").map_err(db_error)?,
                        task: row.try_get("task").map_err(db_error)?,
                        attempt: row.try_get("attempt").map_err(db_error)?,
                        token: row.try_get("token").map_err(db_error)?,
                    },
                    payload: row.try_get("payload").map_err(db_error)?,
                    claims: row.try_get("claims").map_err(db_error)?,
                })
            })
            .collect()
    }

    /// Extend a task's claim; `false` when it was lost (lapsed and taken).
    pub async fn renew_task(&self, claim: &Claim, ttl: Duration) -> Result<bool, AgentError> {
        let now = now_ms();
        let changed = sqlx::query(
            "UPDATE task_queue SET expires_ms = $1 WHERE graph_session = $2 AND task = $3 \
             AND attempt = $4 AND token = $5 AND state = 'running'",
        )
        .bind(now.saturating_add(ttl_ms(ttl)))
        .bind(&claim.graph)
        .bind(&claim.task)
        .bind(claim.attempt)
        .bind(&claim.token)
        .execute(&self.pool)
        .await
        .map_err(db_error)?
        .rows_affected();
        Ok(changed == 1)
    }

    /// Give a task attempt's result; `false` (and nothing kept) when this
    /// claim is no longer the task's — exactly one result is taken.
    pub async fn complete(
        &self,
        claim: &Claim,
        ok: bool,
        result: &str,
    ) -> Result<bool, AgentError> {
        let changed = sqlx::query(
            "UPDATE task_queue SET state = $1, result = $2 WHERE graph_session = $3 \
             AND task = $4 AND attempt = $5 AND token = $6 AND state = 'running'",
        )
        .bind(if ok { "done" } else { "failed" })
        .bind(result)
        .bind(&claim.graph)
        .bind(&claim.task)
        .bind(claim.attempt)
        .bind(&claim.token)
        .execute(&self.pool)
        .await
        .map_err(db_error)?
        .rows_affected();
        Ok(changed == 1)
    }

    /// Where a task attempt is.
    pub async fn result(
        &self,
        graph: &str,
        task: &str,
        attempt: i32,
    ) -> Result<TaskResult, AgentError> {
        let row = sqlx::query(
            "SELECT state, result FROM task_queue WHERE graph_session = $1 AND task = $2 \
             AND attempt = $3",
        )
        .bind(graph)
        .bind(task)
        .bind(attempt)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?;
        let Some(row) = row else {
            return Ok(TaskResult::Open);
        };
        let state: String = row.try_get("state").map_err(db_error)?;
        let result: Option<String> = row.try_get("result").map_err(db_error)?;
        Ok(match (state.as_str(), result) {
            ("done", Some(result)) => TaskResult::Done { ok: true, result },
            ("failed", Some(result)) => TaskResult::Done { ok: false, result },
            _ => TaskResult::Open,
        })
    }

    /// How many times each attempt of `graph`'s tasks was claimed and
    /// whether it finished (`(task, attempt, claims, state)`), for a view
    /// or a test.
    pub async fn attempts(
        &self,
        graph: &str,
    ) -> Result<Vec<(String, i32, i32, String)>, AgentError> {
        let rows = sqlx::query(
            "SELECT task, attempt, claims, state FROM task_queue WHERE graph_session = $1 \
             ORDER BY task, attempt",
        )
        .bind(graph)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.iter()
            .map(|row| {
                Ok((
                    row.try_get("task").map_err(db_error)?,
                    row.try_get("attempt").map_err(db_error)?,
                    row.try_get("claims").map_err(db_error)?,
                    row.try_get("state").map_err(db_error)?,
                ))
            })
            .collect()
    }
}
