//! `rein chat`: a conversation in the terminal.
//!
//! Picks a provider from the flags and the environment (an Anthropic key,
//! an OpenAI key, or a `--base-url` for a local OpenAI-compatible server),
//! streams each answer as it arrives, and prints what each call used and
//! cost. With no key it says how to set one and offers the offline
//! scripted model, which needs nothing.
//!
//! Every turn is recorded in the embedded store (`REIN_HOME/rein.db`):
//! `turn.started`, `run.started`, `model.requested`, `model.completed`,
//! `turn.finished`, `run.finished`. `--session ID` continues a session from
//! its head turn; a turn that failed is left in the log and the next one
//! branches from the last good turn, so nothing is rewritten. Tools and
//! approvals arrive with `rein-runner`.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use rein_gateway::{HttpProvider, Provider, ProviderConfig, WireApi};
use rein_sessions::{Event, Lease, NewEvent, Store, StoredEvent, history};
use rein_testing::ScriptedBrain;
use rein_wire::{
    AgentError, AssembledMessage, Assembler, Message, PriceTable, Request, StreamEvent,
    SystemBlock, error::codes,
};
use serde_json::json;

/// What the person asked for on the command line.
#[derive(Debug, Clone, Default)]
pub struct ChatOptions {
    /// `anthropic`, `openai-chat`, `openai-responses` or `scripted`.
    pub provider: Option<String>,
    /// The model name.
    pub model: Option<String>,
    /// A base URL (an OpenAI-compatible server, a proxy).
    pub base_url: Option<String>,
    /// Use the offline scripted model.
    pub scripted: bool,
    /// Ask one question, print the answer and exit.
    pub prompt: Option<String>,
    /// The system prompt.
    pub system: Option<String>,
    /// Continue this session instead of starting a new one.
    pub session: Option<String>,
}

/// The provider and model a chat runs with.
pub struct Resolved {
    /// The provider.
    pub provider: Arc<dyn Provider>,
    /// The model name.
    pub model: String,
}

fn default_model(api: WireApi) -> &'static str {
    match api {
        WireApi::AnthropicMessages => "claude-sonnet-4-5",
        WireApi::OpenAiChat | WireApi::OpenAiResponses => "gpt-4.1-mini",
    }
}

fn scripted() -> Resolved {
    Resolved {
        provider: Arc::new(ScriptedBrain::demo()),
        model: "rein-scripted".into(),
    }
}

fn http(api: WireApi, options: &ChatOptions) -> Result<Resolved, AgentError> {
    let mut config = ProviderConfig::from_env(api);
    if let Some(url) = &options.base_url {
        config = config.with_base_url(url.clone());
        // Compatible servers rarely know the newer field name.
        config.legacy_max_tokens = api == WireApi::OpenAiChat;
    } else if config.api_key.is_none() {
        return Err(missing_key());
    }
    Ok(Resolved {
        provider: Arc::new(HttpProvider::new(config)?),
        model: options
            .model
            .clone()
            .unwrap_or_else(|| default_model(api).to_owned()),
    })
}

fn missing_key() -> AgentError {
    AgentError::new(
        codes::MISSING_API_KEY,
        "no API key is set for a model provider",
    )
}

/// How to set a key, for a person.
pub const KEY_HELP: &str = "\
No API key found. To talk to a real model, set one of:
  export ANTHROPIC_API_KEY=sk-ant-...   (Anthropic; add --model to choose one)
  export OPENAI_API_KEY=sk-...          (OpenAI)
or point rein at a local OpenAI-compatible server:
  rein chat --base-url http://127.0.0.1:8080/v1 --model NAME
To try rein without any of these: rein chat --scripted";

