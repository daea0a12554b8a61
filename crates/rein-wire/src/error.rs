//! [`AgentError`] and the registry of stable error codes.
//!
//! Every error that reaches a person or a model carries a stable code from
//! this registry, a message saying what happened, optional structured
//! detail, and whether trying again may help. Codes are part of rein's
//! contract: they are never renamed. Products register their own codes with
//! [`register`]; a code may be registered once.
//!
//! An error renders as RFC 9457 problem details with [`AgentError::to_problem`],
//! which is what the HTTP surface and `rein` commands print.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{OnceLock, RwLock};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub use crate::io_reason::io_reason;

/// A stable, machine-readable error code (`snake_case`).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(Cow<'static, str>);

impl ErrorCode {
    /// A code known at compile time.
    pub const fn from_static(code: &'static str) -> Self {
        ErrorCode(Cow::Borrowed(code))
    }

    /// A code made at run time (for products' own codes).
    pub fn new(code: impl Into<String>) -> Self {
        ErrorCode(Cow::Owned(code.into()))
    }

    /// The code's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for ErrorCode {
    /// A code from outside (an MCP server's, a provider's, a product's),
    /// kept as its text.
    fn from(code: &str) -> Self {
        ErrorCode::new(code)
    }
}

impl From<String> for ErrorCode {
    fn from(code: String) -> Self {
        ErrorCode::new(code)
    }
}

impl From<&ErrorCode> for ErrorCode {
    fn from(code: &ErrorCode) -> Self {
        code.clone()
    }
}

