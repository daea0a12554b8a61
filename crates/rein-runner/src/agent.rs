//! [`Agent`]: one definition of what a conversation runs with — the model
//! provider, the tools, the words ([`Profile`]), the [`Guards`], budgets,
//! result bounds, the context policy, the verification gate, delegation,
//! prices, how long an approval waits and standing text (pinned memory) — and the one place a
//! conversation is opened from it ([`Agent::open`], [`Agent::reopen`],
//! [`Agent::open_session`]).
//!
//! A product builds it in code; `rein-config` builds it from layered
//! files; `rein chat`, `rein serve`, `rein run`, `rein mcp serve`, `rein
//! acp`, the evals, sub-agents and graph tasks all open conversations
//! through it, so a setting made once reaches every one of them. A
//! reopened session takes the same value: nothing is passed twice.
//!
//! The definition is recursive — it names the agents it may delegate to
//! ([`Delegation`], [`Helper`]), each an [`Agent`] or an
//! [`ExternalAgent`], started through a [`Spawn`] — so those types live
//! here with it, and the modules that act on them (`delegation`,
//! `helpers`, `subagent`) depend on this one, never back.
//!
//! Not here: the loop (`conversation`), loading from files (`rein-config`),
//! the rule a child's definition follows ([`Guards::for_child`]), the
//! `delegate` tool (`delegation`), starting a helper (`helpers`,
//! `subagent`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rein_gateway::Provider;
use rein_sessions::Store;
use rein_tools::{Bounds, Outcome, ToolBackend};
use rein_wire::{AgentError, PriceTable};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::guards::Guards;
use crate::settings::{Budgets, Profile, Spent, Verification};
use crate::standing::Standing;
use rein_context::window::ContextPolicy;
use rein_wire::UiEvent;

/// Everything a conversation runs with. Cheap to clone (the provider and
/// the tools are shared).
#[derive(Clone)]
pub struct Agent {
    /// The model provider.
    pub provider: Arc<dyn Provider>,
    /// The product's tools (rein's own are added beside them). Fixed for a
    /// conversation once it is open.
    pub tools: Arc<dyn ToolBackend>,
    /// The words: name, system prompt, model, output limit, reasoning.
    pub profile: Profile,
    /// Policy, hooks, app context, secrets, authority: what every child
    /// keeps.
    pub guards: Guards,
    /// The per-turn budgets.
    pub budgets: Budgets,
    /// Bounds on what a tool result shows the model.
    pub bounds: Bounds,
    /// How the context window is kept (soft pruning, hard compaction).
    pub context: ContextPolicy,
    /// A check each turn must pass to count as finished.
    pub verification: Option<Verification>,
    /// Whether the model may hand tasks to sub-agents (`delegate`).
    pub delegation: Option<Delegation>,
    /// Prices for cost (default: rein's built-in table; a model missing
    /// from it has no cost, never a cost of zero). A call's cost is fixed
    /// when it completes, so the prices travel with the definition.
    pub prices: PriceTable,
    /// How long a pending approval waits for a person before it expires
    /// (checked when the turn resumes).
    pub approval_ttl: Duration,
    /// Text the stable prefix carries, read at each turn's start (pinned
    /// memory): see [`Standing`].
    pub standing: Option<Arc<dyn Standing>>,
    /// Whether the model is offered `server_info`: rein's own facts about
    /// this conversation (version, model, policy, tools, skills, what is
    /// left of the turn's budgets). Off by default: it costs every request
    /// its definition.
    pub server_info: bool,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("provider", &self.provider.name())
            .field("profile", &self.profile)
            .field("guards", &self.guards)
            .field("budgets", &self.budgets)
            .field(
                "verification",
                &self.verification.as_ref().map(|v| &v.command),
            )
            .field("delegation", &self.delegation)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// An agent calling `provider` with `tools` and `profile`'s words, with
    /// rein's defaults for the rest: the default policy, no hooks, the
    /// default budgets and bounds, no verification, no sub-agents, rein's
    /// built-in prices, a day for an approval.
    pub fn new(provider: Arc<dyn Provider>, tools: Arc<dyn ToolBackend>, profile: Profile) -> Self {
        Agent {
            provider,
            tools,
            profile,
            guards: Guards::default(),
            budgets: Budgets::default(),
            bounds: Bounds::default(),
            context: ContextPolicy::default(),
            verification: None,
            delegation: None,
            prices: PriceTable::builtin(),
            approval_ttl: Duration::from_secs(24 * 60 * 60),
            standing: None,
            server_info: false,
        }
    }

    /// With `server_info` offered to the model (see [`Agent::server_info`]).
    #[must_use]
    pub fn with_server_info(mut self) -> Self {
        self.server_info = true;
        self
    }

    /// With `tools` in place of the ones it was made with.
    pub fn with_tools(mut self, tools: Arc<dyn ToolBackend>) -> Self {
        self.tools = tools;
        self
    }

