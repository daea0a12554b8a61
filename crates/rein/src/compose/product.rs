//! A definition made into a running agent for a product: the product's
//! own definition file (or text), its own tools and model provider passed
//! in, and nothing of the `rein` command's world unless asked — no home
//! config of the person running the CLI, no file tools over the process's
//! working folder, no `AGENTS.md` from parent folders, no command-line
//! words in its errors.
//!
//! ```no_run
//! # async fn example() -> Result<(), rein::wire::AgentError> {
//! use rein::compose::Product;
//! use rein::prelude::*;
//!
//! let store: Arc<dyn Store> = Arc::new(SqliteStore::open("helpdesk.db").await?);
//! let brain = ScriptedBrain::new(vec![Rule::reply("hello", "Hello!")]);
//! let composed = Product::new()
//!     .definition_file("helpdesk.toml")
//!     .agent("triage")
//!     .provider(Arc::new(brain))
//!     .build(&store)
//!     .await?;
//! let mut conversation = composed.agent.open(store.clone()).await?;
//! conversation.turn("hello").await?;
//! # Ok(()) }
//! ```
//!
//! Not here: how the parts are built ([`super::compose`]); the `rein`
//! command's surfaces ([`super::for_surface`]).

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::{AgentSpec, Loaded};
use crate::gateway::Provider;
use crate::sessions::Store;
use crate::tools::ToolBackend;
use crate::wire::{AgentError, error::codes};

use super::{Composed, DEFAULT_INSTRUCTIONS, Resolved, Wanted, compose, invalid, resolve};

/// Where a product's definition comes from.
enum Definition {
    File(PathBuf),
    Text { name: String, text: String },
}

/// What a product asks [`super::compose`] for (see the module's page).
/// Each part is off until asked: [`Product::new`] alone is an agent with
/// the definition's defaults, the product's tools and no others.
#[must_use = "a Product does nothing until `build`"]
pub struct Product {
    definitions: Vec<Definition>,
    user_config: bool,
    home: Option<PathBuf>,
    root: Option<PathBuf>,
    agent: Option<String>,
    provider: Option<Arc<dyn Provider>>,
    model: Option<String>,
    tools: Vec<Arc<dyn ToolBackend>>,
    instructions: String,
    over: AgentSpec,
}

impl Default for Product {
    fn default() -> Self {
        Product::new()
    }
}

impl Product {
    /// Nothing read, nothing on: the definition's defaults.
    pub fn new() -> Self {
        Product {
            definitions: Vec::new(),
            user_config: false,
            home: None,
            root: None,
            agent: None,
            provider: None,
            model: None,
            tools: Vec::new(),
            instructions: DEFAULT_INSTRUCTIONS.to_owned(),
            over: AgentSpec::default(),
        }
    }

