//! The hosted program's keeper: a process of rein's own binary that stands
//! between rein and the program, so that nothing the program started
//! outlives rein killed outright. A parent-death signal given to the
//! program alone (`setpriv --pdeathsig`) ends the program and leaves its
//! children running; the keeper instead is a subreaper — whatever the
//! program starts comes to it as its parent ends — and when rein is gone,
//! or the program has ended, it kills every descendant it has, reaps them,
//! and only then exits (as the program ended).
//!
//! A binary becomes a keeper by calling [`main`] first thing when its first
//! argument is [`KEEPER_ARG`], and is named with [`keep_with`]; until then
//! hosted programs start under `setpriv` as before (`lifetime`).
//!
//! Not here: the kill of the program's group and of whatever holds the
//! run's pipes while rein lives (`lifetime`, `driver`).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::sync::OnceLock;

use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::sys::wait::WaitStatus;
use nix::unistd::Pid;
use rein_sandbox::keeping;

/// The hidden argument that makes a binary the keeper:
/// `BINARY __host-keep PARENT [--cgroup PATH] -- PROGRAM ARGS…` (with a
/// cgroup, the keeper joins it first, so the program and all it starts are
/// in it whatever they do to the keeper).
pub const KEEPER_ARG: &str = "__host-keep";

/// The keeper's parent-death signal: ignored by default, so one sent
/// before the keeper holds it is lost rather than fatal (the keeper then
/// sees rein gone by its parent).
const REIN_GONE: Signal = Signal::SIGURG;

static KEEPER: OnceLock<PathBuf> = OnceLock::new();

/// Start hosted programs under `binary` as their keeper from now on. The
/// binary must call [`main`] when its first argument is [`KEEPER_ARG`]
/// (`rein` does). Set once; a later call changes nothing.
pub fn keep_with(binary: PathBuf) {
    let _ = KEEPER.set(binary);
}

/// Whether hosted programs start under a keeper.
pub(crate) fn named() -> bool {
    KEEPER.get().is_some()
}

/// The keeper's command line for `argv` (in `cgroup`, when given), when a
/// keeper is named.
pub(crate) fn kept(argv: &[String], cgroup: Option<&std::path::Path>) -> Option<Vec<String>> {
    let binary = KEEPER.get().filter(|_| !argv.is_empty())?;
    let mut kept = vec![
        binary.display().to_string(),
        KEEPER_ARG.to_owned(),
        std::process::id().to_string(),
    ];
    if let Some(cgroup) = cgroup {
        kept.extend(["--cgroup".to_owned(), cgroup.display().to_string()]);
    }
    kept.push("--".to_owned());
    kept.extend(argv.iter().cloned());
    Some(kept)
}

fn fail(code: i32, why: &str) -> ! {
    eprintln!("rein-host keeper: {why}");
    std::process::exit(code);
}

