//! Graph tasks as conversations: [`ConversationTasks`] is the
//! orchestrator's [`TaskRunner`] that runs each attempt of a task as one
//! turn of a new conversation in a session of its own (so `rein sessions
//! show` works on it), with the resolved brief. The graph runs under one
//! [`Agent`]; a task that names another agent runs that agent's words,
//! budgets and checks as a child of the graph's, by the one rule
//! ([`Agent::child`]: the graph agent's hooks, policy, app context and
//! secrets kept, tools only narrowed). A task's `verify` command is its
//! verification gate.
//!
//! A task's outputs come back as a JSON object in its answer (the brief is
//! told which keys; each value is kept as text). A call that needs
//! approval pauses the task — and only that task — until a person decides
//! it from any surface (`rein approve` in another process, or whatever
//! listens on [`ConversationTasks::approvals`]): the task waits on its
//! session's inbox, never decides itself. A cancelled attempt (the graph
//! stopped, or out of time) is interrupted at its next step boundary, and
//! a paused one stops waiting.
//!
//! An attempt first looks at its task's latest earlier try in this graph
//! (found by the metadata its session was made with, so durable before its
//! first step). A try whose turn is open — rein killed mid-turn, a graph
//! cancelled while the task waited for a person, a worker lost — or not yet
//! begun is carried on in that same session: a decision made meanwhile is
//! taken, a question still open is asked again, a step a crash cut short is
//! recovered. Never a fresh session beside a stale one, whose approval,
//! answered later, would run the write a second time. A try that answered
//! with every output the task names, its end lost before the graph's
//! record held it, is that answer: nothing runs again — unless it wrote the
//! blackboard (on a worker those writes lived only in the lost process),
//! when the task runs again as any failed try does.
//!
//! Not here: the schedule (`rein-orchestrator`), the terminal that asks.

use std::collections::HashMap;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_gateway::Provider;
use rein_orchestrator::{Attempt, Blackboard, Outputs, TaskRunner};
use rein_sessions::{Event, Store};
use rein_tools::ToolBackend;
use rein_wire::{AgentError, Ending, error::codes};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::children::ChildOf;
use crate::conversation::parse_answer;
use crate::{Agent, ApprovalRequest, Conversation, Profile, TurnOutcome};

/// How many of a graph's task sessions are looked through for the one to
/// carry on (every try of every task is one). Finding them scans the
/// store's sessions once per attempt: about 80 ms at 100,000 sessions in
/// SQLite (the same query in Python's sqlite3, 2026-12-04), beside an
/// attempt's model calls.
const MAX_TRIES_LOOKED_AT: usize = 10_000;

/// How long an attempt waits for the session it carries on to be let go:
/// longer than a conversation's lease lasts unrenewed.
const HELD_WAIT: std::time::Duration = std::time::Duration::from_secs(150);

/// How often it looks.
const HELD_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// What a task's latest earlier try in the graph left.
enum Earlier {
    /// No try, or one that ended without the task's answer: a new session.
    Nothing,
    /// A session whose turn is open or not begun: carried on.
    CarryOn(String),
    /// The task's answer, its end lost before the record held it.
    Answered(Outputs),
}

/// A task paused at an approval: where a surface finds it.
#[derive(Debug, Clone)]
pub struct TaskApproval {
    /// The task's id.
    pub task: String,
    /// The session the task's conversation runs in (decide there).
    pub session: String,
    /// What the person is asked.
    pub request: ApprovalRequest,
}

/// Tokens a task's model call used (prompt and output), as they come.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskUsage {
    /// The task's id.
    pub task: String,
    /// Tokens of one model call.
    pub tokens: u64,
}

/// Runs graph tasks as conversations.
#[derive(Clone)]
pub struct ConversationTasks {
    store: Arc<dyn Store>,
    /// The graph's agent: every task is its child.
    agent: Agent,
    /// Agents a task may name.
    named: HashMap<String, Agent>,
    approvals: Option<mpsc::UnboundedSender<TaskApproval>>,
    usage: Option<mpsc::UnboundedSender<TaskUsage>>,
    graph: Option<String>,
    board: Option<Blackboard>,
}