impl PartialEq<str> for ErrorCode {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the registry knows about a code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeInfo {
    /// The code.
    pub code: ErrorCode,
    /// A short human title.
    pub title: Cow<'static, str>,
    /// The HTTP status a surface answers with.
    pub status: u16,
    /// Whether errors with this code are retryable by default.
    pub retryable: bool,
    /// What to do next.
    pub hint: Cow<'static, str>,
}

macro_rules! registry {
    ($( $konst:ident = $code:literal, $status:literal, $retry:literal, $title:literal, $hint:literal; )*) => {
        /// rein's own error codes: each constant's page gives the word a
        /// problem carries, what it means, the HTTP status a surface
        /// answers with and whether trying again may help (what to do next
        /// is [`crate::error::lookup`]'s `hint`).
        pub mod codes {
            use super::ErrorCode;
            $(
                #[doc = concat!("`", $code, "`: ", $title, ". HTTP ", stringify!($status), "; retryable: ", stringify!($retry), ".")]
                pub const $konst: ErrorCode = ErrorCode::from_static($code);
            )*
        }

        fn builtin() -> Vec<CodeInfo> {
            vec![$(CodeInfo {
                code: codes::$konst,
                title: Cow::Borrowed($title),
                status: $status,
                retryable: $retry,
                hint: Cow::Borrowed($hint),
            }),*]
        }
    };
}

registry! {
    INVALID_INPUT = "invalid_input", 400, false,
        "The input is not valid", "Correct the input named in the detail and try again.";
    INTERNAL = "internal", 500, false,
        "An internal error in rein", "This is a bug; please report it with the detail.";
    CONFLICT = "conflict", 409, false,
        "It was already decided",
        "Another person or surface decided first; read the session (`rein sessions show`) for what was decided.";
    OUTPUT_CLOSED = "output_closed", 499, false,
        "The reader closed the output", "Nothing to do: whoever read the output stopped reading (a pipe into `head`, say).";
    CANCELLED = "cancelled", 499, false,
        "The operation was cancelled", "Nothing to do; it was stopped on request.";
    OFFLINE = "offline", 503, false,
        "Model calls are switched off (REIN_OFFLINE=1)",
        "Unset REIN_OFFLINE to call a provider, or use the offline scripted model.";
    MISSING_API_KEY = "missing_api_key", 401, false,
        "No API key is configured for the provider",
        "Set the provider's key variable (ANTHROPIC_API_KEY or OPENAI_API_KEY) or its config entry.";
    PROVIDER_AUTH = "provider_auth", 401, false,
        "The provider rejected the credentials", "Check the API key and its permissions.";
    PROVIDER_BAD_REQUEST = "provider_bad_request", 400, false,
        "The provider rejected the request", "Read the provider's message in the detail; the request needs changing.";
    PROVIDER_NOT_FOUND = "provider_not_found", 404, false,
        "The provider does not know the model or endpoint", "Check the model name and the base URL.";
    RATE_LIMITED = "rate_limited", 429, true,
        "The provider is rate limiting", "Wait and try again; rein already retried with backoff.";
    PROVIDER_OVERLOADED = "provider_overloaded", 529, true,
        "The provider is overloaded", "Try again later; rein already retried with backoff.";
    PROVIDER_UNAVAILABLE = "provider_unavailable", 502, true,
        "The provider answered with a server error", "Try again later; rein already retried with backoff.";
    PROVIDER_ERROR = "provider_error", 502, false,
        "The provider reported an error", "Read the provider's message in the detail.";
    INSUFFICIENT_QUOTA = "insufficient_quota", 402, false,
        "The provider account has no quota left", "Add credit or raise the quota with the provider.";
    CONTEXT_WINDOW_EXCEEDED = "context_window_exceeded", 400, false,
        "The conversation does not fit the model's context window", "Compact the conversation or start a new one.";
    CONNECT_FAILED = "connect_failed", 502, true,
        "Could not connect to the provider", "Check the base URL and the network.";
    TIMEOUT_CONNECT = "timeout_connect", 504, true,
        "Connecting to the provider timed out", "Check the network; raise the connect timeout if it is slow.";
    TIMEOUT_FIRST_BYTE = "timeout_first_byte", 504, true,
        "The provider did not start answering in time", "Try again; raise the first-byte timeout for slow models.";
    TIMEOUT_IDLE = "timeout_idle", 504, true,
        "The provider's stream stalled between chunks", "Try again; raise the idle timeout for slow models.";
    TIMEOUT_TOTAL = "timeout_total", 504, false,
        "The model call took longer than its total time limit", "Raise the total timeout or lower the output limit.";
    STREAM_TRUNCATED = "stream_truncated", 502, true,
        "The stream ended before its terminal event", "Try again; the connection was cut or the server stopped early.";
    STREAM_IO = "stream_io", 502, true,
        "Reading the provider's stream failed", "Try again; the connection failed mid-stream.";
    STREAM_MALFORMED = "stream_malformed", 502, false,
        "The provider sent data rein cannot read", "Capture the stream (`rein wire decode`) and report it.";
    STREAM_NOT_SSE = "stream_not_sse", 502, false,
        "The answer is not an event stream",
        "Check the base URL: it may lead to a web page, a proxy or a file that is not a model API's stream.";
    STREAM_LINE_TOO_LONG = "stream_line_too_long", 502, false,
        "A line of the stream exceeded the size bound", "Raise the gateway's max line size if the provider legitimately sends such lines.";
    PROGRAM_NOT_FOUND = "program_not_found", 404, false,
        "A command's program is not on the commands' path", "The message names the programs there with a name like it.";
    TOOL_NOT_FOUND = "tool_not_found", 404, false,
        "The model called a tool that does not exist", "The message names the tools it may call; the model is told the same.";
    TOOL_ARGUMENTS_INVALID = "tool_arguments_invalid", 400, false,
        "A tool call's arguments do not fit its schema", "The message says which argument is wrong; the model is told the same.";
    NOT_APPROVED = "not_approved", 403, false,
        "A person did not approve the call", "It was not run; ask the person what they want instead of working around it.";
    POLICY_REFUSED = "policy_refused", 403, false,
        "The conversation's policy does not allow the call", "It was not run; the product's policy forbids writes here.";
    CALL_INTERRUPTED = "interrupted", 500, false,
        "The process stopped while the call ran", "It was not run again; check its effect before repeating it.";
    CALL_STOPPED = "stopped", 499, false,
        "The turn was stopped before the call ran", "Nothing to do; a person stopped the turn.";
    DELEGATION_REFUSED = "delegation_refused", 429, false,
        "No more sub-agents can be started in this turn", "Do the task directly, or raise the delegation's per-turn bound.";
    SKILL_NOT_FOUND = "skill_not_found", 404, false,
        "There is no skill by that name", "The skills list names the ones there are.";
    AGENT_UNFINISHED = "agent_unfinished", 502, false,
        "A sub-agent ended without an answer", "Read the sub-agent's session for why.";
    AGENT_STOPPED = "agent_stopped", 409, false,
        "The sub-agent was stopped before it finished",
        "The parent's turn was stopped or interrupted; its work so far is in its session.";
    AGENT_OVER_BUDGET = "agent_over_budget", 429, false,
        "The sub-agent used up its share of the parent's budget",
        "Hand it a smaller task, or finish the rest yourself.";
    OUTSIDE_ROOT = "outside_root", 403, false,
        "The path leads outside the root the tools may touch",
        "Name a path inside the project root; links that lead out are refused where they are opened.";
    HARD_LINK = "hard_link", 403, false,
        "The file has more than one name",
        "rein does not touch a file with several hard links: another name may be outside the root.";
    PROTECTED_PATH = "protected_path", 403, false,
        "The path is one that runs later on the person's machine, and this call was not asked about it",
        "A write to .git, .rein or another protected path runs only with the person's yes to that very call; name the path itself so they are asked.";
    DANGLING_LINK = "dangling_link", 403, false,
        "The path is a symbolic link to nothing", "Remove the link or name its target inside the root.";
    NOT_A_FILE = "not_a_file", 400, false,
        "The path is not a regular file", "Name a regular file (not a folder, device or pipe).";
    FILE_NOT_FOUND = "not_found", 404, false,
        "There is no such file", "Check the path; list the folder to see what is there.";
    FILE_TOO_LARGE = "too_large", 413, false,
        "The file is larger than the tools read", "Read a smaller file, or search it instead.";
    READ_FAILED = "read_failed", 500, false,
        "Reading the file failed", "The detail has the operating system's reason.";
    WRITE_FAILED = "write_failed", 500, false,
        "Writing the file failed", "The detail has the operating system's reason.";
    DELETE_FAILED = "delete_failed", 500, false,
        "Deleting the file failed", "The detail has the operating system's reason.";
    LIST_FAILED = "list_failed", 500, false,
        "Listing the folder failed", "The detail has the operating system's reason.";
    EDIT_NO_MATCH = "edit_no_match", 409, false,
        "An edit's text does not occur in the file",
        "Nothing was changed: read the file again and give text that is in it.";
    EDIT_AMBIGUOUS = "edit_ambiguous", 409, false,
        "An edit's text occurs more than once in the file",
        "Nothing was changed: include more of the surrounding lines so the text occurs once.";
    EDIT_ALREADY_MADE = "edit_already_made", 409, false,
        "The edit is already in the file",
        "Nothing was changed: the file already holds this change; do not make it again.";
    CHANGED_SINCE = "changed_since", 409, false,
        "It has changed since, so it is left as it is",
        "Look at it as it is now; undo only reverts a change nothing has touched since.";
    NOT_READ = "not_read", 409, false,
        "The file exists and this conversation has not read it",
        "Nothing was changed: read the file first, then make the change from what it holds.";
    CHANGED_SINCE_READ = "changed_since_read", 409, false,
        "The file changed after this conversation read it",
        "Nothing was changed: read the file again, then make the change from what it holds now.";
    CHANGED_SINCE_APPROVAL = "changed_since_approval", 409, false,
        "The file changed after the person approved the change",
        "Nothing was changed: what the person approved no longer describes it; read the file again and propose the change anew.";
    TOOL_ARGUMENTS_MALFORMED = "tool_arguments_malformed", 502, false,
        "A tool call's arguments are not valid JSON", "The model produced broken arguments; ask it again.";
    SESSION_NOT_FOUND = "session_not_found", 404, false,
        "No session has this id", "Check the id with `rein sessions list`.";
    TURN_NOT_FOUND = "turn_not_found", 404, false,
        "No turn has this id", "Check the id with `rein sessions tree SESSION`.";
    TURN_NOT_IN_SESSION = "turn_not_in_session", 409, false,
        "The turn belongs to another session", "Branch from a turn of the same session.";
    SESSION_LOCKED = "session_locked", 423, true,
        "Another writer holds the session", "Wait for it to finish, or for its lock to expire if it died.";
    LOCK_LOST = "lock_lost", 409, false,
        "This writer's lock on the session expired or was taken over", "Reopen the session and take the lock again.";
    STORE_SCHEMA_NEWER = "store_schema_newer", 409, false,
        "The store was written by a newer rein", "Upgrade rein; the store was left unchanged.";
    STORE_UNAVAILABLE = "store_unavailable", 503, true,
        "The store could not be read or written", "Check the store's path, permissions and free space.";
    ARTIFACT_NOT_FOUND = "artifact_not_found", 404, false,
        "No artifact has this hash", "Check the reference; artifacts are addressed by their blake3 hash.";
    STRUCTURED_ANSWER_INVALID = "structured_answer_invalid", 502, false,
        "The model's answer did not follow the requested schema, even after one repair", "Simplify the schema or ask again.";
    VERIFICATION_FAILED = "verification_failed", 422, false,
        "The turn's verification command kept failing", "Read the command's output in the detail and fix the cause.";
    GRAPH_INVALID = "graph_invalid", 400, false,
        "The task graph cannot run as written",
        "The message names the task and the path (a cycle, an unknown dependency or output); fix the graph file.";
    TASK_TIMED_OUT = "task_timed_out", 504, true,
        "A task took longer than its time limit", "Raise the task's `timeout`, or split the task.";
    TASK_SKIPPED = "task_skipped", 424, false,
        "A task did not run because a task it depends on failed", "Fix the failed task named in the message and resume the graph.";
    TASK_OUTPUT_MISSING = "task_output_missing", 502, false,
        "A task finished without an output it declares", "Say in the task's brief what each output must hold.";
    BLACKBOARD_CONFLICT = "blackboard_conflict", 409, false,
        "The blackboard key changed since it was read",
        "The detail has its current revision and value; read it again and write against that revision.";
    UNAUTHENTICATED = "unauthenticated", 401, false,
        "The request carries no valid token or session cookie",
        "Open the URL `rein serve` printed, or send `Authorization: Bearer TOKEN`.";
    ORIGIN_REFUSED = "origin_refused", 403, false,
        "The request comes from a page of another origin",
        "Only rein's own page may change state; call the API from the same origin or without a browser.";
    HOST_REFUSED = "host_refused", 403, false,
        "The request names a host this server does not serve (DNS rebinding?)",
        "Use the address `rein serve` printed.";
    BODY_TOO_LARGE = "body_too_large", 413, false,
        "The request body is larger than the server accepts", "Send less.";
    ROUTE_NOT_FOUND = "route_not_found", 404, false,
        "There is no such API route", "The routes are listed at /api/openapi.json.";
    NO_OPEN_TURN = "no_open_turn", 409, false,
        "No turn of this conversation is open, so there is nothing to stop",
        "Nothing was kept: a stop ends only a turn open when it is asked, never the next one.";
    METHOD_NOT_ALLOWED = "method_not_allowed", 405, false,
        "The route does not take this method",
        "The routes and their methods are listed at /api/openapi.json.";
    INBOX_FULL = "inbox_full", 429, true,
        "The conversation has as much waiting for it as it takes",
        "Wait for the running turn to take what was said (at its next step), then say more.";
    TURN_RUNNING = "turn_running", 409, false,
        "A turn of this conversation is already running",
        "Wait for it, steer it, or interrupt it.";
    TOO_MANY_CLIENTS = "too_many_clients", 503, true,
        "The server has as many connections or watchers as it allows", "Try again later.";
    HOOK_DENIED = "hook_denied", 403, false,
        "A hook refused this", "Read the hook's reason; a person can change the hook.";
    AUTHORITY_CHANGED = "authority_changed", 409, false,
        "The run started with other authority (model, tools, policy, roots or sandbox)",
        "A person accepts the change (the terminal asks; `Conversation::accept_authority`), or start a new turn.";
    SANDBOX_UNAVAILABLE = "sandbox_unavailable", 503, false,
        "The sandbox cannot confine commands on this machine (no landlock, the helper missing, or the container backend's runtime or image missing)",
        "Do what the message says; else use a kernel with landlock (5.13+, enabled), a container runtime with a local image (`backend = \"container\"`), or the host backend with its acknowledgement.";
    HOST_UNACKNOWLEDGED = "host_unacknowledged", 400, false,
        "The host backend runs commands without isolation and was not acknowledged",
        "Set `unsafe_host_not_isolated = true` in the sandbox config only if you accept that.";
    COMMAND_FORBIDDEN = "command_forbidden", 403, false,
        "The command policy forbids this command", "Ask the person, or use another command.";
    COMMAND_POLICY_INVALID = "command_policy_invalid", 400, false,
        "The command policy cannot be used",
        "Fix the named rule: each example must match its own rule and no earlier one.";
    MCP_CONFIG_INVALID = "mcp_config_invalid", 400, false,
        "The MCP servers' configuration cannot be used",
        "Fix the named server's entry in the config file (or the --mcp argument).";
    MCP_SERVER_UNAVAILABLE = "mcp_server_unavailable", 503, true,
        "The MCP server is not ready (starting, restarting, or failed to start)",
        "Try again at a later turn; `rein mcp list` shows the server's status.";
    MCP_SERVER_CRASHED = "mcp_server_crashed", 502, true,
        "The MCP server went away during the call; it is being restarted",
        "The call may or may not have taken effect; check before trying again.";
    MCP_CALL_TIMEOUT = "mcp_call_timeout", 504, true,
        "The MCP server did not answer the call in time; it is being restarted",
        "The call may or may not have taken effect; check before trying again.";
    MCP_TOOL_ERROR = "mcp_tool_error", 422, false,
        "The MCP server's tool reported an error", "Read the message; fix the arguments or ask the person.";
    MCP_PROTOCOL = "mcp_protocol", 502, false,
        "The MCP peer broke the protocol", "The message says what it sent; report it to its authors.";
    SKILL_INVALID = "skill_invalid", 400, false,
        "A skill file cannot be used",
        "Each skill is a markdown file with front matter naming `name` and `when` (one line each).";
    CONFIG_INVALID = "config_invalid", 400, false,
        "A config file cannot be used",
        "The message names the file, the line and the field; `rein config check` checks every file.";
    AGENT_UNKNOWN = "agent_unknown", 404, false,
        "No agent of that name is defined",
        "`rein config show` lists the agents; define one under [agents.NAME] in a config file.";
    AGENT_CONFIG_INVALID = "agent_config_invalid", 400, false,
        "The hosted agents' configuration cannot be used",
        "Fix the named agent's entry under [agents] in the config file.";
    HOSTED_AGENT_UNAVAILABLE = "hosted_agent_unavailable", 503, false,
        "The hosted agent's program cannot be started",
        "Check the command after `--` (is it installed and on the PATH the config names?).";
    HOSTED_AGENT_FAILED = "hosted_agent_failed", 502, false,
        "The hosted agent's run did not finish well (it failed, was stopped, timed out or looped)",
        "Read the reason; `rein trace report SESSION` shows what it did.";
    SESSION_REFUSED = "session_refused", 409, false,
        "The agent session cannot be opened or used that way",
        "Read the named reason: the render mode, the protocol channel, or who holds the session's input.";
    GOLDEN_TRACE_INVALID = "golden_trace_invalid", 400, false,
        "The golden trace cannot be read", "Check the file: one canonical JSON event per line.";
    MEMORY_FULL = "memory_full", 409, false,
        "This memory scope holds as many items as it allows",
        "Forget items no longer needed (`rein memory forget`), or raise the scope's limit.";
    MEMORY_NOT_FOUND = "memory_not_found", 404, false,
        "No memory item with this id in this scope",
        "List the scope's items (`rein memory list`); an item of another scope is not reachable from here.";
    MEMORY_OFF = "memory_off", 404, false,
        "This surface keeps no memory",
        "Turn memory on for the agent it serves: `[agent.memory] enabled = true` in the config.";
    PLUGIN_NOT_FOUND = "plugin_not_found", 404, false,
        "No plugin of that name is installed",
        "List the installed plugins (`rein plugin list`); add one with `rein plugin add PATH|GIT-URL`.";
}

fn registry() -> &'static RwLock<BTreeMap<ErrorCode, CodeInfo>> {
    static REGISTRY: OnceLock<RwLock<BTreeMap<ErrorCode, CodeInfo>>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        RwLock::new(
            builtin()
                .into_iter()
                .map(|info| (info.code.clone(), info))
                .collect(),
        )
    })
}

