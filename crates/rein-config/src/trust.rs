//! A person's trust in a project folder, bound to what its config says.
//!
//! `rein config trust DIR` lists the folder in rein's home
//! (`trusted-projects`) and keeps a copy of its `.rein/config.toml` as it
//! is then (`trusted/HASH.toml`, named by the folder's path). A project
//! config is applied only while it says exactly what was trusted: one a
//! command, a pull or a hostile model changed since is left out, said in
//! one line, until the person trusts it again — shown what changed.
//!
//! Every config file is read bounded: a regular file of at most
//! [`MAX_FILE_BYTES`](crate::MAX_FILE_BYTES), opened without blocking (a
//! FIFO planted as the config cannot hang rein, `/dev/zero` cannot fill
//! its memory).
//!
//! Not here: what a config means (`spec`), the layers (`layers`).

use std::io::Read as _;
use std::path::{Path, PathBuf};

use rein_wire::{AgentError, error::codes};

/// The project's config, relative to its root.
pub const PROJECT_FILE: &str = ".rein/config.toml";

/// The largest config file read (a config is a page, not a data set).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The list of folders a person trusted, in rein's home.
pub const TRUSTED_FILE: &str = "trusted-projects";

/// The folder of trusted configs' copies, in rein's home.
pub const TRUSTED_DIR: &str = "trusted";

fn invalid(message: String) -> AgentError {
    AgentError::new(codes::CONFIG_INVALID, message)
}

/// A config file's text, bounded; `None` when there is no file.
pub(crate) fn read_text(path: &Path) -> Result<Option<String>, AgentError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let fail = |e: std::io::Error| invalid(format!("{}: {e}", path.display()));
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(file) => file,
        // No file there (a root that is no folder has none either: the
        // caller says what is wrong with the root).
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(fail(e)),
    };
    let meta = file.metadata().map_err(fail)?;
    if !meta.is_file() {
        return Err(invalid(format!(
            "{}: not a regular file; a config is a file",
            path.display()
        )));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large(path, meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large(path, bytes.len() as u64));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| invalid(format!("{}: not UTF-8", path.display())))
}

fn too_large(path: &Path, len: u64) -> AgentError {
    invalid(format!(
        "{}: {len} bytes; a config file is at most {MAX_FILE_BYTES}",
        path.display()
    ))
}

/// Where the copy of `root`'s trusted config is kept.
fn copy_of(home: &Path, root: &Path) -> PathBuf {
    let name = blake3::hash(root.as_os_str().as_encoded_bytes()).to_hex();
    home.join(TRUSTED_DIR).join(format!("{}.toml", &name[..32]))
}

/// Whether `root` (resolved) is in the list.
fn listed(home: &Path, root: &Path) -> bool {
    std::fs::read_to_string(home.join(TRUSTED_FILE))
        .map(|text| text.lines().any(|line| Path::new(line.trim()) == root))
        .unwrap_or(false)
}

/// Where a folder's project config stands with the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Never trusted.
    Untrusted,
    /// Trusted, and it says what was trusted.
    Trusted,
    /// Trusted once, but it says something else now.
    Changed,
}

/// Where `text` (the folder's config as read now; `None`: no file) stands.
pub fn standing(home: &Path, root: &Path, text: Option<&str>) -> Standing {
    let Ok(root) = root.canonicalize() else {
        return Standing::Untrusted;
    };
    if !listed(home, &root) {
        return Standing::Untrusted;
    }
    // No file and an empty one say the same: nothing.
    let kept = read_text(&copy_of(home, &root)).ok().flatten();
    if kept.as_deref().unwrap_or("") == text.unwrap_or("") {
        Standing::Trusted
    } else {
        Standing::Changed
    }
}

/// Whether a person trusted `root` as its config is now (`rein config
/// trust`).
pub fn trusted(home: &Path, root: &Path) -> bool {
    let text = read_text(&root.join(PROJECT_FILE)).ok().flatten();
    standing(home, root, text.as_deref()) == Standing::Trusted
}

/// What `rein config trust` did.
#[derive(Debug, Clone)]
pub struct Trusted {
    /// The folder, resolved.
    pub root: PathBuf,
    /// What changed since it was last trusted (a unified diff; the whole
    /// file the first time); `None` when nothing did.
    pub changes: Option<String>,
}

