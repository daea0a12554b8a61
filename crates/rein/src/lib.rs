//! rein, an agent harness runtime: the one dependency a product needs.
//!
//! A product brings its tools, its words and a model provider; rein is the
//! rest. Each layer is its own crate, usable alone, and re-exported here:
//!
//! - [`wire`]: the vocabulary (messages, requests, stream events, usage and
//!   cost, permission classes, ids, errors with stable codes);
//! - [`gateway`]: the streamed model call over the three wire APIs, and
//!   the offline scripted model ([`gateway::scripted`]);
//! - [`sessions`]: the durable store (event log, turn tree, locks,
//!   artifacts) on embedded SQLite or in memory;
//! - [`tools`]: typed tools ([`tools::Tool`], [`tools::Registry`]) and the
//!   backend contract;
//! - [`approvals`]: the gate, leases, and the person's [`approvals::Surface`];
//! - [`runner`]: [`runner::Conversation`], the tool loop;
//! - [`cache`]: prompt-cache planning and its monitor;
//! - [`trace`]: reports and golden traces read from the log.
//!
//! A conversation with a product's own tool, a write its UI approves, and
//! the cost report:
//!
//! ```
//! use std::sync::Arc;
//!
//! use rein::approvals::{Answer, LeaseScope, Surface};
//! use rein::gateway::scripted::{Rule, ScriptedBrain};
//! use rein::runner::{Conversation, Profile, TurnOutcome};
//! use rein::tools::{Outcome, Registry, Tool, ToolContext};
//! use rein::wire::permission::PermissionClass;
//!
//! /// Which product.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Item {
//!     /// Its name.
//!     name: String,
//! }
//!
//! struct SetPrice;
//!
//! #[async_trait::async_trait]
//! impl Tool for SetPrice {
//!     type Input = Item;
//!     fn name(&self) -> &str { "set_price" }
//!     fn description(&self) -> &str { "Set a product's price to 5." }
//!     fn permission(&self, _: &Item) -> PermissionClass { PermissionClass::SourceFileWrite }
//!     async fn invoke(&self, item: Item, _: &ToolContext) -> Outcome {
//!         Outcome::ok(serde_json::json!({"set": item.name, "price": 5}))
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! // Any provider; here the offline scripted model, told what to call.
//! let model = ScriptedBrain::new(vec![Rule::call(
//!     "set ", "Setting it.", "set_price", serde_json::json!({}), Some("name"),
//! )]);
//! let store = Arc::new(rein::sessions::MemoryStore::new());
//! let tools = Registry::new().with(SetPrice)?;
//! let mut chat = Conversation::open(
//!     store.clone(), Arc::new(model), Arc::new(tools),
//!     Profile::new("shop assistant", "rein-scripted"), None,
//! ).await?;
//!
//! // The write waits for a person; the product shows what they approve.
//! let TurnOutcome::AwaitingApproval { .. } = chat.turn("set tea").await? else {
//!     panic!("a write waits for a person")
//! };
//! let asked = chat.pending_approvals().await?.remove(0);
//! assert_eq!((asked.tool.as_str(), &asked.arguments["name"]), ("set_price", &"tea".into()));
//! let admin = Surface::product("shop admin", "alice");
//! chat.decide(&asked.approval_id, Answer::Approve(LeaseScope::Once), &admin).await?;
//! let TurnOutcome::Finished { reply } = chat.resume().await? else { panic!() };
//! assert!(reply.contains("\"price\":5"));
//!
//! // What it cost, read from the log.
//! let log = chat.log_events().await?;
//! let report = rein::trace::report(chat.session_id(), &log);
//! assert_eq!((report.totals.model_calls, report.totals.tools.ok), (2, 1));
//! chat.close().await?;
//! # Ok::<(), rein::wire::AgentError>(())
//! # }).unwrap();
//! ```

pub use rein_approvals as approvals;
pub use rein_cache as cache;
pub use rein_gateway as gateway;
pub use rein_runner as runner;
pub use rein_sessions as sessions;
pub use rein_tools as tools;
pub use rein_trace as trace;
pub use rein_wire as wire;
