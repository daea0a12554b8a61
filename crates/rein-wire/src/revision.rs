//! [`Revision`]: one resource (a file's path, a record) as one call saw or
//! left it — the words of the read-before-write rule.
//!
//! A tool says which revision a call saw (a read) or left (a write), and
//! which revision a change would replace; the runner keeps the one against
//! the other, so a model never changes what it has not seen as it is now,
//! and a person's approval holds only for the revision they were shown.
//!
//! Not here: the rule itself (`rein-runner`), or how a tool computes a
//! token (a file tool hashes the content).

use serde::{Deserialize, Serialize};

/// One resource at one revision.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Revision {
    /// What it is, in the tool's own words (a path relative to the root).
    pub resource: String,
    /// Its revision (a content hash); `None`: it does not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

impl Revision {
    /// `resource` at `token` (`None`: absent).
    pub fn new(resource: impl Into<String>, token: Option<String>) -> Self {
        Revision {
            resource: resource.into(),
            token,
        }
    }

    /// Whether the resource exists at this revision.
    pub fn exists(&self) -> bool {
        self.token.is_some()
    }
}
