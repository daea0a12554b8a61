//! `rein config`: the effective agent definition and where each value came
//! from (`show`), every config file checked (`check`), a project folder
//! trusted so its `.rein/config.toml` applies (`trust`), and the JSON
//! Schema of a config file (`schema`).
//!
//! Not here: the layering itself (`rein-config`), building an agent
//! (`compose`).

use std::io::Write;
use std::path::{Path, PathBuf};

use rein::config::{AgentSpec, Loaded, PROJECT_FILE};
use rein::wire::{AgentError, error::codes};
use serde_json::json;

/// `rein config`'s subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Print the definition an agent runs with, each value with its source
    /// (a config file, a trusted project's, or the default).
    Show {
        /// The named agent (default: the default `[agent]`).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// The project folder (default: the current directory).
        #[arg(long, value_name = "DIR")]
        root: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check every config file (rein's home's and the project's, trusted or
    /// not) and every section in them; exit non-zero naming the file, the
    /// line and the field of the first fault.
    Check {
        /// The project folder (default: the current directory).
        #[arg(long, value_name = "DIR")]
        root: Option<PathBuf>,
    },
    /// Trust a project folder: its `.rein/config.toml` applies from now on
    /// (a folder you cloned could otherwise grant itself tools and hooks).
    Trust {
        /// The folder (default: the current directory).
        dir: Option<PathBuf>,
    },
    /// Print the JSON Schema of a config file.
    Schema,
}

fn io(err: std::io::Error) -> AgentError {
    super::output::output_error(err)
}

fn root_or_cwd(root: Option<PathBuf>) -> Result<PathBuf, AgentError> {
    let dir = match root {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(|e| {
            AgentError::new(codes::INVALID_INPUT, format!("the current directory: {e}"))
        })?,
    };
    dir.canonicalize()
        .map_err(|e| AgentError::new(codes::INVALID_INPUT, format!("{}: {e}", dir.display())))
}

/// Run `rein config …`.
pub fn run(
    command: ConfigCommand,
    home: Option<PathBuf>,
    out: &mut impl Write,
) -> Result<(), AgentError> {
    let home = rein::sessions::home::resolve(home)?;
    match command {
        ConfigCommand::Show { agent, root, json } => {
            show(&home, &root_or_cwd(root)?, agent.as_deref(), json, out)
        }
        ConfigCommand::Check { root } => check(&home, &root_or_cwd(root)?, out),
        ConfigCommand::Trust { dir } => {
            let dir = root_or_cwd(dir)?;
            let trusted = rein::config::trust(&home, &dir)?;
            // What is trusted is shown: the whole file the first time,
            // what changed since after that; made visible (a config is
            // text anyone may have written).
            match &trusted.changes {
                Some(diff) => {
                    writeln!(out, "{}", rein::wire::visible::visible(diff)).map_err(io)?;
                }
                None if !trusted.root.join(PROJECT_FILE).exists() => writeln!(
                    out,
                    "(no {PROJECT_FILE} here yet: one made later applies only once you trust it again)"
                )
                .map_err(io)?,
                None => writeln!(out, "(unchanged since it was last trusted)").map_err(io)?,
            }
            writeln!(
                out,
                "trusted {}: its {PROJECT_FILE} applies from now on, while it says this",
                trusted.root.display()
            )
            .map_err(io)
        }
        ConfigCommand::Schema => {
            let text = serde_json::to_string_pretty(&rein::config::schema())
                .map_err(|e| AgentError::new(codes::INTERNAL, e.to_string()))?;
            writeln!(out, "{text}").map_err(io)
        }
    }
}

/// Every value set, by dotted key.
fn flatten(value: &toml::Value, prefix: &str, into: &mut Vec<(String, String)>) {
    match value {
        toml::Value::Table(table) => {
            for (key, inner) in table {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(inner, &path, into);
            }
        }
        other => into.push((prefix.to_owned(), other.to_string())),
    }
}

fn show(
    home: &Path,
    root: &Path,
    agent: Option<&str>,
    as_json: bool,
    out: &mut impl Write,
) -> Result<(), AgentError> {
    let loaded = Loaded::load(home, Some(root))?;
    let effective = loaded.agent(agent, &AgentSpec::default())?;
    let table = toml::Value::try_from(&effective.spec)
        .map_err(|e| AgentError::new(codes::INTERNAL, e.to_string()))?;
    let mut values = Vec::new();
    flatten(&table, "", &mut values);
    let instructions = if effective.spec.project_instructions.unwrap_or(true) {
        rein::config::project_instructions(root)
    } else {
        Vec::new()
    };
    let agents = loaded.agents()?;
    if as_json {
        let set: Vec<serde_json::Value> = values
            .iter()
            .map(|(key, value)| {
                let source = effective.sources.get(key).map(ToString::to_string);
                json!({"key": key, "value": value, "source": source})
            })
            .collect();
        let files: Vec<serde_json::Value> = instructions
            .iter()
            .map(|f| json!({"path": f.path, "bytes": f.text.len(), "cut": f.cut}))
            .collect();
        let named: Vec<serde_json::Value> = agents
            .iter()
            .map(|(name, a)| json!({"name": name, "kind": a.kind.as_deref().unwrap_or("rein")}))
            .collect();
        let shown = json!({
            "agent": agent,
            "files": loaded.files,
            "notes": loaded.notes,
            "values": set,
            "instructions": files,
            "agents": named,
        });
        return writeln!(out, "{shown}").map_err(io);
    }
    let line = |out: &mut dyn Write, text: &str| {
        writeln!(out, "{}", rein::wire::visible::visible(text)).map_err(io)
    };
    line(out, &format!("agent: {}", agent.unwrap_or("(default)")))?;
    for file in &loaded.files {
        line(out, &format!("file: {}", file.display()))?;
    }
    for note in &loaded.notes {
        line(out, &format!("note: {note}"))?;
    }
    if values.is_empty() {
        line(out, "(nothing set: rein's defaults)")?;
    }
    let width = values
        .iter()
        .map(|(k, v)| k.len() + v.len() + 3)
        .max()
        .unwrap_or(0);
    for (key, value) in &values {
        let source = effective
            .sources
            .get(key)
            .map_or_else(|| "default".to_owned(), ToString::to_string);
        let set = format!("{key} = {value}");
        line(out, &format!("{set:<width$}  # {source}"))?;
    }
    if effective
        .spec
        .compaction
        .as_ref()
        .and_then(|c| c.window)
        .is_none()
    {
        line(
            out,
            &format!(
                "window: not set — an OpenAI-compatible server is asked its own at the first turn (working in {} tokens until it answers), a hosted API's model has its known window; `[agent.compaction] window` or `--window` sets it",
                rein::gateway::config::COMPATIBLE_WINDOW
            ),
        )?;
    }
    for file in &instructions {
        line(
            out,
            &format!(
                "instructions file: {} ({} bytes{})",
                file.path.display(),
                file.text.len(),
                if file.cut { ", cut at the bound" } else { "" }
            ),
        )?;
    }
    if !agents.is_empty() {
        let named: Vec<String> = agents
            .iter()
            .map(|(name, a)| format!("{name} ({})", a.kind.as_deref().unwrap_or("rein")))
            .collect();
        line(out, &format!("agents: {}", named.join(", ")))?;
    }
    Ok(())
}

fn check(home: &Path, root: &Path, out: &mut impl Write) -> Result<(), AgentError> {
    // Every file, trusted or not: a person checks a project before trusting it.
    let project = root.join(PROJECT_FILE);
    let mut files = vec![home.join(rein::config::CONFIG_FILE)];
    if project.exists() {
        files.push(project);
    }
    for file in &files {
        let Ok(meta) = std::fs::metadata(file) else {
            continue;
        };
        if meta.len() > rein::config::MAX_FILE_BYTES {
            return Err(AgentError::new(
                codes::CONFIG_INVALID,
                format!(
                    "{}: {} bytes; a config file is at most {}",
                    file.display(),
                    meta.len(),
                    rein::config::MAX_FILE_BYTES
                ),
            ));
        }
        let text = std::fs::read_to_string(file).map_err(|e| {
            AgentError::new(codes::CONFIG_INVALID, format!("{}: {e}", file.display()))
        })?;
        rein::config::check(&text).map_err(|(line, why)| {
            AgentError::new(
                codes::CONFIG_INVALID,
                format!("{}:{line}: {why}", file.display()),
            )
        })?;
        // The sections other parts own, checked by them.
        let mut loaded = Loaded::default();
        let table: toml::Table = toml::from_str(&text).map_err(|e| {
            AgentError::new(codes::CONFIG_INVALID, format!("{}: {e}", file.display()))
        })?;
        loaded.apply(table, &rein::config::Source::User(file.clone()));
        let within = |err: AgentError| {
            AgentError::new(err.code, format!("{}: {}", file.display(), err.message))
        };
        rein::mcp::McpConfig::parse(&loaded.section_text("mcp")).map_err(within)?;
        rein::host::config::AgentsConfig::parse(&loaded.section_text("agents")).map_err(within)?;
        rein::compose::commands_config(&loaded).map_err(within)?;
        for name in loaded
            .agents()?
            .iter()
            .filter(|(_, a)| a.is_native())
            .map(|(n, _)| n.clone())
        {
            let effective = loaded.agent(Some(&name), &AgentSpec::default())?;
            rein::compose::check_spec(&effective.spec).map_err(within)?;
        }
        rein::compose::check_spec(&loaded.agent(None, &AgentSpec::default())?.spec)
            .map_err(within)?;
        let trust = if file.starts_with(home) || rein::config::trusted(home, root) {
            ""
        } else {
            " (not trusted: not applied until `rein config trust`)"
        };
        writeln!(out, "ok: {}{trust}", file.display()).map_err(io)?;
    }
    Ok(())
}
