//! Plugins: a folder that bundles what an agent is given — MCP servers,
//! named agents, hooks, instructions, skills — behind one manifest
//! (`rein-plugin.toml`: a `[plugin]` table naming it, then any sections of a
//! config file but `[store]`), added and removed as a unit.
//!
//! `add` copies the folder into rein's home (`plugins/NAME`), refusing a
//! link, a device or a FIFO in it, more than [`MAX_FILES`] files or
//! [`MAX_PLUGIN_BYTES`] bytes, and a name that is no plain word (a git
//! repository is cloned by the caller, `rein plugin add`; a clone's `.git`
//! is not copied). A plugin added is
//! not trusted: its servers and hooks run only once a person trusts it
//! (`trust`), bound to the hash of every file in its folder — a plugin
//! changed since (by a command, an update, a hostile model) is left out,
//! said in one line, until it is trusted again. In the manifest,
//! `${REIN_PLUGIN_ROOT}` is the plugin's folder (its server's script, its
//! hook's command); `[plugin] skills = "FOLDER"` (inside the plugin) gives
//! skills that join every agent's own. Trusted plugins are a layer under
//! rein's home config: the person's own file still has the last word.
//!
//! Not here: the layers (`layers`), what a section means (`spec`).

use std::io::Read as _;
use std::path::{Path, PathBuf};

use rein_wire::{AgentError, error::codes};
use serde::Serialize;

/// The folder of installed plugins, in rein's home.
pub const PLUGINS_DIR: &str = "plugins";
/// A plugin's manifest, at its folder's top.
pub const MANIFEST: &str = "rein-plugin.toml";
/// The trusted plugins (`NAME HASH` per line), in rein's home.
pub const TRUSTED_PLUGINS: &str = "trusted-plugins";
/// What `${REIN_PLUGIN_ROOT}` in a manifest stands for: the plugin's folder.
pub const ROOT_VARIABLE: &str = "${REIN_PLUGIN_ROOT}";
/// Files in one plugin, at most.
pub const MAX_FILES: usize = 2_000;
/// Bytes in one plugin, at most.
pub const MAX_PLUGIN_BYTES: u64 = 64 * 1024 * 1024;

/// Whether a person trusts a plugin as it is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// Trusted, and unchanged since: it applies.
    Trusted,
    /// Never trusted: it does not apply.
    Untrusted,
    /// Trusted once, changed since: it does not apply.
    Changed,
    /// Its manifest or files cannot be used (`problem` says why): it does
    /// not apply.
    Unreadable,
}

/// An installed plugin.
#[derive(Debug, Clone, Serialize)]
pub struct Plugin {
    /// Its name (its folder's, under `plugins/`).
    pub name: String,
    /// What it says it is.
    pub description: String,
    /// Where it is installed.
    pub folder: PathBuf,
    /// The hash of every file in it.
    pub hash: String,
    /// Whether it applies.
    pub trust: Trust,
    /// What it brings: the sections its manifest sets (`mcp.servers.docs`,
    /// `agents.reviewer`, `agent.hooks`, …).
    pub brings: Vec<String>,
    /// Its skills folder, when it gives one (`[plugin] skills`).
    pub skills: Option<PathBuf>,
    /// Why it cannot be used, when it cannot.
    pub problem: Option<String>,
}

fn invalid(message: String) -> AgentError {
    AgentError::new(codes::CONFIG_INVALID, message)
}

fn input(message: String) -> AgentError {
    AgentError::new(codes::INVALID_INPUT, message)
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> AgentError + '_ {
    move |e| input(format!("{}: {e}", path.display()))
}

/// A plugin's name: a plain word (letters, digits, `-`, `_`), at most 64.
fn check_name(name: &str) -> Result<(), AgentError> {
    let plain = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if plain {
        Ok(())
    } else {
        Err(invalid(format!(
            "plugin name {name:?}: use letters, digits, `-` and `_` (at most 64)"
        )))
    }
}

