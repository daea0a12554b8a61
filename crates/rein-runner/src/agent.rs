//! [`Agent`]: one definition of what a conversation runs with — the model
//! provider, the tools, the words ([`Profile`]), the [`Guards`], budgets,
//! result bounds, the context policy, the verification gate, delegation,
//! prices and how long an approval waits — and the one place a
//! conversation is opened from it ([`Agent::open`], [`Agent::resume`],
//! [`Agent::open_session`]).
//!
//! A product builds it in code; `rein-config` builds it from layered
//! files; `rein chat`, `rein serve`, `rein run`, `rein mcp serve`, `rein
//! acp`, the evals, sub-agents and graph tasks all open conversations
//! through it, so a setting made once reaches every one of them. A
//! reopened session takes the same value: nothing is passed twice.
//!
//! Not here: the loop (`conversation`), loading from files (`rein-config`),
//! the rule a child's definition follows ([`Guards::for_child`]).

use std::sync::Arc;
use std::time::Duration;

use rein_gateway::Provider;
use rein_tools::{Bounds, ToolBackend};
use rein_wire::PriceTable;

use crate::context::ContextPolicy;
use crate::delegation::Delegation;
use crate::guards::Guards;
use crate::settings::{Budgets, Profile, Verification};

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
        }
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

    /// With the product's context handed to every tool call.
    pub fn with_app_context(mut self, context: rein_tools::AppContext) -> Self {
        self.guards.app_context = context;
        self
    }

    /// With these budgets per turn.
    pub fn with_budgets(mut self, budgets: Budgets) -> Self {
        self.budgets = budgets;
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