impl ConversationTasks {
    /// Tasks on `store`, calling `provider`, with `backend`'s tools, run
    /// with `default` unless a task names another profile: the same as
    /// [`ConversationTasks::of`] an [`Agent`] with rein's defaults.
    pub fn new(
        store: Arc<dyn Store>,
        provider: Arc<dyn Provider>,
        backend: Arc<dyn ToolBackend>,
        default: Profile,
    ) -> Self {
        ConversationTasks::of(store, Agent::new(provider, backend, default))
    }

    /// Tasks on `store`, each a child of `agent`.
    pub fn of(store: Arc<dyn Store>, agent: Agent) -> Self {
        ConversationTasks {
            store,
            agent,
            named: HashMap::new(),
            approvals: None,
            usage: None,
            graph: None,
            board: None,
        }
    }

    /// Give every task the graph's blackboard, through the
    /// `blackboard_read` and `blackboard_write` tools.
    pub fn with_blackboard(mut self, board: Blackboard) -> Self {
        self.board = Some(board);
        self
    }

    /// Name the graph's session (its record) in each task session's
    /// metadata.
    pub fn in_graph(mut self, session: &str) -> Self {
        self.graph = Some(session.to_owned());
        self
    }

    /// A profile tasks can name (by its `name`): the graph's agent with
    /// these words.
    pub fn with_profile(self, profile: Profile) -> Self {
        let name = profile.name.clone();
        let agent = Agent {
            profile,
            ..self.agent.clone()
        };
        self.with_agent(&name, agent)
    }

    /// An agent tasks can name (`agent = "NAME"`); it runs as a child of
    /// the graph's agent (see the module's docs).
    pub fn with_agent(mut self, name: &str, agent: Agent) -> Self {
        self.named.insert(name.to_owned(), agent);
        self
    }

    /// Where paused tasks are announced, for a surface to ask the person.
    pub fn approvals(&mut self) -> mpsc::UnboundedReceiver<TaskApproval> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.approvals = Some(tx);
        rx
    }

    /// Where each task's token use is told, call by call, for a live view.
    pub fn usage(&mut self) -> mpsc::UnboundedReceiver<TaskUsage> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.usage = Some(tx);
        rx
    }

    /// What `task` runs with: the graph's agent, or the agent it names as
    /// the graph agent's child; its `verify` command as the gate.
    fn agent_for(&self, task: &rein_orchestrator::TaskSpec) -> Result<Agent, AgentError> {
        let mut agent = match task.agent.as_deref() {
            None => self.agent.clone(),
            Some(name) if name == self.agent.profile.name => self.agent.clone(),
            Some(name) => {
                let own = self.named.get(name).ok_or_else(|| {
                    AgentError::new(
                        codes::INVALID_INPUT,
                        format!(
                            "task `{}` names agent `{name}`, which is not defined",
                            task.id
                        ),
                    )
                })?;
                self.agent.child(Some(own), None)
            }
        };
        if !task.verify.is_empty() {
            // A graph may come from whoever can write to the store: its
            // check runs under this agent's sandbox and the person's
            // policy, never on the graph's say-so.
            let base = agent.verification.as_ref().ok_or_else(|| {
                AgentError::new(
                    codes::COMMAND_FORBIDDEN,
                    format!(
                        "task `{}` has a check, and this agent runs none (`[agent.verify]` gives the sandbox a task's check runs in)",
                        task.id
                    ),
                )
            })?;
            let expected = task.verify_exit.unwrap_or(0);
            let check = base
                .for_command(task.verify.clone(), expected)
                .map_err(|e| {
                    AgentError::new(e.code, format!("task `{}`: {}", task.id, e.message))
                })?;
            agent.verification = Some(check);
        }
        Ok(agent)
    }
}

impl TaskRunner for ConversationTasks {
    fn run(&self, attempt: Attempt) -> BoxFuture<'static, Result<Outputs, AgentError>> {
        let this = self.clone();
        async move { this.attempt(attempt).await }.boxed()
    }
}

