//! A read batch's sub-agents: which `delegate` calls start one (within the
//! turn's bound, with only tools the parent has), the session each gets
//! before its call is recorded, the `agent.started` naming it, the budget
//! it shares, and — after a restart — the sub-agent a dangling call
//! reattaches instead of starting another.
//!
//! Not here: running the child (`crate::subagent`), the batch (`reads`).

use std::sync::Arc;

use rein_sessions::Event;
use rein_tools::Outcome;
use rein_wire::ToolCall;
use rein_wire::{AgentError, error::codes};
use serde_json::json;

use super::{Around, Gate};
use crate::agent::{Child, Delegation, Helper, Spawn};
use crate::children::ChildOf;
use crate::conversation::folds::agent_of_call;
use crate::delegation::{self, DELEGATE};
use crate::settings::Budgets;

/// What one read of a batch is, as far as delegation goes.
pub(super) enum Delegate {
    /// Not a `delegate` call.
    No,
    /// A `delegate` call refused before any sub-agent started.
    Refused(Outcome),
    /// A sub-agent to start, or to reattach.
    Child(Planned),
}

/// A sub-agent a `delegate` call runs.
pub(super) struct Planned {
    pub(super) path: String,
    pub(super) session: String,
    task: String,
    tools: Option<Vec<String>>,
    /// The named agent it runs (`None`: one like its parent).
    agent: Option<String>,
    /// Started before a restart: its call and `agent.started` are in the log.
    pub(super) reattach: bool,
}

impl Planned {
    /// The `agent.started` recorded with the call (none for a reattached one).
    pub(super) fn started(&self, call_id: &str) -> Option<Event> {
        (!self.reattach).then(|| Event::AgentStarted {
            agent_path: self.path.clone(),
            task: self.task.clone(),
            call_id: Some(call_id.to_owned()),
            session: Some(self.session.clone()),
        })
    }
}

impl Gate {
    /// Plan each read of a batch: a `delegate` call past the turn's bound,
    /// with delegation off, or naming a tool the parent lacks is refused; a
    /// call recorded before a restart reattaches its sub-agent; any other
    /// gets a path and a new session (made now, so the call's record names
    /// it).
    pub(super) async fn plan_children(
        &mut self,
        cx: &mut Around<'_>,
        events: &crate::Log,
        reads: &[ToolCall],
    ) -> Result<Vec<Delegate>, AgentError> {
        let mut plans = Vec::with_capacity(reads.len());
        for ToolCall {
            id: call_id,
            tool,
            arguments: args,
        } in reads
        {
            if tool != DELEGATE {
                plans.push(Delegate::No);
                continue;
            }
            let tools =
                delegation::tools_of(args, self.tools.product.as_ref(), &cx.agent.guards.policy);
            if let Some((path, session, task)) = agent_of_call(events, call_id) {
                plans.push(Delegate::Child(Planned {
                    path,
                    session,
                    task,
                    tools: tools.ok().flatten(),
                    agent: delegation::agent_of(args).map(str::to_owned),
                    reattach: true,
                }));
                continue;
            }
            let Some(bound) = cx.agent.delegation.as_ref().map(|d| d.max_per_turn) else {
                plans.push(refused(
                    "delegation is off in this conversation; do the task yourself",
                ));
                continue;
            };
            if self.delegated >= bound {
                plans.push(refused(
                    "no more sub-agents can be started in this turn; do the task yourself",
                ));
                continue;
            }
            let tools = match tools {
                Ok(tools) => tools,
                Err(err) => {
                    plans.push(Delegate::Refused(Outcome::from_error(&err)));
                    continue;
                }
            };
            let named = delegation::agent_of(args).map(str::to_owned);
            if let Some(name) = &named
                && let Some(why) = self.helper_refused(cx, name)
            {
                plans.push(refused(&why));
                continue;
            }
            self.delegated += 1;
            let path = format!("{}/agent-{}", cx.journal.agent(), self.delegated);
            let mut metadata = json!({
                "assistant": cx.agent.profile.name,
                "model": cx.agent.profile.model,
                "parent_session": cx.journal.session_id(),
                "agent_path": path,
            });
            if let Some(name) = &named {
                metadata["agent"] = json!(name);
            }
            let task = delegation::task_of(args).unwrap_or_default().to_owned();
            let guards = &cx.agent.guards;
            guards.child_session(
                &ChildOf {
                    agent_path: Some(&path),
                    agent: named.as_deref(),
                    ..ChildOf::under(guards, cx.journal.session_id(), &task)
                },
                &mut metadata,
            );
            let info = cx.journal.store().create_session(metadata).await?;
            plans.push(Delegate::Child(Planned {
                path,
                session: info.id,
                task,
                tools,
                agent: named,
                reattach: false,
            }));
        }
        Ok(plans)
    }

