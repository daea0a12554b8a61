//! Which process holds a session's lease, and whether it is provably gone.
//!
//! A lease carries a [`ProcessMark`] of the process that took it: the host
//! name, the kernel's boot id, the pid namespace, the pid and the process's
//! start time. A crashed holder's lease would otherwise keep the session
//! locked for its whole time to live; when every part of the mark says
//! "this host, this boot, this pid namespace" and the pid is gone (or now
//! belongs to a process started at another time), the holder is provably
//! dead and another process may take the lease at once.
//!
//! Anything that cannot be proved — another host, another container, a
//! `/proc` that cannot be read — leaves the lease to expire as before. A
//! wrong "dead" would let two writers in; a wrong "alive" only waits.
//!
//! Not here: the lease's expiry and tokens (the stores), which stay the
//! guard on every append.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The process that took a lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessMark {
    /// The host name.
    pub host: String,
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`).
    pub boot_id: String,
    /// The pid namespace (`/proc/self/ns/pid`).
    pub pid_ns: String,
    /// The process id.
    pub pid: u32,
    /// When the process started, in clock ticks after boot (`/proc/PID/stat`).
    pub start_ticks: u64,
}

impl ProcessMark {
    /// This process's mark, or `None` where `/proc` does not tell.
    pub fn current() -> Option<ProcessMark> {
        static MARK: OnceLock<Option<ProcessMark>> = OnceLock::new();
        MARK.get_or_init(|| {
            let pid = std::process::id();
            Some(ProcessMark {
                host: read_trimmed("/proc/sys/kernel/hostname")?,
                boot_id: read_trimmed("/proc/sys/kernel/random/boot_id")?,
                pid_ns: std::fs::read_link("/proc/self/ns/pid")
                    .ok()?
                    .to_string_lossy()
                    .into_owned(),
                pid,
                start_ticks: start_ticks(pid)?,
            })
        })
        .clone()
    }

    /// Whether this process can prove the marked one has ended: same host,
    /// boot and pid namespace, and its pid is free or taken by a process
    /// started at another time.
    pub fn provably_dead(&self) -> bool {
        let Some(me) = ProcessMark::current() else {
            return false;
        };
        if self.host != me.host || self.boot_id != me.boot_id || self.pid_ns != me.pid_ns {
            return false;
        }
        if self.pid == me.pid {
            return self.start_ticks != me.start_ticks;
        }
        match std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            Ok(stat) => parse_start_ticks(&stat).is_some_and(|t| t != self.start_ticks),
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        }
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn start_ticks(pid: u32) -> Option<u64> {
    parse_start_ticks(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Field 22 of `/proc/PID/stat`. The second field (the command name, in
/// parentheses) may itself hold spaces and parentheses, so fields are
/// counted after its last `)`.
fn parse_start_ticks(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    // After the name: field 3 (state) is the first; 22 is the 20th.
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_time_is_read_past_a_hostile_command_name() {
        let stat =
            "4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_start_ticks(stat), Some(987_654));
        assert_eq!(parse_start_ticks("garbage"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_finished_child_is_dead() {
        let Some(me) = ProcessMark::current() else {
            eprintln!("NOTICE: skipping: /proc does not describe this process");
            return;
        };
        assert!(!me.provably_dead());
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("`true` runs");
        let pid = child.id();
        let mark = ProcessMark {
            pid,
            start_ticks: start_ticks(pid).unwrap_or(0),
            ..me.clone()
        };
        child.wait().expect("`true` ends");
        assert!(mark.provably_dead(), "{mark:?}");
        // Another host, boot or namespace is never provably dead.
        for other in [
            ProcessMark {
                host: "elsewhere".into(),
                ..mark.clone()
            },
            ProcessMark {
                boot_id: "another-boot".into(),
                ..mark.clone()
            },
            ProcessMark {
                pid_ns: "pid:[1]".into(),
                ..mark.clone()
            },
        ] {
            assert!(!other.provably_dead(), "{other:?}");
        }
        // The same pid started at another time is another process.
        let reused = ProcessMark {
            start_ticks: me.start_ticks + 1,
            ..me
        };
        assert!(reused.provably_dead());
    }
}
