//! A change refused as not read (`not_read`, `changed_since_read`),
//! answered with what it would change as it is now: the backend's
//! `read_first` call (`read_file` of an edit's path), made only where the
//! person's guards would run that read unasked — the hooks before a call,
//! the policy and the leases, through the same backend (a narrowed child's
//! included) — its result bounded and carried in the refusal with what it
//! saw, so it counts as the read and the model's next call can be the
//! change. A small model answers a bare refusal with words ("please read
//! the file") more often than with the read.
//!
//! Not here: the rule itself (`revisions`), a refusal without a read
//! (`results::refuse`).

use rein_approvals::{PermissionClass, Said, Verdict, gate};
use rein_sessions::{Event, ResultSource, ToolStatus};
use rein_tools::{Outcome, ToolBackend, ToolContext};
use rein_wire::{AgentError, ErrorCode, Revision, error::codes};
use serde_json::Value;

use super::results::refuse;
use super::{Around, Gate};
use crate::conversation::folds::ApprovalState;
use crate::conversation::folds::{MAX_ERROR_DETAIL, tool_error_content};
use crate::conversation::hooked;

/// A read made for a refused change: its tool, its result and what it saw.
struct ReadNow {
    tool: String,
    result: Value,
    seen: Revision,
}

impl Gate {
    /// Refuse the change `call` as `err` (it must not run on what is there
    /// now); not read, or read before it changed, it is answered with the
    /// read where one can be made.
    pub(super) async fn refuse_stale(
        &self,
        cx: &mut Around<'_>,
        events: &crate::Log,
        (call_id, tool, args, class): (&str, &str, &Value, Option<PermissionClass>),
        err: &AgentError,
    ) -> Result<(), AgentError> {
        let unread = err.code == codes::NOT_READ || err.code == codes::CHANGED_SINCE_READ;
        if !unread || self.tools.read_first(tool, args).is_none() {
            let (code, message) = (&err.code, &err.message);
            return refuse(cx.journal, call_id, tool, args, class, code, message).await;
        }
        // The refused call is recorded before its read runs: a call is
        // durable before anything runs for it, and has one result.
        cx.journal
            .append(vec![Event::ToolCalled {
                call_id: call_id.to_owned(),
                tool: tool.to_owned(),
                arguments: args.clone(),
                permission: class,
            }])
            .await?;
        let read = self.read_first(cx, events, call_id, tool, args).await?;
        answer(cx.journal, call_id, err, read).await
    }

    /// A change refused as `code` before it was gated — an edit whose text
    /// is not in the file (`edit_no_match`, `edit_ambiguous`) — of a file
    /// the model never saw as it is: refused as that instead, with the
    /// read (`refuse_stale`); the model edited text it guessed. `false`
    /// when it is no such refusal (nothing recorded).
    pub(super) async fn refuse_unseen(
        &self,
        cx: &mut Around<'_>,
        events: &crate::Log,
        call: (&str, &str, &Value, Option<PermissionClass>),
        code: &ErrorCode,
    ) -> Result<bool, AgentError> {
        let (_, tool, args, _) = call;
        let guessed = *code == codes::EDIT_NO_MATCH || *code == codes::EDIT_AMBIGUOUS;
        if !guessed || self.tools.read_first(tool, args).is_none() {
            return Ok(false);
        }
        let unseen = self
            .stale_change(cx, events, tool, args, &ApprovalState::None)
            .filter(|e| e.code == codes::NOT_READ || e.code == codes::CHANGED_SINCE_READ);
        let Some(err) = unseen else {
            return Ok(false);
        };
        self.refuse_stale(cx, events, call, &err).await?;
        Ok(true)
    }

    /// The read that shows what `tool` with `args` would change, made for
    /// the refused call `call_id` — `None` where there is none, the guards
    /// would not run it unasked, it failed, saw nothing, or its result is
    /// larger than a refusal carries.
    async fn read_first(
        &self,
        cx: &mut Around<'_>,
        events: &crate::Log,
        call_id: &str,
        tool: &str,
        args: &Value,
    ) -> Result<Option<ReadNow>, AgentError> {
        let Some((read_tool, read_args)) = self.tools.read_first(tool, args) else {
            return Ok(None);
        };
        let read_id = format!("{call_id}.read");
        let guards = &cx.agent.guards;
        let Ok(read_args) =
            hooked::before_call(guards, cx.journal, events, &read_id, &read_tool, read_args)
                .await?
        else {
            return Ok(None);
        };
        let Ok(read_args) = self.tools.prepare(&read_tool, read_args) else {
            return Ok(None);
        };
        let Ok(class) = self.tools.permission(&read_tool, &read_args) else {
            return Ok(None);
        };
        let policy = &cx.agent.guards.policy;
        if !class.is_read()
            || !matches!(
                gate(class, &read_tool, policy, &self.leases, Said::Nothing),
                Verdict::Run { .. }
            )
        {
            return Ok(None);
        }
        let ctx = ToolContext {
            call_id: call_id.to_owned(),
            session: cx.journal.session_id().to_owned(),
            elevated: false,
            asked: false,
            policy: policy.clone(),
            progress: rein_tools::Progress::none(),
            app: cx.agent.guards.app_context.clone(),
        };
        let outcome = self.tools.invoke(&read_tool, read_args.clone(), &ctx).await;
        let (outcome, records) =
            hooked::after_call(guards, &read_id, &read_tool, &read_args, outcome).await;
        if !records.is_empty() {
            cx.journal.append(records).await?;
        }
        let Outcome::Ok {
            mut result,
            seen: Some(seen),
            ..
        } = outcome
        else {
            return Ok(None);
        };
        // A key rein holds never enters the log nor a request, as with
        // every result (`results`).
        rein_wire::secrets::mask_named_json(&mut result, &cx.agent.guards.secrets);
        if serde_json::to_vec(&result).map_or(usize::MAX, |r| r.len()) > MAX_ERROR_DETAIL {
            return Ok(None);
        }
        Ok(Some(ReadNow {
            tool: read_tool,
            result,
            seen,
        }))
    }
}

/// The one result of the refused call `call_id` (its `tool.called` is
/// recorded): why, and — with the read made for it — what the read found,
/// carrying what it saw.
async fn answer(
    journal: &mut crate::conversation::journal::Journal,
    call_id: &str,
    err: &AgentError,
    read: Option<ReadNow>,
) -> Result<(), AgentError> {
    let (content, message, seen) = match read {
        Some(read) => {
            // Said without "read it first": the read is made, and a small
            // model told to read tends to tell the person to, instead.
            let resource = &read.seen.resource;
            let why = if err.code == codes::CHANGED_SINCE_READ {
                format!(
                    "`{resource}` changed since this conversation read it, so nothing was changed."
                )
            } else {
                format!(
                    "`{resource}` had not been read in this conversation, so nothing was changed."
                )
            };
            let message = format!(
                "{why} It is read now (`{}`): what it holds is under `read` below. Make the change again from that.",
                read.tool
            );
            let mut content = tool_error_content(&err.code, &message);
            content["read"] = read.result;
            (content, message, Some(read.seen))
        }
        None => (
            tool_error_content(&err.code, &err.message),
            err.message.clone(),
            None,
        ),
    };
    journal
        .append(vec![Event::ToolResult {
            call_id: call_id.to_owned(),
            status: ToolStatus::Error,
            source: ResultSource::Live,
            content,
            artifact: None,
            operation_id: None,
            undo: false,
            duration_ms: 0,
            seen,
        }])
        .await?;
    super::results::shown_refused(journal, call_id, &err.code, &message);
    Ok(())
}
