//! Where a definition comes from, in layers with a stated order: rein's
//! defaults < trusted plugins (`plugins`) < `REIN_HOME/config.toml` < the
//! project's `.rein/config.toml`
//! (only once a person trusted that folder: a cloned repository must not
//! grant itself tools or hooks) < a named agent (`[agents.NAME]` over
//! `[agent]`) < command-line flags. Each file is checked whole when it is
//! read — a bad one is refused naming the file, the line and the field —
//! and every value keeps the layer it came from, for `rein config show`.
//! Tables merge key by key and a later value replaces an earlier one —
//! except `hooks`, which add up: no layer drops a hook a lower one runs.
//!
//! Not here: what the fields mean (`spec`), building a running agent.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use rein_wire::{AgentError, error::codes};
use serde::Deserialize;

use crate::spec::{AgentSpec, ConfigFile, NamedAgent};
use crate::trust::{PROJECT_FILE, Standing};

/// The config file's name in rein's home.
pub const CONFIG_FILE: &str = "config.toml";

/// The one list that adds up across layers instead of being replaced.
const HOOKS: &str = "hooks";

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// rein's built-in default.
    Default,
    /// rein's home config.
    User(PathBuf),
    /// A trusted project's config.
    Project(PathBuf),
    /// A trusted plugin's manifest (its name).
    Plugin(String),
    /// A file a program named (a product's own definition).
    File(PathBuf),
    /// A command-line flag.
    Flag(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::User(path) => write!(f, "{}", path.display()),
            Source::Project(path) => write!(f, "{} (project)", path.display()),
            Source::Plugin(name) => write!(f, "plugin {name}"),
            Source::File(path) => write!(f, "{}", path.display()),
            Source::Flag(flag) => write!(f, "flag {flag}"),
        }
    }
}

/// Every layer read, merged, with each value's source.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    merged: toml::Table,
    sources: BTreeMap<String, Source>,
    /// What a person should know: a project config left out because its
    /// folder is not trusted.
    pub notes: Vec<String>,
    /// The files applied, lowest first.
    pub files: Vec<PathBuf>,
    /// rein's home the files were read from (where its other files live:
    /// the session store, `memory.db`); `None` for a value built in code.
    pub home: Option<PathBuf>,
    /// The trusted plugins' skills folders: they join every agent's own.
    pub plugin_skills: Vec<PathBuf>,
}

/// The definition of one agent, with the source of each value set.
#[derive(Debug, Clone, Default)]
pub struct Effective {
    /// Which agent (`None`: the default one).
    pub name: Option<String>,
    /// What it runs with.
    pub spec: AgentSpec,
    /// Each value's source, by its dotted key (`budgets.max_steps`).
    pub sources: BTreeMap<String, Source>,
}

fn invalid(message: String) -> AgentError {
    AgentError::new(codes::CONFIG_INVALID, message)
}

/// The 1-based line `offset` falls on.
fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(1, |before| before.matches('\n').count() + 1)
}

/// Read and check one file; `None` when it does not exist.
fn read(path: &Path) -> Result<Option<toml::Table>, AgentError> {
    match crate::trust::read_text(path)? {
        Some(text) => parse(path, &text).map(Some),
        None => Ok(None),
    }
}

/// A file's `text`, checked whole, errors naming `path`.
fn parse(path: &Path, text: &str) -> Result<toml::Table, AgentError> {
    check(text).map_err(|(line, why)| invalid(format!("{}:{line}: {why}", path.display())))?;
    toml::from_str(text).map_err(|e| invalid(format!("{}: {e}", path.display())))
}