/// Pick the provider from the options and the environment. `Ok(None)`:
/// nothing is configured (the caller offers the scripted model).
pub fn resolve(options: &ChatOptions) -> Result<Option<Resolved>, AgentError> {
    if options.scripted {
        return Ok(Some(scripted()));
    }
    if let Some(name) = &options.provider {
        if name == "scripted" {
            return Ok(Some(scripted()));
        }
        return http(name.parse()?, options).map(Some);
    }
    if options.base_url.is_some() {
        return http(WireApi::OpenAiChat, options).map(Some);
    }
    for api in [WireApi::AnthropicMessages, WireApi::OpenAiChat] {
        let set = std::env::var(api.key_variable()).is_ok_and(|k| !k.trim().is_empty());
        if set {
            return http(api, options).map(Some);
        }
    }
    Ok(None)
}

/// How long the chat's hold on its session lasts between renewals.
const LEASE_TTL: Duration = Duration::from_secs(120);

/// The session a chat writes to, and its lease.
pub struct Recorder {
    store: Arc<dyn Store>,
    session_id: String,
    holder: String,
    lease: Lease,
    /// The turn the next one follows: the last turn that succeeded.
    last_good: Option<String>,
}

impl Recorder {
    /// Start a new session, or continue `existing`, and take its lock.
    pub async fn open(
        store: Arc<dyn Store>,
        existing: Option<&str>,
        metadata: serde_json::Value,
    ) -> Result<Self, AgentError> {
        let info = match existing {
            Some(id) => store.session(id).await?,
            None => store.create_session(metadata).await?,
        };
        let holder = format!("rein chat (pid {})", std::process::id());
        let lease = store.acquire(&info.id, &holder, LEASE_TTL).await?;
        Ok(Recorder {
            store,
            session_id: info.id,
            holder,
            lease,
            last_good: info.head_turn,
        })
    }

    /// The session's id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The conversation so far: the path from the first turn to the head,
    /// each turn's prompt followed by its answers.
    pub async fn history(&self) -> Result<Vec<Message>, AgentError> {
        let Some(head) = &self.last_good else {
            return Ok(Vec::new());
        };
        let turns = self.store.turns(&self.session_id).await?;
        let events = crate::sessions_cmd::whole_log(self.store.as_ref(), &self.session_id).await?;
        Ok(messages_along(&history(&turns, head), &events))
    }

    /// Renew the lease, or take it again if it lapsed and nobody else has.
    async fn ensure_lease(&mut self) -> Result<(), AgentError> {
        match self.store.renew(&self.lease, LEASE_TTL).await {
            Ok(lease) => self.lease = lease,
            Err(err) if err.code == codes::LEASE_LOST => {
                self.lease = self
                    .store
                    .acquire(&self.session_id, &self.holder, LEASE_TTL)
                    .await?;
            }
            Err(err) => return Err(err),
        }
        Ok(())
    }

    async fn append(&mut self, events: Vec<Event>) -> Result<(), AgentError> {
        self.ensure_lease().await?;
        self.store
            .append(
                &self.lease,
                events.into_iter().map(NewEvent::root).collect(),
            )
            .await
            .map(|_| ())
    }

    /// Give the session's lock back.
    pub async fn close(self) {
        let _ = self.store.release(&self.lease).await;
    }
}

/// The messages of `path` (turns, root first), rebuilt from the log.
fn messages_along(path: &[rein_sessions::TurnInfo], events: &[StoredEvent]) -> Vec<Message> {
    let mut by_turn: std::collections::HashMap<&str, Vec<Message>> =
        std::collections::HashMap::new();
    let mut current: Option<&str> = None;
    for stored in events {
        match &stored.event {
            Event::TurnStarted { turn_id, .. } => current = Some(turn_id),
            Event::ModelCompleted { message, .. } => {
                if let Some(turn) = current {
                    by_turn.entry(turn).or_default().push(message.clone());
                }
            }
            _ => {}
        }
    }
    let mut messages = Vec::new();
    for turn in path {
        messages.push(Message::user(turn.prompt.clone()));
        messages.extend(by_turn.remove(turn.id.as_str()).unwrap_or_default());
    }
    messages
}