    /// The product's definition file (rein's config format, checked
    /// whole when built). Several apply in the order given.
    pub fn definition_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.definitions.push(Definition::File(path.into()));
        self
    }

    /// A definition the product carries in its source (`include_str!`);
    /// `name` is what its errors call it.
    pub fn definition_text(mut self, name: impl Into<String>, text: impl Into<String>) -> Self {
        self.definitions.push(Definition::Text {
            name: name.into(),
            text: text.into(),
        });
        self
    }

    /// The folder rein keeps its files in for this product (`memory.db`
    /// for `[memory]`). Its `config.toml` is read only with
    /// [`Product::user_config`].
    pub fn home(mut self, home: impl Into<PathBuf>) -> Self {
        self.home = Some(home.into());
        self
    }

    /// Read the home's `config.toml` under the product's definition, as
    /// the `rein` command does (the home given, else `REIN_HOME`, else
    /// `~/.rein`): its hooks and servers then run in the product too.
    pub fn user_config(mut self) -> Self {
        self.user_config = true;
        self
    }

    /// The folder the agent works in: the file tools (unless the
    /// definition says `tools.files = false`), `run_command` and the
    /// check run there. Without it the agent has no file tools and a
    /// definition that asks for commands or a check is refused.
    pub fn root(mut self, root: impl Into<PathBuf>) -> Self {
        self.root = Some(root.into());
        self
    }

    /// The root's `AGENTS.md` (and its parents') joins the instructions.
    pub fn project_instructions(mut self) -> Self {
        self.over.project_instructions = Some(true);
        self
    }

    /// The named agent `[agents.NAME]` of the definition.
    pub fn agent(mut self, name: impl Into<String>) -> Self {
        self.agent = Some(name.into());
        self
    }

    /// The model provider to call (else the one the definition names, or
    /// the environment's key).
    pub fn provider(mut self, provider: Arc<dyn Provider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// The model name, over the definition's.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The product's own tools, offered beside the ones the definition
    /// gives (a name the definition's tools already have stays theirs).
    pub fn tools(mut self, tools: Arc<dyn ToolBackend>) -> Self {
        self.tools.push(tools);
        self
    }

    /// The system prompt when the definition sets none.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = text.into();
        self
    }

    /// The running agent, its file tools' root (when given), the MCP
    /// servers the definition started (stop them when done) and the
    /// notes a person should see (`run_command`'s isolation).
    pub async fn build(self, store: &Arc<dyn Store>) -> Result<Composed, AgentError> {
        let loaded = self.loaded()?;
        let mut effective = loaded.agent(self.agent.as_deref(), &self.over)?;
        let spec = &mut effective.spec;
        spec.project_instructions.get_or_insert(false);
        let root = match &self.root {
            Some(root) => std::path::absolute(root).map_err(|e| {
                invalid(format!(
                    "the product's root {}: {}",
                    root.display(),
                    crate::wire::error::io_reason(&e)
                ))
            })?,
            None => no_root(spec)?,
        };
        let resolved = self.resolved(spec)?;
        let wanted = Wanted {
            root: &root,
            effective: &effective,
            commands_file: None,
            default_instructions: &self.instructions,
        };
        let mut said = Vec::new();
        let mut composed = compose(&wanted, &loaded, &resolved, store, &mut said).await?;
        composed.notes = String::from_utf8_lossy(&said)
            .lines()
            .map(|line| line.trim().trim_start_matches('(').trim_end_matches(')'))
            .map(str::to_owned)
            .collect();
        for tools in self.tools {
            composed.agent = composed.agent.with_more_tools(tools);
        }
        Ok(composed)
    }

    /// The definitions, in order, over the home's file when asked.
    fn loaded(&self) -> Result<Loaded, AgentError> {
        let mut loaded = if self.user_config {
            let home = crate::sessions::home::resolve(self.home.clone())?;
            Loaded::load(&home, None)?
        } else {
            let mut loaded = Loaded::default();
            loaded.home.clone_from(&self.home);
            loaded
        };
        for definition in &self.definitions {
            loaded = match definition {
                Definition::File(path) => loaded.with_file(path)?,
                Definition::Text { name, text } => loaded.with_text(name, text)?,
            };
        }
        Ok(loaded)
    }

    /// The product's provider, else the one the definition or the
    /// environment names — said in the library's words when none is.
    fn resolved(&self, spec: &AgentSpec) -> Result<Resolved, AgentError> {
        let model = self.model.clone().or_else(|| spec.model.clone());
        if let Some(provider) = &self.provider {
            return Ok(Resolved {
                provider: provider.clone(),
                model: model.unwrap_or_else(|| provider.name().to_owned()),
            });
        }
        let mut resolved = resolve(spec)?.ok_or_else(|| {
            AgentError::new(
                codes::MISSING_API_KEY,
                "no model provider: pass one with Product::provider, name one in the definition \
                 (provider, base_url), or set ANTHROPIC_API_KEY or OPENAI_API_KEY",
            )
        })?;
        if let Some(model) = self.model.clone() {
            resolved.model = model;
        }
        Ok(resolved)
    }
}

/// With no root the agent touches no folder: file tools and the map off
/// (refused if the definition asks for them), and what needs a folder
/// refused. The folder recorded is the process's working one, which no
/// tool is given.
fn no_root(spec: &mut AgentSpec) -> Result<PathBuf, AgentError> {
    let tools = spec.tools.clone().unwrap_or_default();
    let needs = [
        (tools.files == Some(true), "tools.files"),
        (tools.commands == Some(true), "tools.commands"),
        (spec.verify.is_some(), "verify"),
        (
            spec.project_instructions == Some(true),
            "project_instructions",
        ),
        (
            spec.memory
                .as_ref()
                .is_some_and(|m| m.enabled == Some(true) && m.scope.is_none()),
            "memory without a scope",
        ),
    ];
    if let Some((_, what)) = needs.iter().find(|(asked, _)| *asked) {
        return Err(invalid(format!(
            "{what} needs a folder to work in: give the product's with Product::root"
        )));
    }
    spec.tools.get_or_insert_with(Default::default).files = Some(false);
    spec.project_map = Some(false);
    std::env::current_dir().map_err(|e| {
        invalid(format!(
            "the working folder: {}",
            crate::wire::error::io_reason(&e)
        ))
    })
}