    /// With `tools` offered beside the ones it has (a product's own tools
    /// beside a composed agent's file tools and servers). A call goes to
    /// the first that defines its name, so a tool it already has keeps
    /// its name; the catalog offers each name once.
    pub fn with_more_tools(mut self, tools: Arc<dyn ToolBackend>) -> Self {
        self.tools = Arc::new(rein_tools::Joined::new(vec![self.tools, tools]));
        self
    }

    /// With this policy.
    pub fn with_policy(mut self, policy: rein_approvals::Policy) -> Self {
        self.guards.policy = policy;
        self
    }

    /// With this hook asked after the ones it has.
    pub fn with_hook(mut self, hook: Arc<dyn crate::hooks::Hook>) -> Self {
        self.guards.hooks.push(hook);
        self
    }

    /// With the product's context handed to every tool call and hook.
    pub fn with_app_context(mut self, context: rein_tools::AppContext) -> Self {
        self.guards.app_context = context;
        self
    }

    /// With the product's factory for each child's context, authority and
    /// session record (see [`crate::ChildFactory`]).
    pub fn with_child_factory(mut self, factory: Arc<dyn crate::ChildFactory>) -> Self {
        self.guards.children = Some(factory);
        self
    }

    /// With these budgets per turn.
    pub fn with_budgets(mut self, budgets: Budgets) -> Self {
        self.budgets = budgets;
        self
    }

    /// With standing text in the stable prefix (pinned memory), read at
    /// each turn's start.
    pub fn with_standing(mut self, standing: Arc<dyn Standing>) -> Self {
        self.standing = Some(standing);
        self
    }

    /// With a check each turn must pass.
    pub fn with_verification(mut self, verification: Verification) -> Self {
        self.verification = Some(verification);
        self
    }

    /// Letting the model hand tasks to sub-agents.
    pub fn with_delegation(mut self, delegation: Delegation) -> Self {
        self.delegation = Some(delegation);
        self
    }

    /// With these prices.
    pub fn with_prices(mut self, prices: PriceTable) -> Self {
        self.prices = prices;
        self
    }

    /// Masking these secret values in every tool result.
    pub fn with_secrets(mut self, secrets: Vec<String>) -> Self {
        self.guards.secrets = secrets;
        self
    }

    /// What a model's answer used: its tokens, and their cost at this agent's
    /// prices (none when the model has no price).
    pub(crate) fn spent_on(&self, message: &rein_wire::AssembledMessage) -> Spent {
        let Some(usage) = &message.usage else {
            return Spent::default();
        };
        let model = message.model.as_deref().unwrap_or(&self.profile.model);
        Spent {
            steps: 0,
            tokens: usage.prompt_total() + usage.output,
            cost: self.prices.cost_micro_usd(model, usage).unwrap_or(0),
        }
    }

    /// The definition of a child of this agent (a sub-agent, a graph task)
    /// that runs `own` — a named agent's definition, or none for this
    /// agent's own — with this agent's tools narrowed to `names` (what a
    /// `delegate` call named, or all) and to those `own` has: tools only
    /// narrow. Its guards follow [`Guards::for_child`]; its words, budgets,
    /// bounds, context policy, verification and prices are `own`'s.
    pub fn child(&self, own: Option<&Agent>, names: Option<Vec<String>>) -> Agent {
        let mut keep = names;
        if let Some(own) = own {
            let theirs: Vec<String> = own
                .tools
                .catalog(&rein_approvals::Policy::default())
                .into_iter()
                .map(|t| t.name)
                .collect();
            keep = Some(match keep {
                Some(asked) => asked.into_iter().filter(|n| theirs.contains(n)).collect(),
                None => theirs,
            });
        }
        let tools: Arc<dyn ToolBackend> = match keep {
            Some(names) => Arc::new(crate::narrowed::Narrowed {
                inner: self.tools.clone(),
                names,
            }),
            None => self.tools.clone(),
        };
        Agent {
            tools,
            guards: self.guards.for_child(own.map(|a| &a.guards)),
            ..own.unwrap_or(self).clone()
        }
    }
}

/// Whether and how the model may hand tasks to sub-agents.
#[derive(Clone)]
pub struct Delegation {
    /// Sub-agents one turn may start.
    pub max_per_turn: u32,
    /// Model calls a sub-agent may make (its share of the parent's
    /// remaining steps is smaller when that is smaller).
    pub max_steps: u32,
    /// How deep sub-agents may nest: 1 lets only the main agent delegate,
    /// 2 (the default) lets its sub-agents delegate once more.
    pub max_depth: u32,
    /// Whether a sub-agent may write (each write asked of the person
    /// through the parent's surface, as the parent's policy says). Off, a
    /// sub-agent's writes are refused.
    pub writes: bool,
    /// Added to the sub-agent's system prompt, in the product's words.
    pub instructions: String,
    /// Named agents a `delegate` call may hand its task to (`agent: NAME`):
    /// rein agents (kept to this conversation's guards by the one rule) or
    /// programs rein hosts.
    pub helpers: std::collections::BTreeMap<String, Helper>,
    /// How deep the conversation holding this is (0 for the main agent).
    pub(crate) depth: u32,
    /// What starts a sub-agent (rein's own, from `crate::subagent`).
    pub(crate) spawner: Arc<dyn Spawn>,
}