/// The brief, with what the answer must hold when the task has outputs.
fn prompt(attempt: &Attempt) -> String {
    if attempt.task.outputs.is_empty() {
        return attempt.brief.clone();
    }
    let keys: Vec<String> = attempt
        .task
        .outputs
        .iter()
        .map(|o| format!("\"{o}\""))
        .collect();
    format!(
        "{}\n\nWhen you are done, answer with only a JSON object whose keys are {} and whose values are strings.",
        attempt.brief,
        keys.join(", ")
    )
}

/// The outputs in a finished task's reply: each declared key of the JSON
/// object it answered (strings as they are, other values as JSON text),
/// and the whole reply as `answer` unless the task declares that name.
fn outputs_of(reply: &str, declared: &[String]) -> Outputs {
    let mut out = Outputs::new();
    if !declared.is_empty()
        && let Ok(Value::Object(map)) = parse_answer(reply)
    {
        for name in declared {
            if let Some(value) = map.get(name) {
                let text = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                out.insert(name.clone(), text);
            }
        }
    }
    out.entry("answer".to_owned())
        .or_insert_with(|| reply.to_owned());
    out
}

impl ConversationTasks {
    async fn attempt(self, attempt: Attempt) -> Result<Outputs, AgentError> {
        let mut agent = self.agent_for(&attempt.task)?;
        let child = ChildOf {
            graph_task: Some(&attempt.task.id),
            agent: attempt.task.agent.as_deref(),
            ..ChildOf::under(
                &self.agent.guards,
                self.graph.as_deref().unwrap_or_default(),
                &attempt.brief,
            )
        };
        agent.guards.given(&child);
        let mut metadata = json!({
            "assistant": agent.profile.name,
            "model": agent.profile.model,
            "graph": self.graph,
            "graph_task": attempt.task.id,
            "attempt": attempt.attempt,
        });
        self.agent.guards.child_session(&child, &mut metadata);
        if let Some(board) = &self.board {
            agent.tools = Arc::new(crate::board_tools::WithBlackboard {
                product: agent.tools.clone(),
                board: board.clone(),
                task: attempt.task.id.clone(),
            });
        }
        let earlier = match self.earlier(&attempt.task).await? {
            Earlier::Answered(outputs) => return Ok(outputs),
            Earlier::CarryOn(session) => Some(session),
            Earlier::Nothing => None,
        };
        let mut conversation = self
            .open(&agent, earlier.as_deref(), metadata, &attempt)
            .await?;
        conversation.serve_task(&attempt.task.id);
        // A cancel interrupts the turn at its next step boundary.
        let steering = conversation.steering();
        let cancel = attempt.cancel.clone();
        let watcher = tokio::spawn(async move {
            cancel.cancelled().await;
            steering.interrupt();
        });
        let done = tokio_util::sync::CancellationToken::new();
        let counter = self.usage.clone().map(|tx| {
            let task = attempt.task.id.clone();
            tokio::spawn(crate::hand_on(
                conversation.subscribe(),
                done.clone(),
                move |event| {
                    if let crate::UiKind::Usage { usage, .. } = event.kind {
                        let tokens = usage.prompt_total() + usage.output;
                        let _ = tx.send(TaskUsage {
                            task: task.clone(),
                            tokens,
                        });
                    }
                },
            ))
        });
        let result = self
            .drive(&mut conversation, &attempt, earlier.is_some())
            .await;
        watcher.abort();
        // The turn's last usage is counted too.
        done.cancel();
        if let Some(counter) = counter {
            let _ = counter.await;
        }
        let closed = conversation.close().await;
        let outputs = result?;
        closed?;
        Ok(outputs)
    }

