//! A product's hand in the children a conversation starts (a sub-agent, a
//! graph task): [`ChildFactory`] derives each child's own application
//! context and recorded authority, and what its session records of the
//! product's.
//!
//! A factory gives context, never a guard: a child's policy, hooks,
//! secrets, tools and sandbox still follow [`Guards::for_child`] whatever it
//! answers. Its authority is recorded beside the inherited one in every run
//! of the child and checked, as any run's, when that run is resumed. What it adds to a child's
//! session lives under `app` in the session's metadata; rein's own keys
//! there (the parent, the agent path, the graph task) stay rein's, so a
//! factory cannot hide a child from its parent. A child's session lives in
//! its parent's store: a resumed parent and the session tree find it there.
//!
//! Not here: the inheritance rule itself ([`Guards::for_child`]).

use rein_tools::AppContext;
use serde_json::{Value, json};

use crate::guards::Guards;

/// A child about to start, as the product's factory is told of it.
#[derive(Debug, Clone, Copy)]
pub struct ChildOf<'a> {
    /// The parent's session (a sub-agent's) or the graph's id (a task's).
    pub parent: &'a str,
    /// A sub-agent's agent path (`main/agent-1`); none for a graph task.
    pub agent_path: Option<&'a str>,
    /// A graph task's id; none for a sub-agent.
    pub graph_task: Option<&'a str>,
    /// The named agent it runs, if it names one.
    pub agent: Option<&'a str>,
    /// What it is asked to do.
    pub task: &'a str,
    /// The parent's application context.
    pub app_context: &'a AppContext,
    /// The parent's recorded authority (the product's part).
    pub authority: &'a Value,
}

/// What a product gives one child.
#[derive(Debug, Clone, Default)]
pub struct ChildContext {
    /// Its application context (every tool call's and hook's); unset, the
    /// parent's is kept.
    pub app_context: AppContext,
    /// Its application authority, recorded in each of its runs (the
    /// `product` part), beside the inherited one when the parent has one
    /// (`{"inherited": …, "given": …}`); null adds nothing.
    pub authority: Value,
}

/// The product's factory for its children's context and sessions, held in
/// [`Guards::children`] and so kept by every child and grandchild.
pub trait ChildFactory: Send + Sync {
    /// The context and authority `child` runs with.
    fn context(&self, child: &ChildOf<'_>) -> ChildContext;

    /// What `child`'s session records of the product's (its metadata's
    /// `app`); null, nothing.
    fn session(&self, child: &ChildOf<'_>) -> Value {
        let _ = child;
        Value::Null
    }
}

impl<'a> ChildOf<'a> {
    /// A child of a conversation under `guards` (the parent's).
    pub(crate) fn under(guards: &'a Guards, parent: &'a str, task: &'a str) -> ChildOf<'a> {
        ChildOf {
            parent,
            agent_path: None,
            graph_task: None,
            agent: None,
            task,
            app_context: &guards.app_context,
            authority: &guards.authority,
        }
    }
}

impl Guards {
    /// These guards (a child's, from [`Guards::for_child`]) with what the
    /// product's factory gives `child`; without a factory, unchanged.
    pub(crate) fn given(&mut self, child: &ChildOf<'_>) {
        let Some(factory) = self.children.clone() else {
            return;
        };
        let given = factory.context(child);
        if given.app_context.is_set() {
            self.app_context = given.app_context;
        }
        if self.authority.is_null() {
            self.authority = given.authority;
        } else if !given.authority.is_null() && given.authority != self.authority {
            self.authority = json!({"inherited": self.authority, "given": given.authority});
        }
    }

    /// `metadata` (a child's new session's) with what the product's
    /// factory records of `child` under `app`; rein's own keys untouched.
    pub(crate) fn child_session(&self, child: &ChildOf<'_>, metadata: &mut Value) {
        let Some(factory) = &self.children else {
            return;
        };
        let app = factory.session(child);
        if !app.is_null()
            && let Value::Object(map) = metadata
        {
            map.insert("app".into(), app);
        }
    }
}