/// Register a product's own code. Registering a code that already exists
/// with a different definition is refused with `invalid_input`; registering
/// the identical definition again is a no-op.
pub fn register(info: CodeInfo) -> Result<(), AgentError> {
    let clash = {
        let mut map = registry()
            .write()
            .unwrap_or_else(|poison| poison.into_inner());
        match map.get(&info.code) {
            Some(existing) => *existing != info,
            None => {
                map.insert(info.code.clone(), info.clone());
                false
            }
        }
    };
    // The lock is released before building the error: `AgentError::new`
    // reads the registry.
    if clash {
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            format!("error code `{}` is already registered", info.code),
        ));
    }
    Ok(())
}

/// What the registry knows about `code`.
pub fn lookup(code: &ErrorCode) -> Option<CodeInfo> {
    let map = registry()
        .read()
        .unwrap_or_else(|poison| poison.into_inner());
    map.get(code).cloned()
}

/// Every registered code, sorted.
pub fn all_codes() -> Vec<CodeInfo> {
    let map = registry()
        .read()
        .unwrap_or_else(|poison| poison.into_inner());
    map.values().cloned().collect()
}

/// An error with a stable code, for people and models.
#[derive(Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct AgentError {
    /// The stable code.
    pub code: ErrorCode,
    /// What happened, in a sentence.
    pub message: String,
    /// Structured context (status, provider message, attempts, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
    /// Whether trying again may succeed.
    pub retryable: bool,
}