    /// What this task's latest earlier try in the graph left.
    async fn earlier(&self, task: &rein_orchestrator::TaskSpec) -> Result<Earlier, AgentError> {
        let Some(graph) = &self.graph else {
            return Ok(Earlier::Nothing);
        };
        let tried = self
            .store
            .sessions_where("graph", graph, MAX_TRIES_LOOKED_AT)
            .await?;
        let Some(latest) = tried
            .iter()
            .find(|s| s.metadata.get("graph_task").and_then(Value::as_str) == Some(&task.id))
        else {
            return Ok(Earlier::Nothing);
        };
        let turns = self.store.turns(&latest.id).await?;
        let Some(finished) = turns
            .iter()
            .max_by_key(|t| t.started_seq)
            .map(|t| t.finished_seq)
        else {
            return Ok(Earlier::CarryOn(latest.id.clone()));
        };
        let Some(finished) = finished else {
            return Ok(Earlier::CarryOn(latest.id.clone()));
        };
        let log = rein_sessions::read_all(self.store.as_ref(), &latest.id).await?;
        let wrote_board = log.iter().any(|e| {
            matches!(&e.event, Event::ToolCalled { tool, .. } if tool == crate::board_tools::BLACKBOARD_WRITE)
        });
        let answer = log.iter().find_map(|e| match &e.event {
            Event::TurnFinished {
                outcome: Ending::Finished,
                reply: Some(reply),
                ..
            } if e.seq == finished => Some(reply),
            _ => None,
        });
        if let Some(reply) = answer
            && !wrote_board
        {
            let outputs = outputs_of(reply, &task.outputs);
            if task.outputs.iter().all(|name| outputs.contains_key(name)) {
                return Ok(Earlier::Answered(outputs));
            }
        }
        Ok(Earlier::Nothing)
    }

    /// Open the task's session: `earlier` once whoever held it has let
    /// go (a worker on another machine that died holds it until its lease
    /// lapses), or a new one.
    async fn open(
        &self,
        agent: &Agent,
        earlier: Option<&str>,
        metadata: Value,
        attempt: &Attempt,
    ) -> Result<Conversation, AgentError> {
        let until = tokio::time::Instant::now() + HELD_WAIT;
        loop {
            match agent
                .open_session(self.store.clone(), earlier, metadata.clone())
                .await
            {
                Err(err)
                    if err.code == codes::SESSION_LOCKED && tokio::time::Instant::now() < until =>
                {
                    tokio::select! {
                        () = tokio::time::sleep(HELD_POLL) => {}
                        () = attempt.cancel.cancelled() => return Err(err),
                    }
                }
                opened => return opened,
            }
        }
    }

    async fn drive(
        &self,
        conversation: &mut Conversation,
        attempt: &Attempt,
        carry_on: bool,
    ) -> Result<Outputs, AgentError> {
        let mut outcome = if carry_on && conversation.has_open_turn().await? {
            conversation.resume().await?
        } else {
            conversation.turn(&prompt(attempt)).await?
        };
        loop {
            match outcome {
                TurnOutcome::Finished { reply } => {
                    return Ok(outputs_of(&reply, &attempt.task.outputs));
                }
                TurnOutcome::AwaitingApproval(request) => {
                    if let Some(tx) = &self.approvals {
                        let _ = tx.send(TaskApproval {
                            task: attempt.task.id.clone(),
                            session: conversation.session_id().to_owned(),
                            request: request.clone(),
                        });
                    }
                    outcome = self
                        .wait_for_decision(conversation, attempt, &request)
                        .await?;
                }
                TurnOutcome::Interrupted => {
                    return Err(AgentError::new(
                        codes::CANCELLED,
                        format!("task `{}` was interrupted", attempt.task.id),
                    ));
                }
                TurnOutcome::Error { error } => return Err(error),
                other => {
                    return Err(AgentError::new(
                        codes::AGENT_UNFINISHED,
                        format!(
                            "task `{}`'s conversation ended without an answer ({})",
                            attempt.task.id,
                            other.name()
                        ),
                    ));
                }
            }
        }
    }

    /// Wait until `request` is decided (by anyone, through the inbox), then
    /// go on with the turn; a cancel stops the wait.
    async fn wait_for_decision(
        &self,
        conversation: &mut Conversation,
        attempt: &Attempt,
        request: &ApprovalRequest,
    ) -> Result<TurnOutcome, AgentError> {
        match conversation
            .wait_for_decision(&request.approval_id, &attempt.cancel)
            .await?
        {
            Some(outcome) => Ok(outcome),
            None => Err(AgentError::new(
                codes::CANCELLED,
                format!(
                    "task `{}` was cancelled while it waited for approval `{}`",
                    attempt.task.id, request.approval_id
                ),
            )),
        }
    }
}
