//! What a confined command may do, as the parent tells the helper that
//! applies it (`rein-sandbox-exec`): plain data, passed as JSON in one
//! environment variable and removed before the command runs.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The variable the spec travels in.
pub const SPEC_VAR: &str = "REIN_SANDBOX_SPEC";

/// Set (to `1`) when the helper is started by a keeper to become its
/// command: it enters a landlock domain of its own, then runs the command.
/// Never passed on from a request's environment.
pub const APART_VAR: &str = "REIN_SANDBOX_APART";

/// The helper's exit code when it refuses to run the command (the
/// kernel cannot confine it, or the spec is bad): distinct from any the
/// command gives, and paired with a `rein-sandbox: refused:` line.
pub const REFUSED_EXIT: i32 = 125;

/// The stderr marker of a refusal.
pub const REFUSED_MARK: &str = "rein-sandbox: refused: ";

/// Resource bounds, each applied with `setrlimit` (soft = hard).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// CPU seconds.
    pub cpu_secs: u64,
    /// Address space, bytes.
    pub memory_bytes: u64,
    /// Processes of the user (not enforced for root by the kernel; the
    /// wall-clock limit and the group kill bound a root fork bomb).
    pub processes: u64,
    /// The largest file it may write, bytes.
    pub file_bytes: u64,
    /// Open files.
    pub open_files: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            cpu_secs: 60,
            memory_bytes: 2 * 1024 * 1024 * 1024,
            processes: 256,
            file_bytes: 256 * 1024 * 1024,
            open_files: 256,
        }
    }
}

/// How the protected paths are kept read-only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProtectBy {
    /// A mount namespace of the command's own with each protected path
    /// bound read-only over itself (a user namespace too where the helper
    /// is not root); where none can be made, landlock as below.
    #[default]
    Mounts,
    /// Landlock alone: the writable trees are granted entry by entry,
    /// around the protected paths, so nothing new can be made beside one
    /// (in the folder that holds `.git`, no new file or folder).
    Landlock,
}

/// The confinement of one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spec {
    /// Readable (and executable) trees.
    pub read: Vec<PathBuf>,
    /// Writable trees (readable too).
    pub write: Vec<PathBuf>,
    /// Paths inside the writable trees that stay read-only (`.git`,
    /// `.rein`: what runs later on the host), each existing and resolved.
    /// Empty under bubblewrap, which binds them read-only itself.
    #[serde(default)]
    pub protect: Vec<PathBuf>,
    /// How they are kept read-only.
    #[serde(default)]
    pub protect_by: ProtectBy,
    /// Whether network sockets (IPv4, IPv6, raw packets) may be opened.
    pub network: bool,
    /// The bounds.
    pub limits: Limits,
    /// A pids cgroup made for this run, which the helper joins before
    /// anything else (bounds a fork bomb even for root).
    pub pids_cgroup: Option<PathBuf>,
    /// The process that started the helper: the helper stays as the
    /// command's keeper and kills its whole group when that process dies,
    /// and the command does not run at all when it is gone already (`None`
    /// inside bubblewrap, which dies with its parent).
    #[serde(default)]
    pub parent: Option<u32>,
    /// The command.
    pub argv: Vec<String>,
}
