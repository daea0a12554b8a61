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

use std::os::unix::process::CommandExt;

use nix::errno::Errno;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::sys::wait::WaitStatus;
use nix::unistd::Pid;

use crate::spec::{APART_VAR, REFUSED_EXIT, REFUSED_MARK, SPEC_VAR, Spec};

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
    // What rein was handed and passed on (a shell's `7</etc/shadow`, a
    // connected socket) never reaches the command.
    close_inherited();
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
    command
        .args(args)
        .env_remove(SPEC_VAR)
        .env_remove(APART_VAR);
    if std::env::var_os(APART_VAR).is_some() {
        apart(command, program);
    }
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
    // What the command leaves behind when it ends comes to the keeper.
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        refuse(&format!("keeping what the command leaves: {e}"));
    }
    let confined = match crate::confine::confine(&spec) {
        Ok(confined) => confined,
        Err(why) => refuse(&why),
    };
    // Where signals are scoped, the command starts through this helper
    // again, which sets it apart first (`apart`).
    if confined.signals_scoped {
        command = std::process::Command::new(SELF);
        command
            .args(std::env::args_os().skip(1))
            .env(SPEC_VAR, &raw)
            .env(APART_VAR, "1");
    }
    let child = match command.spawn() {
        Ok(child) => child,
        Err(err) if confined.signals_scoped => {
            refuse(&format!("the helper could not be started again: {err}"))
        }
        Err(err) => cannot_run(program, &err),
    };
    let keeper = Keeper {
        command: nix::unistd::Pid::from_raw(child.id().cast_signed()),
        parent,
        sweeps: confined.signals_scoped,
    };
    // Held only now, so the command does not inherit the mask. Either
    // signal that came before is caught by `keep` looking first.
    let held = held_signals();
    if sigprocmask(SigmaskHow::SIG_BLOCK, Some(&held), None).is_err() {
        // Not held, not waited for: watched by polling instead.
        keeper.keep(None);
    }
    keeper.keep(Some(&held))
}

use crate::confine::SELF;

/// The command's start, one process below its keeper: enter a domain of
/// its own — from which no signal reaches the keeper (a SIGSTOP would leave
/// the keeper unable to act on rein's death) — then become the command.
fn apart(mut command: std::process::Command, program: &str) -> ! {
    // Only ever below a keeper, already confined (landlock sets
    // `no_new_privs`): rein never passes the variable on (`run`), and a
    // helper that finds it otherwise refuses rather than run unconfined.
    if !nix::sys::prctl::get_no_new_privs().unwrap_or(false) {
        refuse("started to be set apart, but not confined: refused");
    }
    let entered = crate::confine::set_apart()
        .and_then(|ruleset| ruleset.restrict_self().map_err(|e| e.to_string()))
        .is_ok_and(|status| status.ruleset != landlock::RulesetStatus::NotEnforced);
    if !entered {
        refuse("the command could not enter a domain of its own");
    }
    let err = command.exec();
    cannot_run(program, &err);
}

/// Close every descriptor above stderr: those `/proc/self/fd` lists, or
/// one by one up to the open-file limit where it cannot be listed.
fn close_inherited() {
    let listed: Option<Vec<i32>> = std::fs::read_dir("/proc/self/fd").ok().map(|entries| {
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect()
    });
    let open = listed.unwrap_or_else(|| {
        let most = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map_or(1024, |(soft, _)| soft.min(1 << 20));
        (0..i32::try_from(most).unwrap_or(i32::MAX)).collect()
    });
    for fd in open.into_iter().filter(|fd| *fd > 2) {
        // The listing's own descriptor is gone already: EBADF, ignored.
        let _ = nix::unistd::close(fd);
    }
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

/// The helper once the command runs.
struct Keeper {
    command: Pid,
    /// rein.
    parent: u32,
    /// Whether what the command leaves is killed before the keeper ends
    /// (only where landlock scopes signals: see [`Keeper::sweep`]).
    sweeps: bool,
}

impl Keeper {
    /// Wait for the command; end as it ended, once what it left is gone.
    /// Should rein die first, kill the whole group — the command, what it
    /// started, and this keeper.
    fn keep(&self, held: Option<&SigSet>) -> ! {
        loop {
            if let Some(ended) = self.reap() {
                if self.sweeps {
                    self.sweep();
                }
                crate::keeping::end_as(ended);
            }
            // The parent-death signal comes each time this helper is handed
            // to another parent: to another thread of rein when the one that
            // started it ends (rein lives on), to the system when rein is gone.
            if !self.rein_lives() {
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

    fn rein_lives(&self) -> bool {
        nix::unistd::getppid().as_raw().cast_unsigned() == self.parent
    }

    /// How the command ended, if it did (what it left that ended is
    /// reaped too).
    fn reap(&self) -> Option<WaitStatus> {
        crate::keeping::reap(self.command).unwrap_or_else(|e| {
            // Nothing left to wait for, the command unseen: cannot be.
            eprintln!("rein-sandbox: the command could not be waited for: {e}");
            kill_group();
        })
    }

    /// Kill whatever the command left running, and wait until it is gone:
    /// rein may itself be killed the instant after this keeper ends, before
    /// its own kill of the group. `kill(-1)` reaches every process this one
    /// may signal: with landlock's scope, only those in the sandbox — what
    /// this command started, none other. That is proved first: a signal to
    /// rein must be refused. Everything the command started came to this
    /// keeper (a subreaper) as its parent ended, so none is left once no
    /// child is.
    fn sweep(&self) {
        let Ok(parent) = i32::try_from(self.parent) else {
            return;
        };
        match kill(Pid::from_raw(parent), None) {
            Err(Errno::EPERM) => {}
            // rein is gone: the group goes with this keeper.
            Err(Errno::ESRCH) => kill_group(),
            // Not scoped after all: a kill of all would reach the host.
            _ => return,
        }
        crate::keeping::sweep(|| {
            let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
        });
    }
}

/// SIGKILL to this process's own group (itself included).
fn kill_group() -> ! {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(0), Signal::SIGKILL);
    std::process::exit(REFUSED_EXIT);
}
