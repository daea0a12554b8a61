//! The trial's conversation driven through `rein serve`'s HTTP API, as a
//! product's client would drive it: the trial's process serves the same
//! agent (`rein_server::Server` on loopback, the scripted model, the same
//! tools, sub-agents on) and speaks to it over real HTTP — a turn posted,
//! each approval decided through the API as it is listed, the compaction
//! asked for, and an open turn a killed process left resumed with
//! `POST …/resume`. What the server recorded is checked as the library's
//! trials are (`check`).
//!
//! Not here: the scripted conversation (`model`), the library's driving of
//! it (`child`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use rein_runner::{Agent, Delegation};
use rein_sessions::{Event, StoredEvent};
use serde_json::{Value, json};

use crate::child::{
    COMPACT_AFTER, compacted, finished_turns, main_session, parts, person, profile,
};
use crate::model::{Script, TURNS};

/// The bearer token the trial's client sends.
const TOKEN: &str = "rein-chaos-served-token-0123456789abcdef";

/// How often the client looks at the conversation while a turn runs.
const POLL: Duration = Duration::from_millis(10);

/// Serve the trial in `dir` and drive it to its end through the API.
pub async fn run(dir: &Path, helper: &Path) -> anyhow::Result<()> {
    let (store, backend) = parts(dir, helper).await?;
    let mut agent = Agent::new(Arc::new(Script), backend, profile());
    agent.delegation = Some(Delegation::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = rein_server::Server::of(store.clone(), agent, addr).with_bearer(TOKEN);
    tokio::spawn(server.serve(listener));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let api = Api {
        http: reqwest::Client::new(),
        base: format!("http://{addr}/api/conversations"),
    };
    // A process killed while the server made the conversation may have
    // left it with no events: it is carried on all the same.
    let id = match main_session(store.as_ref()).await? {
        Some(id) => id,
        None => api.create().await?,
    };
    loop {
        api.decide_pending(&id).await?;
        if api.state(&id).await? == "running" {
            tokio::time::sleep(POLL).await;
            continue;
        }
        let log = rein_sessions::read_all(store.as_ref(), &id).await?;
        let finished = finished_turns(&log);
        if open_turn(&log) {
            api.expect(&format!("/{id}/resume"), json!({}), 202).await?;
        } else if finished == COMPACT_AFTER && !compacted(&log) {
            api.expect(&format!("/{id}/compact"), json!({}), 200)
                .await?;
        } else if let Some(turn) = TURNS.get(finished) {
            api.expect(&format!("/{id}/turns"), json!({"text": turn.says}), 202)
                .await?;
        } else {
            break;
        }
    }
    Ok(())
}

/// Whether the log's last turn has started and not finished.
fn open_turn(log: &[StoredEvent]) -> bool {
    let started = log
        .iter()
        .filter(|e| matches!(e.event, Event::TurnStarted { .. }))
        .count();
    started > finished_turns(log)
}

/// The client: the conversations' routes, with the token.
struct Api {
    http: reqwest::Client,
    base: String,
}

impl Api {
    async fn send(&self, request: reqwest::RequestBuilder) -> anyhow::Result<(u16, Value)> {
        let response = request.bearer_auth(TOKEN).send().await?;
        let status = response.status().as_u16();
        Ok((status, response.json().await.unwrap_or(Value::Null)))
    }

    /// POST `body` to `path`; anything but `want` is a failure.
    async fn expect(&self, path: &str, body: Value, want: u16) -> anyhow::Result<Value> {
        let url = format!("{}{path}", self.base);
        let (status, answer) = self.send(self.http.post(&url).json(&body)).await?;
        if status != want {
            bail!("POST {path}: {status} {answer}");
        }
        Ok(answer)
    }

    async fn create(&self) -> anyhow::Result<String> {
        let made = self.expect("", json!({}), 201).await?;
        made["id"]
            .as_str()
            .map(str::to_owned)
            .context("a conversation without an id")
    }

    async fn state(&self, id: &str) -> anyhow::Result<String> {
        let url = format!("{}/{id}", self.base);
        let (status, body) = self.send(self.http.get(&url)).await?;
        if status != 200 {
            bail!("GET the conversation: {status} {body}");
        }
        Ok(body["state"].as_str().unwrap_or_default().to_owned())
    }

    /// The person decides each listed approval (a write or command yes, a
    /// delete no). One decided meanwhile by the turn's own end is `409`.
    async fn decide_pending(&self, id: &str) -> anyhow::Result<()> {
        let url = format!("{}/{id}/approvals", self.base);
        let (status, body) = self.send(self.http.get(&url)).await?;
        if status != 200 {
            bail!("GET the approvals: {status} {body}");
        }
        for asked in body["approvals"].as_array().into_iter().flatten() {
            let (Some(approval), Some(tool)) =
                (asked["approval_id"].as_str(), asked["tool"].as_str())
            else {
                bail!("an approval without its id or tool: {asked}");
            };
            let decision = match person(tool) {
                rein_approvals::Answer::Deny => "no",
                _ => "yes",
            };
            let path = format!("/{id}/approvals/{approval}");
            let url = format!("{}{path}", self.base);
            let request = self.http.post(&url).json(&json!({"decision": decision}));
            let (status, answer) = self.send(request).await?;
            if status != 200 && status != 409 {
                bail!("POST {path}: {status} {answer}");
            }
        }
        Ok(())
    }
}