/// Run the chat, reading lines from `input` and writing to `out` (answers)
/// and `info` (status lines). Turns are recorded in `store`.
pub async fn run(
    options: ChatOptions,
    store: Arc<dyn Store>,
    mut input: impl BufRead,
    out: &mut impl Write,
    info: &mut impl Write,
) -> Result<(), AgentError> {
    let resolved = match resolve(&options)? {
        Some(resolved) => resolved,
        None => {
            say(info, KEY_HELP)?;
            if options.prompt.is_some() {
                return Err(missing_key());
            }
            say_inline(info, "Start the offline scripted model now? [Y/n] ")?;
            let mut answer = String::new();
            let read = input.read_line(&mut answer).map_err(io_error)?;
            let answer = answer.trim().to_ascii_lowercase();
            if read == 0 || !(answer.is_empty() || answer == "y" || answer == "yes") {
                return Err(missing_key());
            }
            scripted()
        }
    };
    let prices = PriceTable::builtin();
    let system = options.system.clone().unwrap_or_else(|| {
        "You are a helpful assistant in a terminal chat. Answer concisely.".to_owned()
    });
    let metadata = json!({"surface": "terminal", "provider": resolved.provider.name(), "model": resolved.model});
    let mut recorder = Recorder::open(store, options.session.as_deref(), metadata).await?;
    let mut history = recorder.history().await?;
    let result = async {
        if let Some(prompt) = options.prompt.clone() {
            return turn(
                &resolved,
                &system,
                &mut recorder,
                &mut history,
                prompt,
                &prices,
                out,
                info,
            )
            .await;
        }
        say(
            info,
            &format!(
                "rein chat · {} via {} · session {} · /exit or Ctrl-D to leave",
                resolved.model,
                resolved.provider.name(),
                recorder.session_id()
            ),
        )?;
        if !history.is_empty() {
            say(
                info,
                &format!("(continuing: {} earlier messages)", history.len()),
            )?;
        }
        loop {
            say_inline(info, "you> ")?;
            let mut line = String::new();
            if input.read_line(&mut line).map_err(io_error)? == 0 {
                say(info, "")?;
                return Ok(());
            }
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            if line == "/exit" || line == "/quit" {
                return Ok(());
            }
            if let Err(err) = turn(
                &resolved,
                &system,
                &mut recorder,
                &mut history,
                line.to_owned(),
                &prices,
                out,
                info,
            )
            .await
            {
                say(info, &format!("error[{}]: {}", err.code, err.message))?;
                if let Some(hint) = rein_wire::error::lookup(&err.code) {
                    say(info, &format!("  {}", hint.hint))?;
                }
                if err.code == codes::LEASE_LOST || err.code == codes::SESSION_LOCKED {
                    return Err(err);
                }
            }
        }
    }
    .await;
    say(
        info,
        &format!(
            "session {} (continue with: rein chat --session {})",
            recorder.session_id(),
            recorder.session_id()
        ),
    )?;
    recorder.close().await;
    result
}

