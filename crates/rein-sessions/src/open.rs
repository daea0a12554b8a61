//! A store named by a URL, as a person writes it after `--store`, in
//! `REIN_STORE` or in the home config's `[store] url`:
//!
//! - `postgres://…` or `postgresql://…`: [`crate::PgStore`] (feature
//!   `postgres`); the password best comes from `PGPASSWORD`, not the URL;
//! - `sqlite:PATH` or `sqlite://PATH`: [`crate::SqliteStore`] on that file.
//!
//! Anything else is `invalid_input`, naming the forms; a URL is never
//! echoed with its password.

use std::sync::Arc;

use rein_wire::{AgentError, error::codes};

use crate::Store;

/// The file a `sqlite:` URL names (`None`: another kind of store).
pub fn sqlite_path(url: &str) -> Option<&str> {
    url.strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
}

/// Open the store `url` names.
pub async fn open_url(url: &str) -> Result<Arc<dyn Store>, AgentError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        #[cfg(feature = "postgres")]
        return Ok(Arc::new(crate::PgStore::open(url).await?));
        #[cfg(not(feature = "postgres"))]
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            "this rein was built without the PostgreSQL store (feature `postgres`)",
        ));
    }
    if let Some(path) = sqlite_path(url) {
        #[cfg(feature = "sqlite")]
        return Ok(Arc::new(crate::SqliteStore::open(path).await?));
        #[cfg(not(feature = "sqlite"))]
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            format!("this rein was built without the SQLite store, so {path} cannot be opened"),
        ));
    }
    Err(AgentError::new(
        codes::INVALID_INPUT,
        "a store is named `postgres://USER@HOST:PORT/DATABASE` or `sqlite:PATH`",
    )
    .with_field("forms", "postgres://…, postgresql://…, sqlite:PATH"))
}
