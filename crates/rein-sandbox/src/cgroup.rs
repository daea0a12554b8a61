//! A pids cgroup per run, where the machine offers one (cgroup v1's
//! `pids` hierarchy, writable): the kernel then refuses forks past the
//! bound, for root too — `RLIMIT_NPROC` does not bind root. Where there is
//! none, the wall-clock limit and the group kill still bound a fork bomb.
//! A cgroup is named after the rein process that made it: the first run of
//! a later rein kills what is left in the cgroups of one that died (killed
//! outright, it could not clean up) and removes them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const V1_PIDS: &str = "/sys/fs/cgroup/pids";

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A cgroup made for one run; removed when dropped (once empty).
#[derive(Debug)]
pub(crate) struct PidsCgroup {
    path: PathBuf,
}

impl PidsCgroup {
    /// A new cgroup allowing `max` processes, or `None` where none can be
    /// made.
    pub(crate) fn create(max: u64) -> Option<PidsCgroup> {
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

    pub(crate) fn path(&self) -> &Path {
        &self.path
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
        for _ in 0..50 {
            let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
            let pids: Vec<i32> = procs
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect();
            if pids.is_empty() {
                break;
            }
            for pid in pids {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if std::fs::remove_dir(&dir).is_ok() {
            tracing::info!(path = %dir.display(), "removed a dead rein's sandbox cgroup");
        }
    }
}
