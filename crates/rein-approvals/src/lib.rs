//! Permissions and approvals: what a tool call may do without a person.
//!
//! Every call has a [`PermissionClass`] *for its arguments* (the backend
//! says which). `read` runs; `reversible_write` runs and its operation id is
//! offered to the person as an undo; `source_file_write` and `destructive`
//! wait for a person. The [`Policy`] can forbid writes outright. A person's
//! approval may come with a lease ([`LeaseScope`]) so the same kind of call
//! does not ask again in this run.
//!
//! The [`gate`] decides; [`decide`] is the only way to settle a pending
//! approval, and it takes a [`Surface`] — something only a person's surface
//! (the terminal, `rein approve`, the HTTP API) constructs. Tools get no
//! store and no surface, so model output cannot approve its own writes.

use std::collections::BTreeSet;
use std::time::Duration;

use rein_sessions::{Event, NewEvent, Store};
use rein_wire::{AgentError, error::codes};
use serde::{Deserialize, Serialize};

/// What a tool call may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionClass {
    /// Reads only: runs without asking.
    Read,
    /// A write that can be undone: runs; the undo is offered.
    ReversibleWrite,
    /// Writes the person's source files: waits for a person.
    SourceFileWrite,
    /// Cannot be undone: waits for a person.
    Destructive,
}

impl PermissionClass {
    /// The stored name (`read`, `reversible_write`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionClass::Read => "read",
            PermissionClass::ReversibleWrite => "reversible_write",
            PermissionClass::SourceFileWrite => "source_file_write",
            PermissionClass::Destructive => "destructive",
        }
    }

    /// Whether a person must approve it.
    pub fn needs_approval(self) -> bool {
        matches!(
            self,
            PermissionClass::SourceFileWrite | PermissionClass::Destructive
        )
    }

    /// Whether it only reads.
    pub fn is_read(self) -> bool {
        self == PermissionClass::Read
    }
}

/// What the product allows in this conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Whether any write may run (approved or not).
    pub writes_allowed: bool,
    /// Hosts tools may reach (empty: none). Tools consult it; rein passes it on.
    pub egress_allow: Vec<String>,
    /// Whether an approved call runs elevated (a tool may then skip its own
    /// second confirmation).
    pub elevate_approved: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            writes_allowed: true,
            egress_allow: Vec::new(),
            elevate_approved: true,
        }
    }
}

/// How long an approval lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaseScope {
    /// This call only.
    Once,
    /// This tool, for the rest of the run.
    Tool,
    /// Every gated call, for the rest of the run.
    Run,
}

impl LeaseScope {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseScope::Once => "once",
            LeaseScope::Tool => "tool",
            LeaseScope::Run => "run",
        }
    }
}

/// The approvals granted for the rest of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leases {
    tools: BTreeSet<String>,
    run: bool,
}

impl Leases {
    /// Record an approval's lease.
    pub fn grant(&mut self, tool: &str, scope: LeaseScope) {
        match scope {
            LeaseScope::Once => {}
            LeaseScope::Tool => {
                self.tools.insert(tool.to_owned());
            }
            LeaseScope::Run => self.run = true,
        }
    }

    /// Whether `tool` is covered.
    pub fn covers(&self, tool: &str) -> bool {
        self.run || self.tools.contains(tool)
    }
}

/// What the gate says about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run it (`elevated` when a person's approval covers it).
    Run {
        /// Whether it runs with a person's approval.
        elevated: bool,
    },
    /// Ask a person first.
    Ask,
    /// Refuse: the policy forbids it.
    Refuse {
        /// Why, for the model.
        reason: String,
    },
}

/// Decide what happens to a call of `tool` with `class`.
pub fn gate(class: PermissionClass, tool: &str, policy: &Policy, leases: &Leases) -> Verdict {
    if !class.is_read() && !policy.writes_allowed {
        return Verdict::Refuse {
            reason: format!("writes are not allowed in this conversation, so `{tool}` was not run"),
        };
    }
    if !class.needs_approval() {
        return Verdict::Run { elevated: false };
    }
    if leases.covers(tool) {
        return Verdict::Run {
            elevated: policy.elevate_approved,
        };
    }
    Verdict::Ask
}