impl std::fmt::Debug for Delegation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegation")
            .field("max_per_turn", &self.max_per_turn)
            .field("max_steps", &self.max_steps)
            .field("max_depth", &self.max_depth)
            .field("writes", &self.writes)
            .field("instructions", &self.instructions)
            .field("helpers", &self.helpers.keys().collect::<Vec<_>>())
            .field("depth", &self.depth)
            .finish_non_exhaustive()
    }
}

impl Delegation {
    /// The delegation a sub-agent of this conversation gets: one level
    /// deeper, or none at the depth limit.
    pub(crate) fn for_child(&self) -> Option<Delegation> {
        let depth = self.depth + 1;
        (depth < self.max_depth).then(|| Delegation {
            depth,
            ..self.clone()
        })
    }
}

/// Starts one sub-agent on a task: handed to the conversation with its
/// [`Delegation`], so the loop never names the code that opens a child.
pub(crate) trait Spawn: Send + Sync {
    /// Run (or, after a restart, reattach) the sub-agent `child` describes;
    /// its answer, or a typed failure, as the `delegate` call's outcome.
    fn spawn(&self, child: Child) -> Pin<Box<dyn Future<Output = Spawned> + Send>>;
}

/// What a sub-agent's run gave back: the `delegate` call's outcome and
/// what the child spent (drawn from the parent's budget).
pub(crate) struct Spawned {
    pub(crate) outcome: Outcome,
    pub(crate) spent: Spent,
}

/// One sub-agent to run: everything it needs from its parent.
pub(crate) struct Child {
    pub(crate) store: Arc<dyn Store>,
    /// Its definition: the parent's by the one rule (`Agent::child`), with
    /// its share of the budgets and its own delegation.
    pub(crate) agent: Agent,
    pub(crate) agent_path: String,
    /// Its session, made when the call was recorded.
    pub(crate) session: String,
    pub(crate) task: String,
    /// The graph task its parent runs: its model calls serve it too.
    pub(crate) graph_task: Option<String>,
    /// Reattach after a restart: the child's turn is open, go on with it.
    pub(crate) reattach: bool,
    /// The parent's watchers (the child's UI events go there too).
    pub(crate) ui: Option<broadcast::Sender<UiEvent>>,
    /// Cancelled when the parent's turn is stopped or interrupted.
    pub(crate) cancel: CancellationToken,
}

/// An agent a `delegate` call may name.
#[derive(Clone)]
pub enum Helper {
    /// A rein agent: its words, budgets and checks, the parent's guards.
    Agent(Box<Agent>),
    /// A program rein hosts.
    External(Arc<dyn ExternalAgent>),
}

impl std::fmt::Debug for Helper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Helper::Agent(agent) => write!(f, "Helper::Agent({})", agent.profile.name),
            Helper::External(_) => f.write_str("Helper::External"),
        }
    }
}

/// One task for an external agent.
pub struct ExternalTask {
    /// The store the child session is in.
    pub store: Arc<dyn Store>,
    /// The child session (made when the call was recorded, named in the
    /// parent's `agent.started`): record the run there.
    pub session: String,
    /// What it is asked.
    pub task: String,
    /// Cancelled when the parent's turn is stopped or interrupted.
    pub cancel: CancellationToken,
    /// The helper's path (`main/agent-1`).
    pub agent_path: String,
    /// The parent's watchers: a question the run puts to a person is
    /// announced there ([`crate::UiKind::AgentAwaiting`]), to be decided in
    /// `session` from any person's surface, as a sub-agent's is.
    pub ui: Option<broadcast::Sender<UiEvent>>,
}

impl ExternalTask {
    /// Tell the parent's watchers that `request` waits for a person in
    /// this task's session.
    pub fn awaiting(&self, request: rein_wire::ApprovalRequest) {
        if let Some(ui) = &self.ui {
            let _ = ui.send(UiEvent {
                agent: self.agent_path.as_str().into(),
                kind: rein_wire::UiKind::AgentAwaiting {
                    session: self.session.clone(),
                    request,
                },
            });
        }
    }
}

/// A program rein hosts as a helper: it runs the task, records its run in
/// the session it is given, and answers with its final text.
pub trait ExternalAgent: Send + Sync {
    /// Run `task` to its end.
    fn run(&self, task: ExternalTask) -> BoxFuture<'static, Result<ExternalAnswer, AgentError>>;
}

/// What an external helper's run gave back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExternalAnswer {
    /// Its final text.
    pub text: String,
    /// What the run cost in micro-USD, drawn from the parent's cost
    /// budget; `None` when the program did not say (the parent's report
    /// then counts the call as of unknown cost).
    pub cost_micro_usd: Option<u64>,
}
