//! Permissions and approvals: what a tool call may do without a person.
//!
//! Every call has a [`PermissionClass`] *for its arguments* (the backend
//! says which). `read` runs; `reversible_write` runs and its operation id is
//! offered to the person as an undo; `source_file_write` and `destructive`
//! wait for a person. The [`Policy`] can forbid writes outright. A person's
//! approval may come with a lease ([`LeaseScope`]) so the same kind of call
//! does not ask again in this run.
//!
//! Two rules hold over every lease: a person's "no" to a call refuses it
//! whatever lease is held ([`Said::No`] in the [`gate`]), and a lease ends
//! with the run it was granted in ([`Leases::of_open_run`] is how a
//! resumed run learns which leases still hold).
//!
//! The [`gate`] decides; [`decide`] is the only way to settle a pending
//! approval, and it takes a [`Surface`] — something only a person's surface
//! (the terminal, `rein approve`, the HTTP API) constructs. Tools get no
//! store and no surface, so model output cannot approve its own writes.

use std::collections::BTreeSet;

use rein_sessions::Event;

pub use rein_wire::permission::{Decision, LeaseScope, PermissionClass, Policy};

mod family;
mod person;

pub use family::{Member, Waiting, family, family_read, family_read_cached, waiting, waiting_in};
pub use person::{Delivery, decide, decided, say, stop};

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

    /// The leases a person granted in the run still open at the end of
    /// `events` (a session's log, oldest first): only approvals asked and
    /// decided after that run's `run.started`. A lease granted in an earlier
    /// turn never reaches a later one, whichever process reads the log.
    pub fn of_open_run(events: &[Event]) -> Leases {
        let start = events
            .iter()
            .rposition(|e| matches!(e, Event::RunStarted { .. }))
            .map_or(events.len(), |at| at + 1);
        let run = &events[start..];
        let mut leases = Leases::default();
        for event in run {
            let Event::ApprovalDecided {
                approval_id,
                decision,
                lease: Some(scope),
                ..
            } = event
            else {
                continue;
            };
            if *decision != Decision::Approved {
                continue;
            }
            // A protected call's yes leases nothing (see `gate`).
            let tool = run.iter().find_map(|e| match e {
                Event::ApprovalRequested {
                    approval_id: a,
                    tool,
                    permission,
                    ..
                } if a == approval_id && permission.leasable() => Some(tool),
                _ => None,
            });
            if let Some(tool) = tool {
                leases.grant(tool, *scope);
            }
        }
        leases
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
    /// Refuse: a person said no to this call.
    Denied,
    /// Refuse: the policy forbids it.
    Refuse {
        /// Why, for the model.
        reason: String,
    },
}

/// What a person has already said about one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Said {
    /// Nothing yet (or the call was never asked about).
    Nothing,
    /// Yes.
    Yes,
    /// No (denied, expired or stopped): nothing overrides it.
    No,
}

/// Decide what happens to a call of `tool` with `class`, given what a
/// person `said` about this very call. A person's "no" wins over every
/// lease and every policy; a "yes" or a lease lets a gated call run — a
/// lease never one of the protected class, which only this call's "yes" runs.
pub fn gate(
    class: PermissionClass,
    tool: &str,
    policy: &Policy,
    leases: &Leases,
    said: Said,
) -> Verdict {
    if said == Said::No {
        return Verdict::Denied;
    }
    if !class.is_read() && !policy.writes_allowed {
        return Verdict::Refuse {
            reason: format!("writes are not allowed in this conversation, so `{tool}` was not run"),
        };
    }
    if !class.needs_approval() {
        return Verdict::Run { elevated: false };
    }
    if said == Said::Yes || (class.leasable() && leases.covers(tool)) {
        return Verdict::Run {
            elevated: policy.elevate_approved,
        };
    }
    Verdict::Ask
}

