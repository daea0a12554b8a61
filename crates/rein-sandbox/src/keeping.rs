//! What a keeper does with the process it keeps: reap what has ended,
//! sweep what is left, and end as the kept process ended. A keeper stands
//! between rein and a process so that nothing the process starts outlives
//! rein; it is a subreaper, so all that process leaves comes to it. Shared
//! by the sandbox's helper (`helper`) and a hosted program's keeper
//! (`rein_host::keeper`).
//!
//! Not here: when to sweep, and how each keeper reaches what is left (the
//! sandbox's `kill(-1)` scoped by landlock; the host's walk of `/proc`).

use nix::errno::Errno;
use nix::sys::signal::{SigSet, SigmaskHow, sigprocmask};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

/// How many rounds a sweep kills and reaps before it gives up.
const SWEEP_ROUNDS: u32 = 2_000;

/// Reap every child that has ended — `kept`, or what it left that came to
/// this keeper — and say how `kept` ended, if it did. `Err` when there is
/// nothing to wait for and `kept` was never seen to end.
pub fn reap(kept: Pid) -> Result<Option<WaitStatus>, Errno> {
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return Ok(None),
            Ok(status) if status.pid() == Some(kept) => return Ok(Some(status)),
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Kill what is left with `kill_round` and reap it, round after round,
/// until this keeper has no child at all: whatever a killed process had
/// started comes to the keeper as it dies, to be killed next round.
pub fn sweep(mut kill_round: impl FnMut()) {
    for _ in 0..SWEEP_ROUNDS {
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => break,
                Ok(_) | Err(Errno::EINTR) => {}
                // No child left: nothing is.
                Err(_) => return,
            }
        }
        kill_round();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Exit as the kept process did: its code, or its signal raised again here.
pub fn end_as(status: WaitStatus) -> ! {
    match status {
        WaitStatus::Exited(_, code) => std::process::exit(code),
        WaitStatus::Signaled(_, signal, _) => {
            let mut only = SigSet::empty();
            only.add(signal);
            let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&only), None);
            let _ = nix::sys::signal::raise(signal);
            // A signal ignored here (SIGPIPE is, in a Rust program): the
            // shell's convention.
            std::process::exit(128 + signal as i32);
        }
        _ => std::process::exit(1),
    }
}