impl fmt::Debug for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentError")
            .field("code", &self.code)
            .field("message", &self.message)
            .field("detail", &self.detail)
            .field("retryable", &self.retryable)
            .finish()
    }
}

impl AgentError {
    /// An error with `code`; retryable as the registry says for that code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let retryable = lookup(&code).is_some_and(|info| info.retryable);
        AgentError {
            code,
            message: message.into(),
            detail: None,
            retryable,
        }
    }

    /// Set the structured detail.
    pub fn with_detail(mut self, detail: Value) -> Self {
        self.detail = Some(detail);
        self
    }

    /// Add one field to the detail object (creating it if needed).
    pub fn with_field(mut self, key: &str, value: impl Into<Value>) -> Self {
        let mut map = match self.detail.take() {
            Some(Value::Object(map)) => map,
            Some(other) => {
                let mut map = Map::new();
                map.insert("value".into(), other);
                map
            }
            None => Map::new(),
        };
        map.insert(key.to_owned(), value.into());
        self.detail = Some(Value::Object(map));
        self
    }

    /// Override whether it is retryable.
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// Whether the error has this code.
    pub fn is(&self, code: &ErrorCode) -> bool {
        &self.code == code
    }

    /// RFC 9457 problem details (`application/problem+json`).
    pub fn to_problem(&self) -> Value {
        let info = lookup(&self.code);
        let mut problem = json!({
            "type": format!("urn:rein:error:{}", self.code),
            "title": info.as_ref().map_or("Error", |i| &i.title),
            "status": info.as_ref().map_or(500, |i| i.status),
            "detail": self.message,
            "code": self.code,
            "retryable": self.retryable,
        });
        if let Some(map) = problem.as_object_mut() {
            if let Some(info) = &info {
                map.insert("hint".into(), Value::String(info.hint.to_string()));
            }
            if let Some(detail) = &self.detail {
                map.insert("context".into(), detail.clone());
            }
        }
        problem
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn builtin_codes_carry_their_retry_default() {
        assert!(AgentError::new(codes::RATE_LIMITED, "x").retryable);
        assert!(!AgentError::new(codes::PROVIDER_AUTH, "x").retryable);
        assert!(!AgentError::new(ErrorCode::new("never_registered"), "x").retryable);
    }

    #[test]
    fn products_register_codes_once() {
        let info = CodeInfo {
            code: ErrorCode::new("acme_widget_jammed"),
            title: "The widget jammed".into(),
            status: 409,
            retryable: true,
            hint: "Unjam it.".into(),
        };
        assert!(register(info.clone()).is_ok());
        assert!(register(info.clone()).is_ok());
        let clash = CodeInfo {
            status: 500,
            ..info
        };
        let err = register(clash).err();
        assert_eq!(err.map(|e| e.code), Some(codes::INVALID_INPUT));
        let e = AgentError::new(ErrorCode::new("acme_widget_jammed"), "jammed");
        assert!(e.retryable);
        assert_eq!(e.to_problem()["status"], 409);
    }

    #[test]
    fn problem_json_shape() {
        let e = AgentError::new(codes::RATE_LIMITED, "slow down").with_field("status", 429);
        let p = e.to_problem();
        assert_eq!(p["type"], "urn:rein:error:rate_limited");
        assert_eq!(p["status"], 429);
        assert_eq!(p["detail"], "slow down");
        assert_eq!(p["code"], "rate_limited");
        assert_eq!(p["retryable"], true);
        assert_eq!(p["context"]["status"], 429);
        assert!(p["hint"].as_str().is_some_and(|h| !h.is_empty()));
    }

    #[test]
    fn codes_are_unique_snake_case() {
        let all = all_codes();
        for info in &all {
            let code = info.code.as_str();
            assert!(
                code.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{code}"
            );
        }
        assert!(all.len() >= 20);
    }
}