/// Check a file's text against the schema: `(line, what is wrong)`.
pub fn check(text: &str) -> Result<(), (usize, String)> {
    let file: ConfigFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |span| line_of(text, span.start));
        let why = e.message().trim().to_owned();
        // A bad value's message names the value, not its field: say it.
        match e.span().and_then(|span| field_at(text, span.start)) {
            Some(field) if !why.contains(&format!("`{field}`")) => {
                (line, format!("`{field}`: {why}"))
            }
            _ => (line, why),
        }
    })?;
    for (name, entry) in &file.agents {
        let header = format!("[agents.{name}]");
        let line = text.find(&header).map_or(1, |offset| line_of(text, offset));
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err((
                line,
                format!("agent `{name}`: a name is letters, digits, `-` and `_`"),
            ));
        }
        match entry.kind.as_deref() {
            None | Some("rein") => {
                AgentSpec::deserialize(toml::Value::Table(entry.fields.clone()))
                    .map_err(|e| (line, format!("agent `{name}`: {}", e.message().trim())))?;
            }
            Some("claude" | "codex" | "acp" | "tui") => {}
            Some(other) => {
                return Err((
                    line,
                    format!(
                        "agent `{name}`: kind `{other}` is not rein, claude, codex, acp or tui"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The key of the `key = value` line holding `offset`, when it is one.
fn field_at(text: &str, offset: usize) -> Option<&str> {
    let start = text.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text.get(start..)?.lines().next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    bare.then_some(key)
}

/// Merge `layer` over `base`: tables key by key, anything else replaced;
/// each value set records `source` under its dotted key.
fn merge(
    base: &mut toml::Table,
    layer: toml::Table,
    prefix: &str,
    source: &Source,
    sources: &mut BTreeMap<String, Source>,
) {
    for (key, value) in layer {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(below)), toml::Value::Table(above)) => {
                merge(below, above, &path, source, sources);
            }
            // Hooks add up: a later layer (a project, a named agent) adds
            // its own and cannot drop one a layer below runs.
            (Some(toml::Value::Array(below)), toml::Value::Array(above)) if key == HOOKS => {
                for hook in above {
                    if !below.contains(&hook) {
                        below.push(hook);
                    }
                }
                sources.insert(path, source.clone());
            }
            (_, value) => {
                sources.retain(|k, _| !(k == &path || k.starts_with(&format!("{path}."))));
                mark(&value, &path, source, sources);
                base.insert(key, value);
            }
        }
    }
}

fn mark(value: &toml::Value, path: &str, source: &Source, sources: &mut BTreeMap<String, Source>) {
    match value {
        toml::Value::Table(table) => {
            for (key, inner) in table {
                mark(inner, &format!("{path}.{key}"), source, sources);
            }
        }
        _ => {
            sources.insert(path.to_owned(), source.clone());
        }
    }
}

impl Loaded {
    /// Read rein's home config and, when `project` is given and trusted,
    /// the project's; each checked whole.
    pub fn load(home: &Path, project: Option<&Path>) -> Result<Loaded, AgentError> {
        let mut loaded = Loaded {
            home: Some(home.to_owned()),
            ..Loaded::default()
        };
        loaded.plugins(home)?;
        let user = home.join(CONFIG_FILE);
        if let Some(table) = read(&user)? {
            loaded.apply(table, &Source::User(user.clone()));
            loaded.files.push(user);
        }
        if let Some(root) = project {
            loaded.project(home, root)?;
        }
        Ok(loaded)
    }

    /// The trusted plugins, under the home's config; one not trusted as
    /// it is now is left out, and that is said.
    fn plugins(&mut self, home: &Path) -> Result<(), AgentError> {
        for (plugin, table) in crate::plugins::installed_with_sections(home)? {
            let why = match plugin.trust {
                crate::plugins::Trust::Trusted => {
                    let reaching = crate::trust::reaching(&table);
                    if !reaching.is_empty() {
                        self.notes.push(format!(
                            "plugin {} sets {}",
                            plugin.name,
                            reaching.join(", ")
                        ));
                    }
                    self.plugin_skills.extend(plugin.skills.clone());
                    self.apply(table, &Source::Plugin(plugin.name.clone()));
                    self.files
                        .push(plugin.folder.join(crate::plugins::MANIFEST));
                    continue;
                }
                crate::plugins::Trust::Untrusted => "it is not trusted",
                crate::plugins::Trust::Changed => "it changed since it was trusted",
                crate::plugins::Trust::Unreadable => {
                    self.notes.push(format!(
                        "plugin {} is not applied: {}",
                        plugin.name,
                        plugin.problem.unwrap_or_default()
                    ));
                    continue;
                }
            };
            self.notes.push(format!(
                "plugin {} is not applied: {why} (see what it brings with rein plugin list, trust it with: rein plugin trust {})",
                plugin.name, plugin.name
            ));
        }
        Ok(())
    }

    /// The project's config over the home's — read once, and applied
    /// only when it says what the person trusted (`trust`); what it sets
    /// that reaches past the conversation is said.
    fn project(&mut self, home: &Path, root: &Path) -> Result<(), AgentError> {
        let path = root.join(PROJECT_FILE);
        let Some(text) = crate::trust::read_text(&path)? else {
            return Ok(());
        };
        let why = match crate::trust::standing(home, root, Some(&text)) {
            Standing::Trusted => {
                let table = parse(&path, &text)?;
                let reaching = crate::trust::reaching(&table);
                if !reaching.is_empty() {
                    self.notes
                        .push(format!("{} sets {}", path.display(), reaching.join(", ")));
                }
                self.apply(table, &Source::Project(path.clone()));
                self.files.push(path);
                return Ok(());
            }
            Standing::Untrusted => "this folder is not trusted",
            Standing::Changed => "it changed since this folder was trusted",
        };
        self.notes.push(format!(
            "{} is not applied: {why} (see what it says and trust it with: rein config trust {})",
            path.display(),
            root.display()
        ));
        Ok(())
    }

    /// `path` over what is loaded, checked whole as the home's file is
    /// (a program's own definition: no home, no project, no trust asked —
    /// the program chose it). A file that does not exist is an error.
    pub fn with_file(mut self, path: &Path) -> Result<Loaded, AgentError> {
        let table =
            read(path)?.ok_or_else(|| invalid(format!("{}: no such file", path.display())))?;
        self.apply(table, &Source::File(path.to_owned()));
        self.files.push(path.to_owned());
        Ok(self)
    }

    /// `text` over what is loaded, checked whole; errors name `name` (a
    /// definition a program carries in its own source).
    pub fn with_text(mut self, name: &str, text: &str) -> Result<Loaded, AgentError> {
        let path = PathBuf::from(name);
        let table = parse(&path, text)?;
        self.apply(table, &Source::File(path));
        Ok(self)
    }

    /// Put `table` over what is loaded.
    pub fn apply(&mut self, table: toml::Table, source: &Source) {
        merge(&mut self.merged, table, "", source, &mut self.sources);
    }

    /// The merged file.
    pub fn file(&self) -> Result<ConfigFile, AgentError> {
        ConfigFile::deserialize(toml::Value::Table(self.merged.clone()))
            .map_err(|e| invalid(format!("the merged config: {}", e.message().trim())))
    }

    /// A section as the part that owns it reads it (`sandbox`,
    /// `commands`, `mcp`, `agents`), as TOML text holding only that table.
    pub fn section_text(&self, name: &str) -> String {
        let mut only = toml::Table::new();
        if let Some(value) = self.merged.get(name) {
            only.insert(name.to_owned(), value.clone());
        }
        toml::to_string(&only).unwrap_or_default()
    }

    /// The agents defined, with their kinds.
    pub fn agents(&self) -> Result<BTreeMap<String, NamedAgent>, AgentError> {
        Ok(self.file()?.agents)
    }

    /// The definition of agent `name` (`None`: the default agent) with
    /// `flags` over it: `[agent]`, then `[agents.NAME]`'s fields, then the
    /// flags.
    pub fn agent(&self, name: Option<&str>, flags: &AgentSpec) -> Result<Effective, AgentError> {
        let mut table = toml::Table::new();
        let mut sources = BTreeMap::new();
        if let Some(toml::Value::Table(base)) = self.merged.get("agent") {
            table = base.clone();
            for (key, source) in &self.sources {
                if let Some(rest) = key.strip_prefix("agent.") {
                    sources.insert(rest.to_owned(), source.clone());
                }
            }
        }
        if let Some(name) = name {
            let agents = self.agents()?;
            let entry = agents.get(name).ok_or_else(|| {
                let known: Vec<&str> = agents.keys().map(String::as_str).collect();
                AgentError::new(
                    codes::AGENT_UNKNOWN,
                    format!(
                        "no agent `{name}` is defined (defined: {})",
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ),
                )
            })?;
            if !entry.is_native() {
                return Err(AgentError::new(
                    codes::AGENT_UNKNOWN,
                    format!(
                        "agent `{name}` is a hosted `{}` agent; run it with: rein agents run {name}",
                        entry.kind.as_deref().unwrap_or_default()
                    ),
                ));
            }
            let prefix = format!("agents.{name}.");
            let mut own = BTreeMap::new();
            merge(
                &mut table,
                entry.fields.clone(),
                "",
                &Source::Default,
                &mut own,
            );
            for key in own.keys() {
                if let Some(source) = self.sources.get(&format!("{prefix}{key}")) {
                    sources.insert(key.clone(), source.clone());
                }
            }
        }
        let flag_table =
            toml::Table::try_from(flags).map_err(|e| invalid(format!("the flags: {e}")))?;
        let mut from_flags = BTreeMap::new();
        merge(
            &mut table,
            flag_table,
            "",
            &Source::Flag(String::new()),
            &mut from_flags,
        );
        for key in from_flags.keys() {
            let flag = format!(
                "--{}",
                key.split('.').next_back().unwrap_or(key).replace('_', "-")
            );
            sources.insert(key.clone(), Source::Flag(flag));
        }
        let spec = AgentSpec::deserialize(toml::Value::Table(table)).map_err(|e| {
            invalid(format!(
                "agent {}: {}",
                name.unwrap_or("(default)"),
                e.message().trim()
            ))
        })?;
        Ok(Effective {
            name: name.map(str::to_owned),
            spec,
            sources,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;
    use crate::trust::trust;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn layers_apply_in_order_and_say_where_each_value_came_from() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        write(
            &home.path().join(CONFIG_FILE),
            "[agent]\nmodel = \"m-user\"\ninstructions = \"be brief\"\n[agent.budgets]\nmax_steps = 10\n\n[agents.reviewer]\ninstructions = \"review\"\n[agents.reviewer.budgets]\nmax_steps = 3\n",
        );
        write(
            &project.path().join(PROJECT_FILE),
            "[agent]\nmodel = \"m-project\"\n",
        );
        // Untrusted: the project file is not applied, and that is said.
        let loaded = Loaded::load(home.path(), Some(project.path())).unwrap();
        assert_eq!(loaded.notes.len(), 1, "{:?}", loaded.notes);
        let plain = loaded.agent(None, &AgentSpec::default()).unwrap();
        assert_eq!(plain.spec.model.as_deref(), Some("m-user"));
        // Trusted: applied over the home config.
        trust(home.path(), project.path()).unwrap();
        let loaded = Loaded::load(home.path(), Some(project.path())).unwrap();
        assert!(loaded.notes.is_empty());
        let flags = AgentSpec {
            reasoning: Some("low".into()),
            ..AgentSpec::default()
        };
        let reviewer = loaded.agent(Some("reviewer"), &flags).unwrap();
        assert_eq!(reviewer.spec.model.as_deref(), Some("m-project"));
        assert_eq!(reviewer.spec.instructions.as_deref(), Some("review"));
        assert_eq!(reviewer.spec.budgets.unwrap().max_steps, Some(3));
        assert!(matches!(reviewer.sources["model"], Source::Project(_)));
        assert!(matches!(
            reviewer.sources["budgets.max_steps"],
            Source::User(_)
        ));
        assert_eq!(
            reviewer.sources["reasoning"],
            Source::Flag("--reasoning".into())
        );
        assert_eq!(
            loaded.agent(Some("nobody"), &flags).unwrap_err().code,
            codes::AGENT_UNKNOWN
        );
        // Hooks add up across layers: a named agent's own cannot drop the
        // default's.
        let mut with_hooks = Loaded::default();
        let hook = |name: &str| {
            format!(
                "[[agent.hooks]]\nname = \"{name}\"\ncommand = [\"true\"]\npoints = [\"before_call\"]\n"
            )
        };
        with_hooks.apply(toml::from_str(&hook("guard")).unwrap(), &Source::Default);
        let own = "[agents.x]\n[[agents.x.hooks]]\nname = \"own\"\ncommand = [\"true\"]\npoints = [\"turn_end\"]\n";
        with_hooks.apply(toml::from_str(own).unwrap(), &Source::Default);
        let x = with_hooks.agent(Some("x"), &AgentSpec::default()).unwrap();
        let names: Vec<String> = x.spec.hooks.unwrap().into_iter().map(|h| h.name).collect();
        assert_eq!(names, ["guard", "own"]);
    }

    #[test]
    fn a_bad_file_is_refused_naming_the_file_the_line_and_the_field() {
        let home = tempfile::tempdir().unwrap();
        write(
            &home.path().join(CONFIG_FILE),
            "[agent]\nmodel = \"m\"\n\n[agent.budgets]\nmax_stepz = 3\n",
        );
        let err = Loaded::load(home.path(), None).unwrap_err();
        assert_eq!(err.code, codes::CONFIG_INVALID);
        assert!(err.message.contains("config.toml:5:"), "{}", err.message);
        assert!(err.message.contains("max_stepz"), "{}", err.message);
        write(
            &home.path().join(CONFIG_FILE),
            "[agents.x]\nkind = \"rein\"\nmodle = \"m\"\n",
        );
        let err = Loaded::load(home.path(), None).unwrap_err();
        assert!(err.message.contains("config.toml:1:"), "{}", err.message);
        assert!(err.message.contains("modle"), "{}", err.message);
    }

    #[test]
    fn a_setting_nothing_reads_is_refused_not_ignored() {
        // `policy.egress_allow` was a key no part of rein read: a person
        // who set it believed hosts were limited. It is refused by name.
        let (line, why) =
            check("[agent.policy]\negress_allow = [\"api.example.com\"]\n").unwrap_err();
        assert_eq!(line, 2);
        assert!(why.contains("egress_allow"), "{why}");
    }
}