/// The manifest in `folder`: its name, description and config sections
/// (checked as a config file, `${REIN_PLUGIN_ROOT}` as `root`).
pub(crate) fn manifest(folder: &Path, root: &Path) -> Result<(About, toml::Table), AgentError> {
    let path = folder.join(MANIFEST);
    let text = crate::trust::read_text(&path)?
        .ok_or_else(|| invalid(format!("{}: no plugin manifest there", path.display())))?;
    let mut table: toml::Table =
        toml::from_str(&text).map_err(|e| invalid(format!("{}: {e}", path.display())))?;
    let Some(toml::Value::Table(about)) = table.remove("plugin") else {
        return Err(invalid(format!(
            "{}: a plugin's manifest starts with a [plugin] table naming it",
            path.display()
        )));
    };
    let name = about
        .get("name")
        .and_then(toml::Value::as_str)
        .unwrap_or_default()
        .to_owned();
    check_name(&name)?;
    let description = about
        .get("description")
        .and_then(toml::Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let skills = match about.get("skills") {
        None => None,
        Some(toml::Value::String(dir)) => Some(skills_folder(folder, root, dir)?),
        Some(_) => {
            return Err(invalid(format!(
                "{}: [plugin] skills is a folder's name, inside the plugin",
                path.display()
            )));
        }
    };
    if table.contains_key("store") {
        return Err(invalid(format!(
            "{}: a plugin may not say where sessions are kept ([store] is the home config's)",
            path.display()
        )));
    }
    let root = root.to_string_lossy();
    let table = rooted(table, &root);
    <crate::spec::ConfigFile as serde::Deserialize>::deserialize(toml::Value::Table(table.clone()))
        .map_err(|e| invalid(format!("{}: {}", path.display(), e.message().trim())))?;
    Ok((
        About {
            name,
            description,
            skills,
        },
        table,
    ))
}

/// What a manifest's `[plugin]` table says.
pub(crate) struct About {
    name: String,
    description: String,
    skills: Option<PathBuf>,
}

/// The skills folder `dir` of the plugin in `folder` (installed at
/// `root`): a relative path that stays inside it, and a folder.
fn skills_folder(folder: &Path, root: &Path, dir: &str) -> Result<PathBuf, AgentError> {
    let relative = Path::new(dir);
    let inside = relative
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !inside || !folder.join(relative).is_dir() {
        return Err(invalid(format!(
            "{}: [plugin] skills = {dir:?} is no folder inside the plugin",
            folder.join(MANIFEST).display()
        )));
    }
    Ok(root.join(relative))
}

/// `table` with `${REIN_PLUGIN_ROOT}` in every string as `root`.
fn rooted(table: toml::Table, root: &str) -> toml::Table {
    fn value(v: toml::Value, root: &str) -> toml::Value {
        match v {
            toml::Value::String(s) => toml::Value::String(s.replace(ROOT_VARIABLE, root)),
            toml::Value::Array(items) => {
                toml::Value::Array(items.into_iter().map(|i| value(i, root)).collect())
            }
            toml::Value::Table(t) => toml::Value::Table(rooted(t, root)),
            other => other,
        }
    }
    table
        .into_iter()
        .map(|(k, v)| (k, value(v, root)))
        .collect()
}

/// What a manifest's sections set, two levels deep (`mcp.servers.docs`).
fn brings(table: &toml::Table) -> Vec<String> {
    let mut said = Vec::new();
    for (key, value) in table {
        match value {
            toml::Value::Table(inner) if key == "mcp" => {
                for (kind, servers) in inner {
                    match servers {
                        toml::Value::Table(servers) => {
                            said.extend(servers.keys().map(|s| format!("mcp.{kind}.{s}")));
                        }
                        _ => said.push(format!("mcp.{kind}")),
                    }
                }
            }
            toml::Value::Table(inner) => said.extend(inner.keys().map(|k| format!("{key}.{k}"))),
            _ => said.push(key.clone()),
        }
    }
    said
}

/// Every regular file under `folder` (relative paths, sorted), refusing
/// links and special files and holding the bounds.
fn files(folder: &Path) -> Result<Vec<PathBuf>, AgentError> {
    let mut found = Vec::new();
    let mut bytes = 0u64;
    let mut dirs = vec![PathBuf::new()];
    while let Some(dir) = dirs.pop() {
        let here = folder.join(&dir);
        for entry in std::fs::read_dir(&here).map_err(io(&here))? {
            let entry = entry.map_err(io(&here))?;
            let relative = dir.join(entry.file_name());
            let kind = entry.file_type().map_err(io(&here))?;
            if kind.is_dir() {
                if relative != Path::new(".git") {
                    dirs.push(relative);
                }
            } else if kind.is_file() {
                bytes += entry.metadata().map_err(io(&here))?.len();
                found.push(relative);
            } else {
                return Err(input(format!(
                    "{}: a plugin holds plain files and folders only (a link, a device or a FIFO is refused)",
                    folder.join(&relative).display()
                )));
            }
            if found.len() > MAX_FILES || bytes > MAX_PLUGIN_BYTES {
                return Err(input(format!(
                    "{}: a plugin is at most {MAX_FILES} files and {MAX_PLUGIN_BYTES} bytes",
                    folder.display()
                )));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The hash of every file in `folder`: each one's path, length and bytes.
fn hash(folder: &Path) -> Result<String, AgentError> {
    let mut hasher = blake3::Hasher::new();
    for relative in files(folder)? {
        let path = folder.join(&relative);
        let mut bytes = Vec::new();
        std::fs::File::open(&path)
            .and_then(|f| f.take(MAX_PLUGIN_BYTES).read_to_end(&mut bytes))
            .map_err(io(&path))?;
        let name = relative.to_string_lossy();
        hasher.update(&(name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(hasher.finalize().to_hex().to_string())
}

/// The trusted plugins' names and hashes.
fn trusted(home: &Path) -> Result<Vec<(String, String)>, AgentError> {
    let text = crate::trust::read_text(&home.join(TRUSTED_PLUGINS))?.unwrap_or_default();
    Ok(text
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(name, hash)| (name.to_owned(), hash.trim().to_owned()))
        .collect())
}

fn write_trusted(home: &Path, list: &[(String, String)]) -> Result<(), AgentError> {
    let text: String = list.iter().map(|(n, h)| format!("{n} {h}\n")).collect();
    let path = home.join(TRUSTED_PLUGINS);
    let staged = home.join(format!("{TRUSTED_PLUGINS}.new"));
    std::fs::write(&staged, text)
        .and_then(|()| std::fs::rename(&staged, &path))
        .map_err(io(&path))
}

/// The plugin installed in `folder`, read now.
fn read(home: &Path, folder: &Path) -> Result<(Plugin, toml::Table), AgentError> {
    let (
        About {
            name,
            description,
            skills,
        },
        table,
    ) = manifest(folder, folder)?;
    if folder.file_name() != Some(std::ffi::OsStr::new(&name)) {
        return Err(invalid(format!(
            "{}: its manifest names it `{name}`; a plugin's folder bears its name",
            folder.display()
        )));
    }
    let hash = hash(folder)?;
    let trust = match trusted(home)?.into_iter().find(|(n, _)| *n == name) {
        Some((_, h)) if h == hash => Trust::Trusted,
        Some(_) => Trust::Changed,
        None => Trust::Untrusted,
    };
    let plugin = Plugin {
        brings: brings(&table),
        name,
        description,
        folder: folder.to_owned(),
        hash,
        trust,
        skills,
        problem: None,
    };
    Ok((plugin, table))
}

/// The plugins installed in `home`, by name, each with its sections (none
/// for one that cannot be used: its `problem` says why).
pub(crate) fn installed_with_sections(
    home: &Path,
) -> Result<Vec<(Plugin, toml::Table)>, AgentError> {
    let dir = home.join(PLUGINS_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(&dir)(e)),
    };
    let mut folders: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| std::fs::canonicalize(e.path()).unwrap_or_else(|_| e.path()))
        .collect();
    folders.sort();
    Ok(folders
        .iter()
        .map(|folder| {
            read(home, folder).unwrap_or_else(|err| {
                let plugin = Plugin {
                    name: folder
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    description: String::new(),
                    folder: folder.clone(),
                    hash: String::new(),
                    trust: Trust::Unreadable,
                    brings: Vec::new(),
                    skills: None,
                    problem: Some(err.message),
                };
                (plugin, toml::Table::new())
            })
        })
        .collect())
}

/// The plugins installed in `home`, by name.
pub fn installed(home: &Path) -> Result<Vec<Plugin>, AgentError> {
    Ok(installed_with_sections(home)?
        .into_iter()
        .map(|(p, _)| p)
        .collect())
}

/// Install the plugin in the folder `source` into `home`, not trusted. One
/// of that name installed already is a `conflict`: remove it first. (A git
/// repository is cloned by the caller: nothing here runs a program.)
pub fn add(home: &Path, source: &Path) -> Result<Plugin, AgentError> {
    if !source.is_dir() {
        return Err(input(format!(
            "{}: no such folder (a plugin is a folder holding {MANIFEST})",
            source.display()
        )));
    }
    install(home, source)
}

/// A fresh folder beside the plugins, for a copy in progress.
fn staging(home: &Path) -> Result<PathBuf, AgentError> {
    let dir = home.join(PLUGINS_DIR);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    Ok(dir.join(format!(".staged-{}", rein_wire::ids::new_id())))
}

fn install(home: &Path, source: &Path) -> Result<Plugin, AgentError> {
    let (About { name, .. }, _) = manifest(source, source)?;
    let target = home.join(PLUGINS_DIR).join(&name);
    if target.exists() {
        return Err(AgentError::new(
            codes::CONFLICT,
            format!(
                "a plugin named `{name}` is installed; remove it first (rein plugin remove {name})"
            ),
        ));
    }
    let staged = staging(home)?;
    let copied = files(source).and_then(|list| {
        for relative in list {
            let to = staged.join(&relative);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            std::fs::copy(source.join(&relative), &to).map_err(io(&to))?;
        }
        std::fs::rename(&staged, &target).map_err(io(&target))
    });
    if let Err(err) = copied {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(err);
    }
    Ok(read(home, &target)?.0)
}

fn find(home: &Path, name: &str) -> Result<PathBuf, AgentError> {
    check_name(name)?;
    let folder = home.join(PLUGINS_DIR).join(name);
    if folder.is_dir() {
        Ok(folder)
    } else {
        Err(AgentError::new(
            codes::PLUGIN_NOT_FOUND,
            format!("no plugin `{name}` is installed (rein plugin list)"),
        ))
    }
}

/// Trust plugin `name` as it is now: it applies while every file in it is
/// as it is now.
pub fn trust(home: &Path, name: &str) -> Result<Plugin, AgentError> {
    let folder = find(home, name)?;
    let (mut plugin, _) = read(home, &folder)?;
    let mut list = trusted(home)?;
    list.retain(|(n, _)| n != name);
    list.push((name.to_owned(), plugin.hash.clone()));
    write_trusted(home, &list)?;
    plugin.trust = Trust::Trusted;
    Ok(plugin)
}

/// Remove plugin `name`: its folder and the trust in it.
pub fn remove(home: &Path, name: &str) -> Result<(), AgentError> {
    let folder = find(home, name)?;
    let mut list = trusted(home)?;
    list.retain(|(n, _)| n != name);
    write_trusted(home, &list)?;
    std::fs::remove_dir_all(&folder).map_err(io(&folder))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::{MANIFEST, PLUGINS_DIR, Trust, add, installed, trust};
    use crate::Loaded;

    fn write(path: &std::path::Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_broken_plugin_is_left_out_and_said_and_the_root_is_the_plugins_folder() {
        let home = tempfile::tempdir().unwrap();
        let source = tempfile::tempdir().unwrap();
        write(
            &source.path().join(MANIFEST),
            "[plugin]\nname = \"docs\"\n\n[mcp.servers.docs]\ncommand = \"${REIN_PLUGIN_ROOT}/serve\"\n",
        );
        add(home.path(), source.path()).unwrap();
        trust(home.path(), "docs").unwrap();
        // Broken after it was installed: not a plugin any more.
        write(
            &home.path().join(PLUGINS_DIR).join("broken").join(MANIFEST),
            "[plugin]\nname = \"broken\"\n\n[agent]\nno_such_field = 1\n",
        );
        let listed = installed(home.path()).unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].trust, Trust::Unreadable);
        assert!(
            listed[0]
                .problem
                .as_deref()
                .unwrap()
                .contains("no_such_field")
        );
        let loaded = Loaded::load(home.path(), None).unwrap();
        assert!(
            loaded
                .notes
                .iter()
                .any(|n| n.starts_with("plugin broken is not applied")),
            "{:?}",
            loaded.notes
        );
        // A skills folder outside the plugin: refused, nothing installed.
        let outside = tempfile::tempdir().unwrap();
        write(
            &outside.path().join(MANIFEST),
            "[plugin]\nname = \"outside\"\nskills = \"../\"\n",
        );
        let err = add(home.path(), outside.path()).unwrap_err();
        assert!(
            err.message.contains("no folder inside the plugin"),
            "{}",
            err.message
        );
        assert!(!home.path().join(PLUGINS_DIR).join("outside").exists());
        let installed_at =
            std::fs::canonicalize(home.path().join(PLUGINS_DIR).join("docs")).unwrap();
        let mcp = loaded.section_text("mcp");
        assert!(
            mcp.contains(&format!("{}/serve", installed_at.display())),
            "{mcp}"
        );
    }
}
