//! Which store a command opens: the one `--store` or `REIN_STORE` names,
//! else the home config's `[store] url` (never a project's: a project must
//! not send a person's transcripts elsewhere), else the home's SQLite
//! file; and the PostgreSQL store the workers share.
//!
//! Not here: the stores (`rein::sessions`), what a URL may name
//! (`rein::sessions::open_url`).

use std::path::PathBuf;
use std::sync::Arc;

use rein::sessions::{SqliteStore, Store};
use rein::wire::{AgentError, error::codes};

/// Set the store `--store`/`REIN_STORE` named, once, before any command;
/// `invalid_input` when the command line itself holds a password (every
/// user of the machine reads a command line: `ps`).
pub fn name(url: Option<String>, argv: &[String]) -> Result<(), AgentError> {
    let _ = STORE_URL.set(url);
    let given = argv.iter().enumerate().filter_map(|(i, arg)| {
        arg.strip_prefix("--store=").or_else(|| {
            (arg == "--store")
                .then(|| argv.get(i + 1).map(String::as_str))
                .flatten()
        })
    });
    for url in given {
        if has_password(url) {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                "--store holds a password, which every user of this machine can read (`ps`): put it in PGPASSWORD or ~/.pgpass and name the store postgres://USER@HOST/DATABASE",
            ));
        }
    }
    Ok(())
}

/// Whether a `postgres://USER:PASSWORD@…` URL carries a password.
fn has_password(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))
    else {
        return false;
    };
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    authority
        .rsplit_once('@')
        .is_some_and(|(user, _)| user.contains(':'))
}

/// The store `--store` (or `REIN_STORE`) names, set once before any
/// command runs: every command opens the same one.
static STORE_URL: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();

/// The PostgreSQL store the workers share (what `rein worker` and `rein
/// run --detach` need); `invalid_input` for any other.
pub async fn open_shared(
    home: Option<PathBuf>,
    verb: &str,
) -> Result<Arc<rein::sessions::PgStore>, AgentError> {
    let home = rein::sessions::home::resolve(home)?;
    match named_store(&home)? {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            Ok(Arc::new(rein::sessions::PgStore::open(&url).await?))
        }
        _ => Err(AgentError::new(
            codes::INVALID_INPUT,
            format!(
                "{verb} needs a PostgreSQL store the workers share: --store postgres://USER@HOST/DATABASE (or REIN_STORE)"
            ),
        )),
    }
}

/// The store a person named: `--store`/`REIN_STORE`, else the home
/// config's `[store] url` (never a project's).
fn named_store(home: &std::path::Path) -> Result<Option<String>, AgentError> {
    if let Some(url) = STORE_URL.get().cloned().flatten() {
        return Ok(Some(url));
    }
    if !home.join(rein::config::CONFIG_FILE).exists() {
        return Ok(None);
    }
    Ok(rein::config::Loaded::load(home, None)?
        .file()?
        .store
        .map(|spec| spec.url))
}

/// The store: `--store`/`REIN_STORE`, else the home config's `[store]
/// url` (never a project's: a project must not send a person's
/// transcripts elsewhere), else the SQLite file in the home.
pub async fn open(home: Option<PathBuf>) -> Result<Arc<dyn Store>, AgentError> {
    let home = rein::sessions::home::resolve(home)?;
    match named_store(&home)? {
        Some(url) => rein::sessions::open_url(&url).await,
        None => Ok(Arc::new(SqliteStore::open_home(&home).await?)),
    }
}
