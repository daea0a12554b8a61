//! [`Guards`]: what a conversation runs under that no child of it may drop
//! — its policy, the hooks asked at its fixed points, the product's context
//! handed to every tool call, the secrets masked in what it records, what
//! it adds to the run's recorded authority, and whether its spans carry the
//! prompt — and [`Guards::for_child`], the one rule by which a sub-agent, a
//! graph task or any other child keeps them.
//!
//! The sandbox and the egress a child reaches travel with its tools: a
//! child's tools are its parent's, narrowed (`narrowed::Narrowed`), never
//! others, so a `run_command` keeps the sandbox it was built with.
//!
//! Not here: what the guards do (the gate in `conversation::calls`, the
//! hooks in `conversation::hooked`, masking in the recorder).

use std::sync::Arc;

use rein_approvals::Policy;
use rein_tools::AppContext;
use serde_json::{Value, json};

use crate::hooks::Hook;

/// What a conversation runs under; a child keeps all of it
/// ([`Guards::for_child`]).
#[derive(Clone, Default)]
pub struct Guards {
    /// What the product allows (writes, egress, elevation).
    pub policy: Policy,
    /// The hooks asked at a turn's fixed points, in order (see
    /// [`crate::hooks`]).
    pub hooks: Vec<Arc<dyn Hook>>,
    /// The product's context, handed to every tool call
    /// (`ToolContext::app`).
    pub app_context: AppContext,
    /// Secret values (a provider's key) masked in every tool result before
    /// it is recorded or shown to the model: a model that reads a
    /// project's `.env` must not put rein's own key in the log.
    pub secrets: Vec<String>,
    /// What the product adds to the run's recorded authority (its roots,
    /// its sandbox): a resume under different authority is refused until a
    /// person accepts it.
    pub authority: Value,
    /// Put the person's prompt on the turn's telemetry span (off: spans
    /// carry names, ids, counts and codes only).
    pub telemetry_content: bool,
    /// The product's factory for each child's context, authority and
    /// session record ([`crate::ChildFactory`]); none, a child gets the
    /// parent's.
    pub children: Option<Arc<dyn crate::ChildFactory>>,
}

impl std::fmt::Debug for Guards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hooks: Vec<&str> = self.hooks.iter().map(|h| h.name()).collect();
        f.debug_struct("Guards")
            .field("policy", &self.policy)
            .field("hooks", &hooks)
            .field("app_context", &self.app_context)
            .field("secrets", &self.secrets.len())
            .field("authority", &self.authority)
            .field("telemetry_content", &self.telemetry_content)
            .field("children", &self.children.is_some())
            .finish()
    }
}

impl Guards {
    /// The guards of a child of a conversation under `self`, whose own
    /// definition (a named agent's) asks for `own`. The rule, for every
    /// kind of child:
    ///
    /// - **hooks**: the parent's are asked first, then the child's own that
    ///   the parent does not already have (by name): a parent's deny is
    ///   heard before anything of the child's, and cannot be left out;
    /// - **policy**: the child's own held within the parent's
    ///   ([`Policy::within`]): never more than the parent allows;
    /// - **app context**: the parent's — it is the product's — unless the
    ///   parent has none and the child brings one;
    /// - **secrets**: both lists, so each is masked;
    /// - **authority**: the parent's, with the child's own beside it when
    ///   it has any other;
    /// - **telemetry content**: only where both opt in;
    /// - **the child factory**: the parent's — it is the product's —
    ///   unless the parent has none (it is asked after this rule,
    ///   [`crate::ChildFactory`], and gives context, never a guard).
    pub fn for_child(&self, own: Option<&Guards>) -> Guards {
        let Some(own) = own else {
            return self.clone();
        };
        let mut hooks = self.hooks.clone();
        for hook in &own.hooks {
            if !hooks.iter().any(|h| h.name() == hook.name()) {
                hooks.push(hook.clone());
            }
        }
        let app_context = if self.app_context.is_set() {
            self.app_context.clone()
        } else {
            own.app_context.clone()
        };
        let mut secrets = self.secrets.clone();
        for secret in &own.secrets {
            if !secrets.contains(secret) {
                secrets.push(secret.clone());
            }
        }
        let authority = if own.authority.is_null() || own.authority == self.authority {
            self.authority.clone()
        } else {
            json!({"inherited": self.authority, "own": own.authority})
        };
        Guards {
            policy: own.policy.within(&self.policy),
            hooks,
            app_context,
            secrets,
            authority,
            telemetry_content: self.telemetry_content && own.telemetry_content,
            children: self.children.clone().or_else(|| own.children.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::sync::Arc;

    use rein_tools::AppContext;
    use serde_json::{Value, json};

    use super::Guards;
    use crate::hooks::Hook;
    use crate::hooks::{HookEffect, HookFuture, HookInput, HookPoint};
    use rein_approvals::Policy;

    struct Named(&'static str);

    impl Hook for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn hears(&self, _: HookPoint) -> bool {
            true
        }
        fn run<'a>(&'a self, _: &'a HookInput) -> HookFuture<'a> {
            Box::pin(async { Ok(HookEffect::Continue) })
        }
    }

    fn names(guards: &Guards) -> Vec<&str> {
        guards.hooks.iter().map(|h| h.name()).collect()
    }

    #[test]
    fn a_child_keeps_every_guard_and_may_only_narrow() {
        let parent = Guards {
            policy: Policy {
                writes_allowed: false,
                egress_allow: vec!["api.example.com".into()],
                elevate_approved: true,
            },
            hooks: vec![Arc::new(Named("deny-rm"))],
            app_context: AppContext::new(7_u32),
            secrets: vec!["sk-parent".into()],
            authority: json!({"root": "/p"}),
            telemetry_content: true,
            children: None,
        };
        // No definition of its own: exactly the parent's.
        let plain = parent.for_child(None);
        assert_eq!(names(&plain), ["deny-rm"]);
        assert_eq!(plain.policy, parent.policy);
        assert_eq!(plain.app_context.get::<u32>(), Some(&7));
        // A named agent that asks for more gets no more.
        let own = Guards {
            policy: Policy {
                writes_allowed: true,
                egress_allow: vec!["api.example.com".into(), "evil.example".into()],
                elevate_approved: true,
            },
            hooks: vec![Arc::new(Named("deny-rm")), Arc::new(Named("audit"))],
            app_context: AppContext::new("other"),
            secrets: vec!["sk-own".into()],
            authority: Value::Null,
            telemetry_content: false,
            children: None,
        };
        let child = parent.for_child(Some(&own));
        assert_eq!(names(&child), ["deny-rm", "audit"]);
        assert!(!child.policy.writes_allowed);
        assert_eq!(child.policy.egress_allow, ["api.example.com"]);
        assert_eq!(child.app_context.get::<u32>(), Some(&7));
        assert_eq!(child.secrets, ["sk-parent", "sk-own"]);
        assert_eq!(child.authority, json!({"root": "/p"}));
        assert!(!child.telemetry_content);
        // An own authority equal to the parent's is not nested.
        let same = Guards {
            authority: json!({"root": "/p"}),
            ..Guards::default()
        };
        assert_eq!(
            parent.for_child(Some(&same)).authority,
            json!({"root": "/p"})
        );
        // And its own child again keeps the parent's.
        let grandchild = child.for_child(Some(&Guards::default()));
        assert_eq!(names(&grandchild), ["deny-rm", "audit"]);
        assert!(!grandchild.policy.writes_allowed);
    }
}
