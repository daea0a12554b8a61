//! The helper's whole life: read the spec, confine this process, run the
//! command. Shared by the `rein-sandbox-exec` binary and the `rein`
//! binary (`rein __sandbox-exec`), so a product's own binary can be its
//! helper too.
//!
//! Where rein started the helper itself (no bubblewrap), the helper stays
//! as the command's keeper: it leads the command's process group, and when
//! rein dies — killed outright, with no chance to kill the group — its
//! parent-death signal makes the keeper kill the whole group, whatever the
//! command started (a parent-death signal given to the command alone would
//! end the command and leave its children running). Inside bubblewrap the
//! helper becomes the command: bubblewrap's `--die-with-parent` and its pid
//! namespace end everything.
//!
//! Not here: the confinement itself (`confine`), the kill at the limit and
//! after the command exits (`run`).

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Child;

use nix::sys::signal::{SigSet, SigmaskHow, Signal, sigprocmask};

use crate::spec::{REFUSED_EXIT, REFUSED_MARK, SPEC_VAR, Spec};

/// The hidden argument that makes a binary act as the helper.
pub const HELPER_ARG: &str = "__sandbox-exec";

/// The keeper's parent-death signal: one ignored by default, so that, sent
/// before the keeper holds it, it is lost rather than fatal (the keeper
/// then sees rein gone by its parent). A command may send it to its own
/// group too; the keeper acts on it only once its parent is gone.
const REIN_GONE: Signal = Signal::SIGURG;

fn refuse(why: &str) -> ! {
    eprintln!("{REFUSED_MARK}{why}");
    std::process::exit(REFUSED_EXIT);
}

/// Confine this process as `REIN_SANDBOX_SPEC` says, then run the command.
/// Never returns: exits 125 (with `rein-sandbox: refused: …`) when it
/// cannot confine, 127 when the command cannot be run, and otherwise as
/// the command ended.
pub fn main() -> ! {
    let Ok(raw) = std::env::var(SPEC_VAR) else {
        refuse("no spec: this helper is run by rein's sandbox, not by hand");
    };
    let spec: Spec = match serde_json::from_str(&raw) {
        Ok(spec) => spec,
        Err(e) => refuse(&format!("a spec that does not parse: {e}")),
    };
    let Some((program, args)) = spec.argv.split_first() else {
        refuse("an empty command");
    };
    let mut command = std::process::Command::new(program);
    command.args(args).env_remove(SPEC_VAR);
    let Some(parent) = spec.parent else {
        if let Err(why) = crate::confine::confine(&spec) {
            refuse(&why);
        }
        let err = command.exec();
        cannot_run(program, &err);
    };
    if let Err(e) = nix::sys::prctl::set_pdeathsig(REIN_GONE) {
        refuse(&format!("a parent-death signal: {e}"));
    }
    // Started after rein is gone, the command does not run at all.
    if nix::unistd::getppid().as_raw().cast_unsigned() != parent {
        refuse("the process that started this command has ended");
    }
    if let Err(why) = crate::confine::confine(&spec) {
        refuse(&why);
    }
    let child = match command.spawn() {
        Ok(child) => child,
        Err(err) => cannot_run(program, &err),
    };
    // Held only now, so the command does not inherit the mask. Either
    // signal that came before is caught by `keep` looking first.
    let held = held_signals();
    if sigprocmask(SigmaskHow::SIG_BLOCK, Some(&held), None).is_err() {
        // Not held, not waited for: watched by polling instead.
        keep(child, None, parent);
    }
    keep(child, Some(&held), parent)
}

fn cannot_run(program: &str, err: &std::io::Error) -> ! {
    eprintln!("rein-sandbox: `{program}` could not be run: {err}");
    std::process::exit(127);
}

/// The signals the keeper waits for: its child's end and rein's.
fn held_signals() -> SigSet {
    let mut held = SigSet::empty();
    held.add(Signal::SIGCHLD);
    held.add(REIN_GONE);
    held
}

/// Wait for the command; end as it ended. Should rein die first, kill the
/// whole group — the command, what it started, and this keeper.
fn keep(mut child: Child, held: Option<&SigSet>, parent: u32) -> ! {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => end_as(status),
            Ok(None) => {}
            Err(e) => {
                eprintln!("rein-sandbox: the command could not be waited for: {e}");
                kill_group();
            }
        }
        // The parent-death signal comes each time this helper is handed
        // to another parent: to another thread of rein when the one that
        // started it ends (rein lives on), to the system when rein is gone.
        if nix::unistd::getppid().as_raw().cast_unsigned() != parent {
            kill_group();
        }
        match held {
            // SIGCHLD or the parent-death signal: look again.
            Some(held) => {
                let _ = held.wait();
            }
            None => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
}

/// SIGKILL to this process's own group (itself included).
fn kill_group() -> ! {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(0), Signal::SIGKILL);
    std::process::exit(REFUSED_EXIT);
}

/// Exit as the command did: its code, or its signal raised again here.
fn end_as(status: std::process::ExitStatus) -> ! {
    if let Some(code) = status.code() {
        std::process::exit(code);
    }
    if let Some(signal) = status.signal().and_then(|s| Signal::try_from(s).ok()) {
        let mut only = SigSet::empty();
        only.add(signal);
        let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&only), None);
        let _ = nix::sys::signal::raise(signal);
        // A signal ignored here (SIGPIPE is, in a Rust program): the
        // shell's convention.
        std::process::exit(128 + signal as i32);
    }
    std::process::exit(1);
}
