//! Nothing a hosted program started outlives its run or rein: its group is
//! known while it runs ([`kill_running`], for a surface ending on a signal),
//! it runs under a keeper (`keeper`: rein killed outright takes along the
//! program and all it started) or, where no keeper is named, gets a
//! parent-death signal where `setpriv` can give one (the program alone),
//! and when the run is over whatever still holds the run's output pipes — a child that left the group with `setsid`,
//! say — is killed too, so it can neither hang the run nor outlive it.
//! Where the machine offers a pids cgroup, the keeper and all the program
//! starts are in one of the run's, killed whole when the run is over: a
//! program that kills its keeper leaves nothing running.
//!
//! Not here: when a run is over (`driver`), closing the record of a run
//! whose driver died (`record::close_dead`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use rein_sandbox::PidsCgroup;

static LIVE: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Where `setpriv` (util-linux) is, when installed.
const SETPRIV: &str = "/usr/bin/setpriv";

pub(crate) fn started(group: Pid) {
    LIVE.lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(group.as_raw());
}

pub(crate) fn ended(group: Pid) {
    LIVE.lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&group.as_raw());
}

/// Kill the whole group of every hosted program running now (for a
/// surface about to exit on a signal).
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

/// The command line that runs `program` with `args` under its keeper
/// (`keeper`, where one is named), else with a parent-death signal
/// (through `setpriv --pdeathsig KILL`, where installed). The
/// program is looked up first — on `path`, the child's own `PATH` — so a
/// missing one is said as such, not as `setpriv`'s failure.
pub(crate) fn with_parent_death(
    program: &str,
    args: &[String],
    path: Option<&str>,
) -> Result<(Vec<String>, Option<PidsCgroup>), String> {
    let resolved = resolve(program, path).ok_or_else(|| "No such file or directory".to_owned())?;
    let mut whole = vec![resolved.display().to_string()];
    whole.extend(args.iter().cloned());
    // A cgroup for the run where the machine offers one: what the program
    // starts stays in it even if the program kills its keeper.
    let cgroup = crate::keeper::named()
        .then(|| PidsCgroup::create(HOSTED_TASKS))
        .flatten();
    if let Some(kept) = crate::keeper::kept(&whole, cgroup.as_ref().map(PidsCgroup::path)) {
        return Ok((kept, cgroup));
    }
    let mut argv = Vec::with_capacity(args.len() + 5);
    if Path::new(SETPRIV).is_file() {
        argv.extend([SETPRIV, "--pdeathsig", "KILL", "--"].map(str::to_owned));
    }
    argv.push(resolved.display().to_string());
    argv.extend(args.iter().cloned());
    Ok((argv, None))
}

/// A hosted run's cgroup counts, not bounds: a program's threads are tasks
/// too, and a hosted agent is the person's own program.
const HOSTED_TASKS: u64 = 1 << 22;

fn resolve(program: &str, path: Option<&str>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return runnable(&p).then_some(p);
    }
    let path = path
        .map(str::to_owned)
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| runnable(p))
}

/// What names the pipe open at `fd` in this process (`pipe:[INODE]`).
pub(crate) fn pipe_of(fd: std::os::fd::RawFd) -> Option<String> {
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
    let link = link.to_string_lossy().into_owned();
    link.starts_with("pipe:").then_some(link)
}

/// Kill every other process holding one of `pipes` open.
pub(crate) fn kill_pipe_holders(pipes: &[String]) {
    if pipes.is_empty() {
        return;
    }
    let me = std::process::id().to_string();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in procs.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        let holds = fds.filter_map(Result::ok).any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|l| pipes.iter().any(|p| l.as_os_str() == p.as_str()))
        });
        if holds && let Ok(pid) = pid.parse::<i32>() {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}