/// Be the keeper: start the program, stay until it ends or rein does.
/// Exits 125 when it cannot keep (rein already gone, bad arguments), 127
/// when the program cannot be run, and otherwise as the program ended.
pub fn main() -> ! {
    let mut args: Vec<OsString> = std::env::args_os().skip(2).collect();
    let parent = args
        .first()
        .and_then(|a| a.to_str())
        .and_then(|a| a.parse::<i32>().ok())
        .unwrap_or_else(|| fail(125, "no parent named"));
    if args.get(1).is_some_and(|a| a == "--cgroup") {
        let Some(cgroup) = args.get(2) else {
            fail(125, "--cgroup names no cgroup");
        };
        // Joined before the program starts: all it starts is in it. A
        // cgroup that cannot be joined leaves the keeper's own guard.
        let joined = std::fs::write(
            std::path::Path::new(cgroup).join("cgroup.procs"),
            std::process::id().to_string(),
        );
        if let Err(e) = joined {
            eprintln!(
                "rein-host keeper: cannot join {}: {e}",
                cgroup.to_string_lossy()
            );
        }
        args.drain(1..3);
    }
    let (Some(dashes), Some(program)) = (args.get(1), args.get(2)) else {
        fail(125, "no program named");
    };
    if dashes != "--" {
        fail(125, "the program follows `--`");
    }
    if let Err(e) = nix::sys::prctl::set_pdeathsig(REIN_GONE) {
        fail(125, &format!("a parent-death signal: {e}"));
    }
    if nix::unistd::getppid().as_raw() != parent {
        fail(125, "the process that started this agent has ended");
    }
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        fail(125, &format!("keeping what the program leaves: {e}"));
    }
    // In a terminal (`rein agents` hosts a TUI so) the program gets a
    // group of its own and the terminal's foreground, as a shell's job
    // does: the terminal's signals (Ctrl-C…) are the program's alone.
    let terminal = nix::unistd::isatty(std::io::stdin()).unwrap_or(false);
    let mut command = std::process::Command::new(program);
    command.args(&args[3..]);
    if terminal {
        command.process_group(0);
    }
    let child = match command.spawn() {
        Ok(child) => child,
        Err(e) => fail(
            127,
            &format!("{} could not be run: {e}", program.to_string_lossy()),
        ),
    };
    let program = Pid::from_raw(child.id().cast_signed());
    if terminal {
        hand_the_terminal(program);
    }
    let keeper = Keeper {
        program,
        told: if terminal {
            Pid::from_raw(-program.as_raw())
        } else {
            program
        },
        parent,
    };
    keeper.let_go_of_the_pipes();
    let mut held = SigSet::empty();
    for signal in [Signal::SIGCHLD, REIN_GONE, Signal::SIGHUP, Signal::SIGTERM] {
        held.add(signal);
    }
    let held = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&held), None)
        .is_ok()
        .then_some(held);
    keeper.keep(held.as_ref())
}

/// Make the program's group the terminal's foreground, and let it go on
/// should it have stopped reading the terminal before (SIGTTIN).
fn hand_the_terminal(program: Pid) {
    let mut quiet = SigSet::empty();
    quiet.add(Signal::SIGTTOU);
    let _ = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&quiet), None);
    let _ = nix::unistd::tcsetpgrp(std::io::stdin(), program);
    let _ = nix::sys::signal::killpg(program, Signal::SIGCONT);
}

struct Keeper {
    program: Pid,
    /// Where a hang-up or a request to end, sent to the keeper, is passed
    /// on: the program's group in a terminal, else the program.
    told: Pid,
    /// rein.
    parent: i32,
}

impl Keeper {
    /// The run's pipes (or its terminal) are the program's: the keeper's
    /// own copies go, so the run ends when the program's side does.
    fn let_go_of_the_pipes(&self) {
        if let Ok(null) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
        {
            let _ = nix::unistd::dup2_stdin(&null);
            let _ = nix::unistd::dup2_stdout(&null);
            let _ = nix::unistd::dup2_stderr(&null);
        }
    }

    fn keep(&self, held: Option<&SigSet>) -> ! {
        loop {
            if let Some(ended) = self.reap() {
                sweep();
                keeping::end_as(ended);
            }
            // The parent-death signal also comes when the rein thread that
            // started the keeper ends while rein lives on: the parent says.
            if nix::unistd::getppid().as_raw() != self.parent {
                sweep();
                std::process::exit(125);
            }
            match held {
                // SIGCHLD or the parent-death signal: look again. A
                // hang-up (rein's end of the terminal closed) or a request
                // to end goes on to the program.
                Some(held) => {
                    if let Ok(signal @ (Signal::SIGHUP | Signal::SIGTERM)) = held.wait() {
                        let _ = kill(self.told, signal);
                    }
                }
                None => std::thread::sleep(std::time::Duration::from_millis(50)),
            }
        }
    }

    /// How the program ended, if it did (what it left that ended is
    /// reaped too).
    fn reap(&self) -> Option<WaitStatus> {
        keeping::reap(self.program).unwrap_or_else(|_| {
            sweep();
            std::process::exit(125);
        })
    }
}

/// Kill every descendant and reap it, until none is left: each killed
/// process's children come to this subreaper, to be killed next round.
fn sweep() {
    let me = std::process::id().to_string();
    keeping::sweep(|| {
        for child in children_of(&me) {
            let _ = kill(child, Signal::SIGKILL);
        }
    });
}

/// The processes whose parent is `parent`, from `/proc`.
fn children_of(parent: &str) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `PID (COMM) STATE PPID …`: the name may hold anything.
            let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?;
            (ppid == parent).then(|| Pid::from_raw(pid))
        })
        .collect()
}