/// A person's surface: the only kind of thing that can decide an approval.
/// Constructed by surfaces, never handed to tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Surface {
    name: String,
}

impl Surface {
    /// The terminal chat's y/N prompt.
    pub fn terminal() -> Self {
        Surface {
            name: "terminal".into(),
        }
    }

    /// The `rein approve` command.
    pub fn command_line() -> Self {
        Surface {
            name: "rein approve".into(),
        }
    }

    /// The HTTP API, for an authenticated person.
    pub fn http(person: &str) -> Self {
        Surface {
            name: format!("http:{person}"),
        }
    }

    /// An eval run's simulated person, giving the answers its case
    /// scripts (`cargo xtask eval`).
    pub fn simulated_person() -> Self {
        Surface {
            name: "eval (simulated person)".into(),
        }
    }

    /// Who decides, as recorded.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Yes, with a lease.
    Approve(LeaseScope),
    /// No.
    Deny,
}

/// Settle a pending approval of `session` from a person's `surface`:
/// takes the session's lock, checks the approval is pending, appends
/// `approval.decided`, releases. Errors: `session_locked` while a runner
/// holds the session, `invalid_input` for an approval that is not pending.
pub async fn decide(
    store: &dyn Store,
    session: &str,
    approval_id: &str,
    answer: Answer,
    surface: &Surface,
) -> Result<(), AgentError> {
    let lease = store
        .acquire(session, surface.name(), Duration::from_secs(30))
        .await?;
    let result = async {
        let control = store.control(session).await?;
        if !control.pending.iter().any(|p| p.approval_id == approval_id) {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                format!("approval `{approval_id}` is not pending in session {session}"),
            ));
        }
        let (decision, scope) = match answer {
            Answer::Approve(scope) => ("approved", Some(scope.as_str().to_owned())),
            Answer::Deny => ("denied", None),
        };
        store
            .append(
                &lease,
                vec![NewEvent::main(Event::ApprovalDecided {
                    approval_id: approval_id.to_owned(),
                    decision: decision.into(),
                    by: surface.name().to_owned(),
                    lease: scope,
                })],
            )
            .await
            .map(|_| ())
    }
    .await;
    store.release(&lease).await?;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_follows_class_policy_and_leases() {
        let policy = Policy::default();
        let mut leases = Leases::default();
        assert_eq!(
            gate(PermissionClass::Read, "read", &policy, &leases),
            Verdict::Run { elevated: false }
        );
        assert_eq!(
            gate(PermissionClass::ReversibleWrite, "set", &policy, &leases),
            Verdict::Run { elevated: false }
        );
        assert_eq!(
            gate(PermissionClass::SourceFileWrite, "write", &policy, &leases),
            Verdict::Ask
        );
        assert_eq!(
            gate(PermissionClass::Destructive, "delete", &policy, &leases),
            Verdict::Ask
        );
        leases.grant("write", LeaseScope::Once);
        assert_eq!(
            gate(PermissionClass::SourceFileWrite, "write", &policy, &leases),
            Verdict::Ask
        );
        leases.grant("write", LeaseScope::Tool);
        assert_eq!(
            gate(PermissionClass::SourceFileWrite, "write", &policy, &leases),
            Verdict::Run { elevated: true }
        );
        assert_eq!(
            gate(PermissionClass::Destructive, "delete", &policy, &leases),
            Verdict::Ask
        );
        leases.grant("delete", LeaseScope::Run);
        assert_eq!(
            gate(PermissionClass::Destructive, "rm", &policy, &leases),
            Verdict::Run { elevated: true }
        );
        let locked = Policy {
            writes_allowed: false,
            ..Policy::default()
        };
        assert!(matches!(
            gate(PermissionClass::ReversibleWrite, "set", &locked, &leases),
            Verdict::Refuse { .. }
        ));
        assert_eq!(
            gate(PermissionClass::Read, "read", &locked, &leases),
            Verdict::Run { elevated: false }
        );
    }
}
