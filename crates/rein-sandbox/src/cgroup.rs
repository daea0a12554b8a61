//! A pids cgroup per run, where the machine offers one (cgroup v1's
//! `pids` hierarchy, writable): the kernel then refuses forks past the
//! bound, for root too — `RLIMIT_NPROC` does not bind root. Where there is
//! none, the wall-clock limit and the group kill still bound a fork bomb.
//! A cgroup is named after the rein process that made it: the first run of
//! a later rein kills what is left in the cgroups of one that died (killed
//! outright, it could not clean up) and removes them.
//!
//! A hosted program's keeper joins one too (`rein_host`): what the program
//! starts stays in it whatever it does to its keeper, and is killed with
//! the run ([`PidsCgroup::kill_all`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const V1_PIDS: &str = "/sys/fs/cgroup/pids";

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A cgroup made for one run; removed when dropped (once empty).
#[derive(Debug)]
pub struct PidsCgroup {
    path: PathBuf,
}

impl PidsCgroup {
    /// A new cgroup allowing `max` processes, or `None` where none can be
    /// made (no writable `pids` hierarchy: not root, or cgroup v2 alone).
    pub fn create(max: u64) -> Option<PidsCgroup> {
        let base = Path::new(V1_PIDS);
        if !base.join("cgroup.procs").is_file() {
            return None;
        }
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| sweep(base));
        let name = format!(
            "rein-sandbox-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = base.join(name);
        std::fs::create_dir(&path).ok()?;
        let cgroup = PidsCgroup { path };
        std::fs::write(cgroup.path.join("pids.max"), max.to_string()).ok()?;
        Some(cgroup)
    }

    /// Where it is (a process joins by writing its pid to `cgroup.procs`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Kill every process in it, until none is left.
    pub fn kill_all(&self) {
        kill_procs(&self.path);
    }
}

/// Kill the processes in the cgroup at `dir` until it is empty (a fork
/// racing the kill is caught next round; bounded tries).
fn kill_procs(dir: &Path) {
    for _ in 0..50 {
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        let pids: Vec<i32> = procs
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        // Empty once the group was killed; a straggler still exiting gets
        // a few tries.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.path).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        tracing::warn!(path = %self.path.display(), "a sandbox's pids cgroup could not be removed");
    }
}

/// Kill what is left in the cgroups of rein processes that are gone, and
/// remove those cgroups.
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix("rein-sandbox-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if owner == std::process::id() || Path::new(&format!("/proc/{owner}")).exists() {
            continue;
        }
        let dir = entry.path();
        kill_procs(&dir);
        if std::fs::remove_dir(&dir).is_ok() {
            tracing::info!(path = %dir.display(), "removed a dead rein's sandbox cgroup");
        }
    }
}
