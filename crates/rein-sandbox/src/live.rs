//! The process groups of the commands running now, so that nothing a
//! command started outlives rein: a surface told to end (SIGTERM, SIGHUP)
//! calls [`kill_running`] before it exits. Where rein is killed outright,
//! the helper (the command's keeper, told by its parent-death signal)
//! kills the command's whole group, and the next
//! start sweeps what is left in a dead run's pids cgroup (`cgroup`).
//!
//! Not here: the kill at the wall-clock limit and after the command exits
//! (`run`).

use std::collections::BTreeSet;
use std::sync::Mutex;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

static LIVE: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// A running command's group, known until dropped (after it was killed).
pub(crate) struct Live(Option<i32>);

impl Live {
    pub(crate) fn new(group: Option<Pid>) -> Live {
        let group = group.map(Pid::as_raw);
        if let Some(group) = group {
            LIVE.lock().unwrap_or_else(|p| p.into_inner()).insert(group);
        }
        Live(group)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(group) = self.0 {
            LIVE.lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&group);
        }
    }
}

/// Kill the whole group of every command running now (for a surface about
/// to exit on a signal). Safe to call from any thread, any number of times.
pub fn kill_running() {
    let groups: Vec<i32> = LIVE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .copied()
        .collect();
    for group in groups {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
}