/// One turn: record it, stream the answer, record the answer (or the
/// failure, after which the next turn branches from the last good one).
#[allow(clippy::too_many_arguments)] // One call site; a struct would only rename them.
async fn turn(
    resolved: &Resolved,
    system: &str,
    recorder: &mut Recorder,
    history: &mut Vec<Message>,
    prompt: String,
    prices: &PriceTable,
    out: &mut impl Write,
    info: &mut impl Write,
) -> Result<(), AgentError> {
    let turn_id = rein_wire::ids::new_id();
    let run_id = rein_wire::ids::new_id();
    let call_id = rein_wire::ids::new_id();
    let mut messages = history.clone();
    messages.push(Message::user(prompt.clone()));
    let mut request = Request::new(resolved.model.clone(), messages);
    request.system = vec![SystemBlock {
        text: system.to_owned(),
    }];
    request.metadata.session_id = Some(recorder.session_id().to_owned());
    let prefix = rein_wire::canonical::to_vec(&(&request.system, &request.tools))?;
    let digest = rein_wire::canonical::to_vec(&request)?;
    recorder
        .append(vec![
            Event::TurnStarted {
                turn_id: turn_id.clone(),
                parent: recorder.last_good.clone(),
                prompt: prompt.clone(),
            },
            Event::RunStarted {
                run_id: run_id.clone(),
                turn_id: turn_id.clone(),
                budgets: json!({"steps": 1}),
                profile: json!({"surface": "terminal"}),
            },
            Event::ModelRequested {
                call_id: call_id.clone(),
                prefix_fingerprint: blake3::hash(&prefix).to_hex()[..16].to_owned(),
                request_digest: blake3::hash(&digest).to_hex().to_string(),
                estimated_tokens: (digest.len() as u64).div_ceil(4),
            },
        ])
        .await?;
    let started = Instant::now();
    let outcome = stream_answer(resolved, request, out).await;
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    match outcome {
        Ok(message) => {
            let model = message
                .model
                .clone()
                .unwrap_or_else(|| resolved.model.clone());
            let cost = message
                .usage
                .as_ref()
                .and_then(|u| prices.cost_micro_usd(&model, u));
            let reply = message.text();
            recorder
                .append(vec![
                    Event::ModelCompleted {
                        call_id,
                        model: model.clone(),
                        message: message.to_message(),
                        usage: message.usage,
                        cost_micro_usd: cost,
                        stop_reason: message.stop_reason.clone(),
                        cache_verdict: None,
                        latency_ms,
                    },
                    Event::TurnFinished {
                        turn_id: turn_id.clone(),
                        outcome: "finished".into(),
                        reply: Some(reply),
                    },
                    Event::RunFinished {
                        run_id,
                        outcome: "finished".into(),
                        totals: json!({"model_calls": 1, "cost_micro_usd": cost}),
                    },
                ])
                .await?;
            recorder.last_good = Some(turn_id);
            history.push(Message::user(prompt));
            history.push(message.to_message());
            if let Some(usage) = message.usage {
                let cost = cost.map_or_else(
                    || "cost unknown".to_owned(),
                    |c| format!("${:.6}", c as f64 / 1e6),
                );
                say(
                    info,
                    &format!(
                        "  [{} in · {} out · cache {} read / {} written · {cost}]",
                        usage.input, usage.output, usage.cache_read, usage.cache_write
                    ),
                )?;
            }
            Ok(())
        }
        Err(err) => {
            let back_to = recorder.last_good.clone();
            recorder
                .append(vec![
                    Event::TurnFinished {
                        turn_id,
                        outcome: "error".into(),
                        reply: None,
                    },
                    Event::RunFinished {
                        run_id,
                        outcome: "error".into(),
                        totals: json!({"error": err.code}),
                    },
                    Event::BranchCreated { from_turn: back_to },
                ])
                .await?;
            Err(err)
        }
    }
}

async fn stream_answer(
    resolved: &Resolved,
    request: Request,
    out: &mut impl Write,
) -> Result<AssembledMessage, AgentError> {
    let mut stream = resolved.provider.stream(request);
    let mut assembler = Assembler::new();
    let mut printed = false;
    while let Some(item) = stream.next().await {
        let event = match item {
            Ok(event) => event,
            Err(err) => {
                if printed {
                    writeln!(out).map_err(io_error)?;
                }
                return Err(err);
            }
        };
        if let StreamEvent::TextDelta { text } = &event {
            out.write_all(text.as_bytes()).map_err(io_error)?;
            out.flush().map_err(io_error)?;
            printed = true;
        }
        assembler.push(&event);
    }
    writeln!(out).map_err(io_error)?;
    let message = assembler.finish();
    match message.first_error() {
        Some(err) => Err(err.clone()),
        None => Ok(message),
    }
}

fn io_error(err: std::io::Error) -> AgentError {
    AgentError::new(codes::INTERNAL, format!("terminal I/O failed: {err}"))
}

fn say(info: &mut impl Write, text: &str) -> Result<(), AgentError> {
    writeln!(info, "{text}").map_err(io_error)
}

fn say_inline(info: &mut impl Write, text: &str) -> Result<(), AgentError> {
    write!(info, "{text}").map_err(io_error)?;
    info.flush().map_err(io_error)
}
