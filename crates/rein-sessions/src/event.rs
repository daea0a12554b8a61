//! The session event: one enum for everything that happens in a session.
//!
//! Events are stored as `(kind, version, data)`: a dotted kind name
//! (`tool.called`), a schema version, and the JSON data. A kind or version
//! this build does not know is read back as [`Event::Unknown`] with its data
//! intact — never dropped — so an older rein can open a log a newer one
//! wrote and write it back unchanged.

pub use rein_wire::ResultSource;
use rein_wire::permission::PermissionClass;
use rein_wire::{Message, StopReason, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The schema version of every kind this build writes.
pub const EVENT_VERSION: u32 = 1;

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// It succeeded.
    Ok,
    /// It failed (the result says why).
    Error,
}

/// Everything that can happen in a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data")]
pub enum Event {
    /// The session was opened.
    #[serde(rename = "session.created")]
    SessionCreated {
        /// The application's opaque metadata.
        metadata: Value,
    },
    /// A person's turn began.
    #[serde(rename = "turn.started")]
    TurnStarted {
        /// The new turn's id.
        turn_id: String,
        /// The turn it follows (`None` for the first).
        parent: Option<String>,
        /// What the person said.
        prompt: String,
    },
    /// The next turn will follow `from_turn` (or start a new root when
    /// `None`); nothing before is rewritten.
    #[serde(rename = "branch.created")]
    BranchCreated {
        /// The turn the branch grows from.
        from_turn: Option<String>,
    },
    /// A run (the work of a turn) began.
    #[serde(rename = "run.started")]
    RunStarted {
        /// The run's id.
        run_id: String,
        /// The turn it serves.
        turn_id: String,
        /// Its budgets.
        #[serde(default)]
        budgets: Value,
        /// A snapshot of the profile it runs with.
        #[serde(default)]
        profile: Value,
    },
    /// A model call was sent.
    #[serde(rename = "model.requested")]
    ModelRequested {
        /// The call's id.
        call_id: String,
        /// The stable prefix's fingerprint.
        prefix_fingerprint: String,
        /// A digest of the whole request.
        request_digest: String,
        /// The estimated prompt tokens.
        estimated_tokens: u64,
        /// How full the window was and what was done about it (absent in
        /// logs written before it was recorded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pressure: Option<crate::record::Pressure>,
    },
    /// A model call finished.
    #[serde(rename = "model.completed")]
    ModelCompleted {
        /// The call's id.
        call_id: String,
        /// The model that answered.
        model: String,
        /// The assistant message.
        message: Message,
        /// Token usage.
        usage: Option<Usage>,
        /// Cost in micro-USD (absent when unknown).
        cost_micro_usd: Option<u64>,
        /// Of that cost, what the reasoning tokens cost (billed as output);
        /// absent when the call did not reason or its cost is unknown.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_cost_micro_usd: Option<u64>,
        /// Why it stopped.
        stop_reason: Option<StopReason>,
        /// The cache monitor's verdict.
        cache_verdict: Option<rein_wire::CacheVerdict>,
        /// Wall time of the call.
        latency_ms: u64,
        /// Near misses in the message's tool calls that rein repaired (a
        /// tool name's case, arguments that were almost JSON), each with
        /// what the model sent: the message holds the repaired calls.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        repaired: Vec<rein_wire::repair::Repaired>,
    },
    /// A tool call is about to run (recorded before it runs).
    #[serde(rename = "tool.called")]
    ToolCalled {
        /// The model's call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// Its arguments.
        arguments: Value,
        /// Its permission class for these arguments (`none` when it was
        /// refused before it had one).
        #[serde(with = "rein_wire::permission::class_or_none")]
        permission: Option<PermissionClass>,
    },
    /// A person must decide before a call runs.
    #[serde(rename = "approval.requested")]
    ApprovalRequested {
        /// The approval's id.
        approval_id: String,
        /// The call waiting for it.
        call_id: String,
        /// The tool.
        tool: String,
        /// Its arguments.
        arguments: Value,
        /// Its permission class.
        permission: PermissionClass,
        /// What the person is shown beside the arguments (a diff, the
        /// start of a new file), when the tool makes one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preview: Option<rein_wire::Preview>,
        /// What the call would change, at the revision it had when the
        /// person was asked: an approval holds for that revision only.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bound_to: Option<rein_wire::Revision>,
    },
    /// A person decided (or the approval expired or the run stopped).
    #[serde(rename = "approval.decided")]
    ApprovalDecided {
        /// The approval's id.
        approval_id: String,
        /// `approved`, `denied`, `expired` or `stopped`.
        decision: rein_wire::permission::Decision,
        /// Who decided (a surface and a person).
        by: String,
        /// The lease granted with an approval (`once`, `tool`, `run`).
        lease: Option<rein_wire::permission::LeaseScope>,
    },
    /// A tool call's one result.
    #[serde(rename = "tool.result")]
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// Success or failure.
        status: ToolStatus,
        /// Where it came from.
        source: ResultSource,
        /// The (bounded) result.
        content: Value,
        /// The artifact holding the full result, if offloaded.
        artifact: Option<String>,
        /// The backend's operation id.
        operation_id: Option<String>,
        /// Whether the operation can be undone.
        undo: bool,
        /// Wall time of the call.
        duration_ms: u64,
        /// The resource the call read or left, at that revision (what the
        /// conversation has seen, for the read-before-write rule).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seen: Option<rein_wire::Revision>,
    },
    /// A person undid an operation a tool result named (its
    /// `operation_id`); the result itself stays in the log.
    #[serde(rename = "operation.undone")]
    OperationUndone {
        /// The operation.
        operation_id: String,
        /// The person's surface.
        by: String,
    },
    /// A hook ran and did something (or failed): `point` is
    /// `before_call`, `after_call` or `before_model_call`; `effect` is
    /// `continue`, `deny`, `edit`, `annotate` or `failed`; `detail` holds
    /// the reason, the edited arguments or the note. A call's
    /// `before_call` record is read back on resume, so a hook is never asked
    /// twice about one call.
    #[serde(rename = "hook.ran")]
    HookRan {
        /// The hook's name.
        hook: String,
        /// Where it ran.
        point: rein_wire::HookPoint,
        /// The call it was about, if any.
        call_id: Option<String>,
        /// What it did.
        effect: rein_wire::HookDid,
        /// The reason, the edited arguments, or the note.
        detail: Value,
    },
    /// A person accepted that the open run goes on under changed
    /// authority (another model, tools, policy, roots or sandbox).
    #[serde(rename = "authority.accepted")]
    AuthorityAccepted {
        /// The person's surface.
        by: String,
        /// The authority the run started with.
        from: Value,
        /// The authority it goes on with.
        to: Value,
    },
    /// A person said something mid-turn.
    #[serde(rename = "steer.said")]
    SteerSaid {
        /// What they said.
        text: String,
    },
    /// A person interrupted the turn.
    #[serde(rename = "steer.interrupted")]
    SteerInterrupted {
        /// Why, if given.
        reason: Option<String>,
    },
    /// Older history was summarised for the model; the log is unchanged.
    #[serde(rename = "compaction.created")]
    CompactionCreated {
        /// First sequence number covered.
        from_seq: u64,
        /// Last sequence number covered.
        to_seq: u64,
        /// What it did: results set aside, or history summarised.
        summary: Box<crate::Compaction>,
        /// The token target it aimed at.
        target_tokens: u64,
    },
    /// A verification check ran — the gate's, at a final answer — and
    /// what it judged: the receipt a compaction's state keeps.
    #[serde(rename = "check.ran")]
    CheckRan {
        /// The command, as run (no shell).
        command: Vec<String>,
        /// The exit it had to give.
        expected: i32,
        /// The exit it gave (`None`: killed, over its time, not started).
        exit: Option<i32>,
        /// Whether it passed.
        passed: bool,
        /// The files the conversation had changed, at the revisions they
        /// had when it ran.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        revisions: Vec<rein_wire::Revision>,
        /// How long it ran.
        duration_ms: u64,
    },
    /// A sub-agent began.
    #[serde(rename = "agent.started")]
    AgentStarted {
        /// The sub-agent's path.
        agent_path: String,
        /// What it was asked to do.
        task: String,
        /// The `delegate` call it answers (absent in logs written before
        /// sub-agents could write).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// The sub-agent's own session, made before it starts (so a person
        /// can find its approvals from the parent, and a resumed parent can
        /// reattach it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
    },
    /// A sub-agent finished.
    #[serde(rename = "agent.finished")]
    AgentFinished {
        /// The sub-agent's path.
        agent_path: String,
        /// How it ended: `finished` or its error code.
        outcome: rein_wire::ChildEnding,
    },
    /// A turn ended.
    #[serde(rename = "turn.finished")]
    TurnFinished {
        /// The turn.
        turn_id: String,
        /// How it ended.
        outcome: rein_wire::Ending,
        /// The final reply text.
        reply: Option<String>,
    },
    /// A run ended.
    #[serde(rename = "run.finished")]
    RunFinished {
        /// The run.
        run_id: String,
        /// How it ended.
        outcome: rein_wire::Ending,
        /// Totals (tokens, cost, steps).
        #[serde(default)]
        totals: Value,
    },
    /// The session was paused.
    #[serde(rename = "control.paused")]
    Paused {
        /// Who paused it.
        by: String,
    },
    /// The session was resumed.
    #[serde(rename = "control.resumed")]
    Resumed {
        /// Who resumed it.
        by: String,
    },
    /// The session was stopped.
    #[serde(rename = "control.stopped")]
    Stopped {
        /// Who stopped it.
        by: String,
    },
    /// A task graph began; this session is the graph's record.
    #[serde(rename = "graph.created")]
    GraphCreated {
        /// The graph as written (`rein_orchestrator::GraphSpec`).
        spec: Value,
    },
    /// An attempt of one of the graph's tasks began (in a session of its
    /// own, whose metadata names this graph and the task).
    #[serde(rename = "task.started")]
    TaskStarted {
        /// The task's id.
        task: String,
        /// The attempt's number (1 for the first).
        attempt: u32,
    },
    /// A graph's task ended.
    #[serde(rename = "task.finished")]
    TaskFinished {
        /// The task's id.
        task: String,
        /// How it ended.
        state: rein_wire::TaskEnding,
        /// Attempts made (0: kept from before a resume).
        attempts: u32,
        /// Its outputs, when it succeeded.
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        outputs: std::collections::BTreeMap<String, String>,
        /// Why it failed (problem JSON) or which task's failure skipped it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<Value>,
    },
    /// A key of the graph's blackboard was written.
    #[serde(rename = "blackboard.written")]
    BlackboardWritten {
        /// The key.
        key: String,
        /// The new value.
        value: Value,
        /// The revision it now has.
        revision: u64,
        /// The task that wrote it.
        by: String,
    },
    /// A graph's run ended (it may be resumed: finished tasks are kept).
    #[serde(rename = "graph.finished")]
    GraphFinished {
        /// How it ended.
        outcome: rein_wire::GraphOutcome,
    },
    /// A person intervened in a hosted agent's terminal: took it over by
    /// typing (with what they typed, bounded), was refused because someone
    /// else held it, or handed it back.
    #[serde(rename = "host.intervened")]
    HostIntervened {
        /// The viewer (surface and person).
        viewer: String,
        /// How they intervened.
        intervention: rein_wire::InterventionKind,
        /// Who held it, for a refusal.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        holder: Option<String>,
        /// What was typed, for a takeover.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<String>,
    },
    /// A kind (or version) this build does not know, kept verbatim.
    #[serde(skip)]
    Unknown {
        /// The kind name.
        kind: String,
        /// Its version.
        version: u32,
        /// Its data.
        data: Value,
    },
}

