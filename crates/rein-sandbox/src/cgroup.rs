//! A pids cgroup per run, where the machine offers one (cgroup v1's
//! `pids` hierarchy, writable): the kernel then refuses forks past the
//! bound, for root too — `RLIMIT_NPROC` does not bind root. Where there is
//! none, the wall-clock limit and the group kill still bound a fork bomb.

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