    /// Why a `delegate` call may not name `name`, if it may not: no such
    /// helper, or an external one this conversation's guards cannot hold.
    fn helper_refused(&self, cx: &Around<'_>, name: &str) -> Option<String> {
        let helpers = cx.agent.delegation.as_ref().map(|d| &d.helpers);
        match helpers.and_then(|h| h.get(name)) {
            None => {
                let known: Vec<&str> = helpers
                    .into_iter()
                    .flat_map(|h| h.keys().map(String::as_str))
                    .collect();
                Some(format!(
                    "there is no agent `{name}` to hand the task to (the agents: {}); leave `agent` out for a sub-agent like you",
                    if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                ))
            }
            Some(Helper::External(_)) => {
                crate::helpers::external_refused(&cx.agent.guards)
                    .map(|why| format!("agent `{name}` is a hosted program and {why}; do the task yourself or with a sub-agent"))
            }
            Some(Helper::Agent(_)) => None,
        }
    }

    /// What a planned sub-agent runs with: this agent's definition made a
    /// child's by the one rule ([`Agent::child`]: every guard kept, the
    /// tools its call named — over a named agent's own words, budgets and
    /// checks when the call names one), writes off when the delegation says
    /// so, `budgets` (its share), one level less of delegation, the
    /// parent's watchers, and `cancel` (the parent's stop). A hosted helper
    /// gets the task and the session, and its own spawner.
    pub(super) fn child(
        &self,
        cx: &Around<'_>,
        planned: &Planned,
        budgets: Budgets,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> (Arc<dyn Spawn>, Child) {
        // A call reattached after a restart runs even if the product turned
        // delegation off meanwhile: it was started under the old settings.
        let settings = cx.agent.delegation.clone().unwrap_or_default();
        let helper = planned
            .agent
            .as_ref()
            .and_then(|name| settings.helpers.get(name));
        let own = match helper {
            Some(Helper::Agent(agent)) => Some(agent.as_ref()),
            _ => None,
        };
        let mut agent = cx.agent.child(own, planned.tools.clone());
        agent.guards.given(&ChildOf {
            agent_path: Some(&planned.path),
            agent: planned.agent.as_deref(),
            ..ChildOf::under(&cx.agent.guards, cx.journal.session_id(), &planned.task)
        });
        agent.guards.policy.writes_allowed &= settings.writes;
        agent.budgets = budgets;
        if own.is_none() {
            agent.verification = None;
            agent.profile.system.push(settings.instructions.clone());
        }
        agent.delegation = settings.for_child();
        let child = Child {
            store: cx.journal.store().clone(),
            agent,
            agent_path: planned.path.clone(),
            session: planned.session.clone(),
            task: planned.task.clone(),
            graph_task: cx.task.map(str::to_owned),
            reattach: planned.reattach,
            ui: cx.journal.ui_sender(),
            cancel: cancel.clone(),
        };
        let spawner: Arc<dyn Spawn> = match helper {
            Some(Helper::External(external)) => {
                Arc::new(crate::helpers::ExternalSpawn(external.clone()))
            }
            _ => settings.spawner.clone(),
        };
        (spawner, child)
    }

    /// Each sub-agent's share of what the turn has left, `children` of them
    /// starting together.
    pub(super) fn child_budgets(&self, cx: &Around<'_>, children: u32) -> Budgets {
        let settings: Option<&Delegation> = cx.agent.delegation.as_ref();
        let max_steps = settings.map_or(Delegation::default().max_steps, |d| d.max_steps);
        let elapsed = cx.spend.elapsed();
        delegation::share(
            &cx.agent.budgets,
            cx.spend.spent(),
            elapsed,
            children,
            max_steps,
        )
    }
}

fn refused(message: &str) -> Delegate {
    Delegate::Refused(Outcome::failed(codes::DELEGATION_REFUSED, message))
}