/// A person's surface: the only kind of thing that can decide an approval.
/// Constructed by surfaces, never handed to tools.
///
/// What the type guarantees: model output cannot decide. Tools get no
/// `Surface` and no store, and rein's own code constructs one only where a
/// person acts (the terminal's prompt, `rein approve` / `say` / `stop`, an
/// eval's scripted person), so a decision in the log always came through a
/// surface and names it (`by`). What it cannot guarantee: that the code of
/// the product calling [`Surface::product`] asked a person — that is the
/// product's promise to keep, and the name it gives is what the log shows.
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

    /// A `rein` command a person typed (`rein approve`, `rein say`,
    /// `rein stop`): `verb` is the command's own word, fixed in the binary.
    pub fn command(verb: &'static str) -> Self {
        Surface {
            name: format!("rein {verb}"),
        }
    }

    /// A product's own UI deciding for `person` (say, the shop's admin
    /// page and the signed-in user): recorded as `ui:person`.
    pub fn product(ui: &str, person: &str) -> Self {
        Surface {
            name: format!("{ui}:{person}"),
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

/// A person's answer, read the one way every surface reads it: `y` or
/// `yes` approves this call, `a` or `always` approves the tool for the rest
/// of the run, `n`, `no` or nothing denies — any case, spaces around
/// ignored. Anything else is `invalid_input` ([`Answer::typed`] reads it as
/// a no instead, for a `[y/N]` prompt).
impl std::str::FromStr for Answer {
    type Err = rein_wire::AgentError;

    fn from_str(said: &str) -> Result<Answer, rein_wire::AgentError> {
        match said.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Ok(Answer::Approve(LeaseScope::Once)),
            "a" | "always" => Ok(Answer::Approve(LeaseScope::Tool)),
            "" | "n" | "no" => Ok(Answer::Deny),
            _ => Err(rein_wire::AgentError::new(
                rein_wire::error::codes::INVALID_INPUT,
                format!("the answer is yes, always or no, not `{}`", said.trim()),
            )),
        }
    }
}

impl Answer {
    /// What a line typed at a `[y/N]` prompt means: anything but a yes is a
    /// no (the safe reading of a slip).
    pub fn typed(line: &str) -> Answer {
        line.parse().unwrap_or(Answer::Deny)
    }

    /// Whether `line` typed at a `[y/N]` question is a yes.
    pub fn is_yes(line: &str) -> bool {
        matches!(Answer::typed(line), Answer::Approve(_))
    }

    /// A decision as a surface names it (`yes` / `no`, and `always`
    /// beside a yes): `--always` or `"always": true` with a no is refused.
    pub fn decided(word: &str, always: bool) -> Result<Answer, rein_wire::AgentError> {
        match (word.parse::<Answer>()?, always) {
            (Answer::Approve(_), true) => Ok(Answer::Approve(LeaseScope::Tool)),
            (Answer::Deny, true) => Err(rein_wire::AgentError::new(
                rein_wire::error::codes::INVALID_INPUT,
                "--always goes with yes (`always` in the API): it approves this tool for the rest of the turn; a no is for this call only",
            )),
            (answer, false) => Ok(answer),
        }
    }

    /// The decision and lease `approval.decided` records.
    pub fn stored(self) -> (Decision, Option<LeaseScope>) {
        match self {
            Answer::Approve(scope) => (Decision::Approved, Some(scope)),
            Answer::Deny => (Decision::Denied, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[expect(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
    fn the_gate_follows_class_policy_and_leases() {
        let policy = Policy::default();
        let mut leases = Leases::default();
        assert_eq!(
            gate(
                PermissionClass::Read,
                "read",
                &policy,
                &leases,
                Said::Nothing
            ),
            Verdict::Run { elevated: false }
        );
        assert_eq!(
            gate(
                PermissionClass::ReversibleWrite,
                "set",
                &policy,
                &leases,
                Said::Nothing
            ),
            Verdict::Run { elevated: false }
        );
        assert_eq!(
            gate(
                PermissionClass::SourceFileWrite,
                "write",
                &policy,
                &leases,
                Said::Nothing
            ),
            Verdict::Ask
        );
        assert_eq!(
            gate(
                PermissionClass::Destructive,
                "delete",
                &policy,
                &leases,
                Said::Nothing
            ),
            Verdict::Ask
        );
        // A product's own write asks like a file write, and a "no" wins.
        assert_eq!(
            gate(
                PermissionClass::Write,
                "set_price",
                &policy,
                &leases,
                Said::Nothing
            ),
            Verdict::Ask
        );
        assert_eq!(
            gate(
                PermissionClass::Write,
                "set_price",
                &policy,
                &leases,
                Said::No
            ),
            Verdict::Denied
        );
        leases.grant("write", LeaseScope::Once);
        assert_eq!(
            gate(
                PermissionClass::SourceFileWrite,
                "write",
                &policy,
                &leases,
                Said::Nothing
            ),
            Verdict::Ask
        );
        leases.grant("write", LeaseScope::Tool);
        assert_eq!(
            gate(
                PermissionClass::SourceFileWrite,
                "write",
                &policy,
                &leases,
                Said::Nothing
            ),
            Verdict::Run { elevated: true }
        );
        assert_eq!(
            gate(
                PermissionClass::Destructive,
                "delete",
                &policy,
                &leases,
                Said::Nothing
            ),
            Verdict::Ask
        );
        leases.grant("delete", LeaseScope::Run);
        assert_eq!(
            gate(
                PermissionClass::Destructive,
                "rm",
                &policy,
                &leases,
                Said::Nothing
            ),
            Verdict::Run { elevated: true }
        );
        let locked = Policy {
            writes_allowed: false,
            ..Policy::default()
        };
        assert!(matches!(
            gate(
                PermissionClass::ReversibleWrite,
                "set",
                &locked,
                &leases,
                Said::Nothing
            ),
            Verdict::Refuse { .. }
        ));
        assert_eq!(
            gate(
                PermissionClass::Read,
                "read",
                &locked,
                &leases,
                Said::Nothing
            ),
            Verdict::Run { elevated: false }
        );
    }

    #[test]
    fn no_lease_covers_a_protected_call() {
        let mut leases = Leases::default();
        leases.grant("write_file", LeaseScope::Tool);
        leases.grant("write_file", LeaseScope::Run);
        let policy = Policy::default();
        let class = PermissionClass::Protected;
        assert_eq!(
            gate(class, "write_file", &policy, &leases, Said::Nothing),
            Verdict::Ask
        );
        assert_eq!(
            gate(class, "write_file", &policy, &leases, Said::Yes),
            Verdict::Run { elevated: true }
        );
        assert_eq!(
            gate(class, "write_file", &policy, &leases, Said::No),
            Verdict::Denied
        );
        // The same lease still covers the tool's ordinary writes.
        assert_eq!(
            gate(
                PermissionClass::SourceFileWrite,
                "write_file",
                &policy,
                &leases,
                Said::Nothing
            ),
            Verdict::Run { elevated: true }
        );
    }

    #[test]
    fn a_persons_no_wins_over_every_lease() {
        let mut leases = Leases::default();
        leases.grant("write", LeaseScope::Run);
        let policy = Policy::default();
        for class in [
            PermissionClass::SourceFileWrite,
            PermissionClass::Destructive,
        ] {
            assert_eq!(
                gate(class, "write", &policy, &leases, Said::No),
                Verdict::Denied
            );
            assert_eq!(
                gate(class, "write", &policy, &leases, Said::Yes),
                Verdict::Run { elevated: true }
            );
        }
        let locked = Policy {
            writes_allowed: false,
            ..Policy::default()
        };
        assert!(matches!(
            gate(
                PermissionClass::SourceFileWrite,
                "write",
                &locked,
                &leases,
                Said::Yes
            ),
            Verdict::Refuse { .. }
        ));
    }

    fn asked(id: &str, tool: &str) -> Event {
        Event::ApprovalRequested {
            approval_id: id.into(),
            call_id: format!("call-{id}"),
            tool: tool.into(),
            arguments: serde_json::Value::Null,
            permission: PermissionClass::SourceFileWrite,
            preview: None,
            bound_to: None,
        }
    }

    fn decided(id: &str, answer: Answer) -> Event {
        let (decision, lease) = answer.stored();
        Event::ApprovalDecided {
            approval_id: id.into(),
            decision,
            by: "terminal".into(),
            lease,
        }
    }

    fn run_started() -> Event {
        Event::RunStarted {
            run_id: "r".into(),
            turn_id: "t".into(),
            budgets: serde_json::Value::Null,
            profile: serde_json::Value::Null,
        }
    }

    #[test]
    fn leases_are_read_from_the_open_run_only() {
        let earlier = vec![
            run_started(),
            asked("a1", "write_file"),
            decided("a1", Answer::Approve(LeaseScope::Tool)),
            asked("a2", "delete_file"),
            decided("a2", Answer::Approve(LeaseScope::Run)),
        ];
        let leases = Leases::of_open_run(&earlier);
        assert!(leases.covers("write_file") && leases.covers("anything"));
        // A new run starts: nothing of the old one carries over.
        let mut log = earlier.clone();
        log.push(run_started());
        log.push(asked("a3", "write_file"));
        log.push(decided("a3", Answer::Deny));
        assert_eq!(Leases::of_open_run(&log), Leases::default());
        // A once-approval and a denial grant nothing; a tool lease grants
        // that tool only.
        log.push(asked("a4", "write_file"));
        log.push(decided("a4", Answer::Approve(LeaseScope::Once)));
        assert_eq!(Leases::of_open_run(&log), Leases::default());
        log.push(asked("a5", "write_file"));
        log.push(decided("a5", Answer::Approve(LeaseScope::Tool)));
        let leases = Leases::of_open_run(&log);
        assert!(leases.covers("write_file") && !leases.covers("delete_file"));
        // A decision whose request is not in this run grants nothing.
        let mut stray = vec![run_started()];
        stray.push(decided("a1", Answer::Approve(LeaseScope::Run)));
        assert_eq!(Leases::of_open_run(&stray), Leases::default());
        assert_eq!(Leases::of_open_run(&[]), Leases::default());
    }

    #[test]
    fn an_unknown_stored_scope_is_the_narrowest() {
        for scope in [LeaseScope::Once, LeaseScope::Tool, LeaseScope::Run] {
            assert_eq!(LeaseScope::from_stored(scope.as_str()), scope);
        }
        assert_eq!(LeaseScope::from_stored("forever"), LeaseScope::Once);
    }
}

#[cfg(test)]
mod answer_tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn one_reading_of_a_persons_answer() {
        for yes in ["y", "Y", " yes ", "YES"] {
            assert_eq!(
                yes.parse::<Answer>().unwrap(),
                Answer::Approve(LeaseScope::Once)
            );
        }
        for always in ["a", "always", "Always"] {
            assert_eq!(
                always.parse::<Answer>().unwrap(),
                Answer::Approve(LeaseScope::Tool)
            );
        }
        for no in ["", "n", "No", " no"] {
            assert_eq!(no.parse::<Answer>().unwrap(), Answer::Deny);
        }
        // A slip at a [y/N] prompt is a no, never a yes.
        for slip in ["yy", "yes please", "ok", "\u{1b}[A"] {
            assert!(slip.parse::<Answer>().is_err());
            assert_eq!(Answer::typed(slip), Answer::Deny);
        }
        assert_eq!(
            Answer::decided("yes", true).unwrap(),
            Answer::Approve(LeaseScope::Tool)
        );
        assert!(Answer::decided("no", true).is_err());
        assert!(Answer::decided("maybe", false).is_err());
    }
}

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