impl Event {
    /// The dotted kind name.
    pub fn kind(&self) -> &str {
        match self {
            Event::SessionCreated { .. } => "session.created",
            Event::TurnStarted { .. } => "turn.started",
            Event::BranchCreated { .. } => "branch.created",
            Event::RunStarted { .. } => "run.started",
            Event::ModelRequested { .. } => "model.requested",
            Event::ModelCompleted { .. } => "model.completed",
            Event::ToolCalled { .. } => "tool.called",
            Event::ApprovalRequested { .. } => "approval.requested",
            Event::ApprovalDecided { .. } => "approval.decided",
            Event::ToolResult { .. } => "tool.result",
            Event::OperationUndone { .. } => "operation.undone",
            Event::HookRan { .. } => "hook.ran",
            Event::AuthorityAccepted { .. } => "authority.accepted",
            Event::SteerSaid { .. } => "steer.said",
            Event::SteerInterrupted { .. } => "steer.interrupted",
            Event::CompactionCreated { .. } => "compaction.created",
            Event::CheckRan { .. } => "check.ran",
            Event::AgentStarted { .. } => "agent.started",
            Event::AgentFinished { .. } => "agent.finished",
            Event::TurnFinished { .. } => "turn.finished",
            Event::RunFinished { .. } => "run.finished",
            Event::Paused { .. } => "control.paused",
            Event::Resumed { .. } => "control.resumed",
            Event::Stopped { .. } => "control.stopped",
            Event::GraphCreated { .. } => "graph.created",
            Event::TaskStarted { .. } => "task.started",
            Event::TaskFinished { .. } => "task.finished",
            Event::BlackboardWritten { .. } => "blackboard.written",
            Event::GraphFinished { .. } => "graph.finished",
            Event::HostIntervened { .. } => "host.intervened",
            Event::Unknown { kind, .. } => kind,
        }
    }

