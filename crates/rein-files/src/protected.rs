//! The paths inside the root that the file tools never change without the
//! person's yes to that very call: what runs later on the person's machine
//! or decides what does — `.git/` (its hooks run at git's next commit, its
//! config names programs git runs), `.rein/` (the project's config: hooks,
//! the sandbox, the model server), rein's home when it lies under the
//! root, and any the agent definition adds.
//!
//! A write there is of the class `protected` (no lease, no "always" covers
//! it); the preview says what the file does; a link is named with what it
//! leads to (`notes.md → .git/config`) and protected as its target. The
//! check is made again on the folder actually opened for the write
//! ([`Root::write`](crate::Root::write)), so a link swapped after the
//! person was asked changes nothing.
//!
//! Not here: the sandbox's rule for the same paths (`rein-sandbox`'s
//! `protect`), which keeps them read-only to commands.

use std::path::{Component, Path, PathBuf};

/// The names protected in every root (as `rein-sandbox` protects them).
pub const PROTECTED_NAMES: &[&str] = &[".git", ".rein"];

/// The protected paths of one root, relative to it.
#[derive(Debug, Clone)]
pub struct Protected {
    /// Each with why it is protected.
    paths: Vec<(PathBuf, Why)>,
}

/// Why a path is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    Git,
    ReinProject,
    ReinHome,
    Definition,
}

/// A protected path as a person is told before a write to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guarded {
    /// The path written, as the root resolves it (a link's target).
    pub target: String,
    /// What the file does, in a sentence.
    pub what: String,
}

impl Default for Protected {
    fn default() -> Self {
        Protected {
            paths: vec![
                (PathBuf::from(".git"), Why::Git),
                (PathBuf::from(".rein"), Why::ReinProject),
            ],
        }
    }
}

impl Protected {
    /// Also rein's home (relative to the root, when it lies under it).
    pub fn with_home(mut self, home: PathBuf) -> Self {
        self.paths.push((home, Why::ReinHome));
        self
    }

    /// Also the definition's own paths (relative to the root).
    pub fn with_paths(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.paths
            .extend(paths.into_iter().map(|p| (p, Why::Definition)));
        self
    }

    /// Whether `resolved` (relative to the root, links resolved) is
    /// protected, and what it is. Names compare without case: a
    /// case-blind file system opens `.GIT/config` as `.git/config`.
    ///
    /// `.git` and `.rein` are protected at any depth: a nested repository
    /// (a submodule, a vendored checkout) runs its hooks as well.
    pub fn guarded(&self, resolved: &Path) -> Option<Guarded> {
        let parts = lowered(resolved);
        let found = self.paths.iter().find_map(|(path, why)| {
            let prefix = lowered(path);
            parts.starts_with(&prefix).then_some((prefix.len(), *why))
        });
        let (at, why) = found.or_else(|| {
            parts
                .iter()
                .enumerate()
                .find_map(|(i, part)| match part.as_str() {
                    ".git" => Some((i + 1, Why::Git)),
                    ".rein" => Some((i + 1, Why::ReinProject)),
                    _ => None,
                })
        })?;
        Some(Guarded {
            target: resolved.display().to_string(),
            what: what(why, &parts[at..]),
        })
    }
}

fn lowered(path: &Path) -> Vec<String> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().to_lowercase()),
            _ => None,
        })
        .collect()
}

fn what(why: Why, rest: &[String]) -> String {
    let first = rest.first().map(String::as_str);
    match why {
        Why::Git if first == Some("hooks") => {
            "runs on your machine: a git hook (git runs it at its next commit, checkout, merge or push)".into()
        }
        Why::Git if first == Some("config") => {
            "git's config: it can name programs git runs on your machine (core.fsmonitor, core.hooksPath, aliases)".into()
        }
        Why::Git => "git's own data: what git runs and what your history is".into(),
        Why::ReinProject => {
            "rein's project config: the hooks, sandbox and model server rein uses in this folder".into()
        }
        Why::ReinHome => "rein's home: its config, sessions and memory".into(),
        Why::Definition => "protected by the agent definition".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_rein_and_added_paths_are_told_apart() {
        let protected = Protected::default()
            .with_home(PathBuf::from("home/.rein-home"))
            .with_paths([PathBuf::from("deploy/run.sh")]);
        let said = |p: &str| protected.guarded(Path::new(p)).map(|g| g.what);
        assert!(said(".git/hooks/pre-commit").unwrap().contains("git hook"));
        assert!(said(".GIT/Config").unwrap().contains("git's config"));
        assert!(said(".git/HEAD").unwrap().contains("git's own data"));
        assert!(
            said(".rein/config.toml")
                .unwrap()
                .contains("project config")
        );
        assert!(
            said("home/.rein-home/config.toml")
                .unwrap()
                .contains("home")
        );
        assert!(said("deploy/run.sh").unwrap().contains("definition"));
        assert_eq!(said("src/.git.rs"), None);
        assert!(
            said("vendor/lib/.git/hooks/post-checkout")
                .unwrap()
                .contains("git hook")
        );
        assert!(
            said("sub/.rein/config.toml")
                .unwrap()
                .contains("project config")
        );
        assert_eq!(said("deploy/other.sh"), None);
    }
}