/// Trust `root` as its `.rein/config.toml` is now: it applies from now on,
/// while it says this.
pub fn trust(home: &Path, root: &Path) -> Result<Trusted, AgentError> {
    let root = root
        .canonicalize()
        .map_err(|e| invalid(format!("{}: {e}", root.display())))?;
    let text = root.to_str().ok_or_else(|| {
        invalid(format!(
            "{} is not UTF-8; it cannot be trusted",
            root.display()
        ))
    })?;
    if text.contains('\n') {
        return Err(invalid(
            "a folder with a line break in its name cannot be trusted".into(),
        ));
    }
    let now = read_text(&root.join(PROJECT_FILE))?.unwrap_or_default();
    let copy = copy_of(home, &root);
    let before = read_text(&copy).ok().flatten();
    let changes = match &before {
        _ if before.as_deref().unwrap_or("") == now => None,
        _ => Some(
            similar::TextDiff::from_lines(before.as_deref().unwrap_or(""), &now)
                .unified_diff()
                .header("trusted before", PROJECT_FILE)
                .to_string(),
        ),
    };
    let dir = home.join(TRUSTED_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| invalid(format!("{}: {e}", dir.display())))?;
    // Written whole or not at all: a new file renamed over the old.
    let temp = copy.with_extension("toml.new");
    std::fs::write(&temp, &now)
        .and_then(|()| std::fs::rename(&temp, &copy))
        .map_err(|e| invalid(format!("{}: {e}", copy.display())))?;
    if !listed(home, &root) {
        let path = home.join(TRUSTED_FILE);
        let mut list = std::fs::read_to_string(&path).unwrap_or_default();
        list.push_str(text);
        list.push('\n');
        std::fs::write(&path, list).map_err(|e| invalid(format!("{}: {e}", path.display())))?;
    }
    Ok(Trusted { root, changes })
}

/// What a project config sets that reaches past the conversation — hooks,
/// the sandbox or the command policy, a model server, a key's variable,
/// MCP servers, hosted agents — said in one line when it is applied.
pub fn reaching(table: &toml::Table) -> Vec<&'static str> {
    let mut said = Vec::new();
    let agents: Vec<&toml::Table> = table
        .get("agent")
        .and_then(toml::Value::as_table)
        .into_iter()
        .chain(
            table
                .get("agents")
                .and_then(toml::Value::as_table)
                .into_iter()
                .flat_map(|named| named.values().filter_map(toml::Value::as_table)),
        )
        .collect();
    let any = |key: &str| agents.iter().any(|a| has_key(a, key));
    if any("hooks") {
        said.push("hooks");
    }
    for (key, words) in [
        ("sandbox", "the sandbox"),
        ("commands", "the command policy"),
    ] {
        if table.contains_key(key) {
            said.push(words);
        }
    }
    if any("base_url") {
        said.push("a model server (base_url)");
    }
    if any("key_env") || has_key(table, "key_env") {
        said.push("a key's variable");
    }
    if table.contains_key("mcp") {
        said.push("MCP servers");
    }
    if table
        .get("agents")
        .and_then(toml::Value::as_table)
        .is_some_and(|named| named.values().any(|a| a.get("kind").is_some()))
    {
        said.push("hosted agents");
    }
    said
}

/// Whether `key` is set anywhere in `table`, at any depth.
fn has_key(table: &toml::Table, key: &str) -> bool {
    table.iter().any(|(k, v)| {
        k == key
            || match v {
                toml::Value::Table(inner) => has_key(inner, key),
                toml::Value::Array(items) => items
                    .iter()
                    .any(|i| i.as_table().is_some_and(|t| has_key(t, key))),
                _ => false,
            }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_holds_while_the_config_says_what_was_trusted() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let file = project.path().join(PROJECT_FILE);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "[agent]\nmodel = \"m\"\n").unwrap();
        assert!(!trusted(home.path(), project.path()));
        let first = trust(home.path(), project.path()).unwrap();
        assert!(first.changes.unwrap().contains("+model = \"m\""));
        assert!(trusted(home.path(), project.path()));
        // A command appends a hook: no longer trusted.
        std::fs::write(
            &file,
            "[agent]\nmodel = \"m\"\n[[agent.hooks]]\nname = \"x\"\n",
        )
        .unwrap();
        assert!(!trusted(home.path(), project.path()));
        let text = read_text(&file).unwrap();
        assert_eq!(
            standing(home.path(), project.path(), text.as_deref()),
            Standing::Changed
        );
        let again = trust(home.path(), project.path()).unwrap();
        let diff = again.changes.unwrap();
        assert!(diff.contains("+[[agent.hooks]]"), "{diff}");
        assert!(!diff.contains("+model"), "{diff}");
        assert!(trusted(home.path(), project.path()));
        assert!(
            trust(home.path(), project.path())
                .unwrap()
                .changes
                .is_none()
        );
    }

    #[test]
    fn a_fifo_or_a_device_is_no_config() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("config.toml");
        nix_mkfifo(&fifo);
        assert!(read_text(&fifo).is_err());
        assert!(read_text(Path::new("/dev/zero")).is_err());
        assert_eq!(read_text(&dir.path().join("none.toml")).unwrap(), None);
    }

    fn nix_mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn what_reaches_past_the_conversation_is_named() {
        let table: toml::Table = toml::from_str(
            "[agent]\nbase_url = \"http://x\"\n[[agent.hooks]]\nname = \"h\"\ncommand = [\"x\"]\npoints = []\n[sandbox]\nbackend = \"host\"\n[mcp.servers.a]\ncommand = [\"x\"]\n",
        )
        .unwrap();
        assert_eq!(
            reaching(&table),
            vec![
                "hooks",
                "the sandbox",
                "a model server (base_url)",
                "MCP servers"
            ]
        );
        let quiet: toml::Table = toml::from_str("[agent]\nmodel = \"m\"\n").unwrap();
        assert!(reaching(&quiet).is_empty());
    }
}