    /// The schema version.
    pub fn version(&self) -> u32 {
        match self {
            Event::Unknown { version, .. } => *version,
            _ => EVENT_VERSION,
        }
    }

    /// The data part (what is stored beside the kind).
    pub fn data(&self) -> Value {
        if let Event::Unknown { data, .. } = self {
            return data.clone();
        }
        match serde_json::to_value(self) {
            Ok(Value::Object(mut map)) => map.remove("data").unwrap_or(Value::Null),
            _ => Value::Null,
        }
    }

    /// Rebuild an event from its stored parts. Unknown kinds, newer
    /// versions and data that does not fit the kind become
    /// [`Event::Unknown`]: nothing is lost.
    pub fn from_parts(kind: &str, version: u32, data: Value) -> Event {
        if version == EVENT_VERSION {
            let tagged = serde_json::json!({"kind": kind, "data": data});
            if let Ok(event) = serde_json::from_value::<Event>(tagged) {
                return event;
            }
        }
        Event::Unknown {
            kind: kind.to_owned(),
            version,
            data,
        }
    }
}

/// An event with its place in the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// The session.
    pub session_id: String,
    /// Its sequence number: 1, 2, 3, … without gaps.
    pub seq: u64,
    /// When it was appended, in milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// Which agent wrote it: `main`, or `main/…` for sub-agents.
    pub agent_path: String,
    /// The event.
    pub event: Event,
}

/// An event to append, with the agent that writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// Which agent writes it.
    pub agent_path: String,
    /// The event.
    pub event: Event,
}

impl NewEvent {
    /// An event written by the conversation itself (agent path `main`;
    /// sub-agents write under `main/…`).
    pub fn main(event: Event) -> Self {
        NewEvent {
            agent_path: "main".into(),
            event,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_kinds_round_trip_through_parts() {
        let e = Event::TurnStarted {
            turn_id: "t1".into(),
            parent: None,
            prompt: "hi".into(),
        };
        assert_eq!(e.kind(), "turn.started");
        let back = Event::from_parts(e.kind(), e.version(), e.data());
        assert_eq!(back, e);
    }

    #[test]
    fn unknown_kinds_and_versions_are_kept_not_dropped() {
        let data = serde_json::json!({"x": [1, 2]});
        let e = Event::from_parts("hologram.projected", 1, data.clone());
        assert_eq!(e.kind(), "hologram.projected");
        assert_eq!(e.data(), data);
        let newer = Event::from_parts("turn.started", 2, data.clone());
        assert!(matches!(newer, Event::Unknown { version: 2, .. }));
        assert_eq!(newer.data(), data);
        // A known kind whose data does not fit is kept too.
        let odd = Event::from_parts("turn.started", 1, serde_json::json!("?"));
        assert!(matches!(odd, Event::Unknown { .. }));
    }
}

#[cfg(test)]
mod result_source_tests {
    use super::ResultSource;

    #[test]
    fn the_shown_word_is_the_recorded_one() {
        for source in [
            ResultSource::Live,
            ResultSource::Cache,
            ResultSource::Offload,
            ResultSource::Interrupted,
        ] {
            let recorded = serde_json::to_value(source).unwrap_or_default();
            assert_eq!(recorded, source.as_str());
        }
    }
}
