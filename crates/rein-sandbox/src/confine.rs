//! Confining the current process before the command starts: what the
//! helper `rein-sandbox-exec` does between its start and the command's.
//!
//! In order: the run's pids cgroup joined, a new session (so the whole
//! group can be killed; a Ctrl-C sent to rein's group while the helper
//! was made is dropped, it was rein's), the protected paths bound
//! read-only in a mount namespace of its own (`protect`), the resource limits, every capability dropped
//! (root included: the bounding set emptied, so the command gains none at
//! `exec`), the filesystem rules (landlock: only the spec's trees, read or
//! write, no device nodes made anywhere; `no_new_privs` set; where the
//! kernel has scoping, no signal and no abstract Unix socket reaches a
//! process outside the sandbox), then the syscall filter (seccomp: no
//! socket but IPv4/IPv6 when the network is allowed, none at all
//! otherwise — Unix and netlink included, `socketpair` stays; no ptrace,
//! mount, kexec, module loading, bpf, namespaces, keyrings, reboot, host
//! names, device nodes…, no leaving the process group, which is killed
//! whole; and where landlock could not scope signals, no signal beyond
//! the group; no call on another process's limits, priority or memory;
//! no namespace by `clone`; the host's SysV IPC where no IPC namespace
//! could be made). Each step that cannot be applied refuses the run: the
//! command never runs less confined than asked. Landlock must be enforced
//! at least in part (an older kernel lacks the newest rights); not
//! enforced at all is a refusal.
//!
//! Not here: the namespaces bubblewrap adds around the helper (`bwrap`).

use std::collections::BTreeMap;

use caps::CapSet;
use landlock::{
    ABI, Access, AccessFs, LandlockStatus, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use nix::sys::resource::{Resource, setrlimit};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::spec::{Limits, ProtectBy, Spec};

/// Ctrl-C, Ctrl-\ and Ctrl-Z: what a terminal sends its foreground group.
fn terminal_signals() -> nix::sys::signal::SigSet {
    use nix::sys::signal::{SigSet, Signal};
    let mut held = SigSet::empty();
    for signal in [Signal::SIGINT, Signal::SIGQUIT, Signal::SIGTSTP] {
        held.add(signal);
    }
    held
}

/// Hold the terminal's signals in this thread (rein's, while it makes a
/// child); the mask before, for [`restore_signal_mask`]. Held, such a
/// signal sent to rein's group is taken by another thread or waits.
pub(crate) fn hold_terminal_signals() -> Option<nix::sys::signal::SigSet> {
    use nix::sys::signal::{SigSet, SigmaskHow, pthread_sigmask};
    let mut before = SigSet::empty();
    pthread_sigmask(
        SigmaskHow::SIG_BLOCK,
        Some(&terminal_signals()),
        Some(&mut before),
    )
    .ok()
    .map(|()| before)
}

/// Put back the mask [`hold_terminal_signals`] changed.
pub(crate) fn restore_signal_mask(before: Option<nix::sys::signal::SigSet>) {
    use nix::sys::signal::{SigmaskHow, pthread_sigmask};
    if let Some(before) = before {
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&before), None);
    }
}

/// Start a session of its own (so the whole group can be killed, and no
/// terminal is left to it). The helper is started leading a group of its
/// own, so a Ctrl-C at rein's terminal (sent to rein's group) never
/// reaches it; a group leader cannot start a session, so it steps back
/// into rein's group and out at once into its session, the terminal's
/// signals held meanwhile.
fn new_session() -> Result<(), String> {
    use nix::sys::signal::{SigmaskHow, sigprocmask};
    use nix::unistd::{Pid, getpgid, getpgrp, getpid, getppid, setpgid, setsid};
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&terminal_signals()), None)
        .map_err(|e| format!("holding the terminal's signals: {e}"))?;
    if getpgrp() == getpid() {
        let reins = getpgid(Some(getppid())).map_err(|e| format!("rein's group: {e}"))?;
        setpgid(Pid::from_raw(0), reins).map_err(|e| format!("rejoining rein's group: {e}"))?;
    }
    setsid().map_err(|e| format!("a new session: {e}"))?;
    Ok(())
}

/// Drop a terminal signal still pending (it was sent to rein's group
/// while this process was being made: it was for rein), then let the
/// command have them again.
fn release_terminal_signals() -> Result<(), String> {
    use nix::sys::signal::{SigmaskHow, sigprocmask};
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    let held = terminal_signals();
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&held), None)
        .map_err(|e| format!("holding the terminal's signals: {e}"))?;
    let pending = SignalFd::with_flags(&held, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(|e| format!("reading held signals: {e}"))?;
    while let Ok(Some(_)) = pending.read_signal() {}
    drop(pending);
    sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&held), None)
        .map_err(|e| format!("releasing the terminal's signals: {e}"))
}

/// Syscalls a confined command never makes (each fails with `EPERM`).
const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_reboot,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_setns,
    libc::SYS_unshare,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_io_uring_setup,
    libc::SYS_userfaultfd,
    // Leaving the group would escape the kill at the limit.
    libc::SYS_setsid,
    libc::SYS_setpgid,
    // The host's names are the host's.
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
];

/// The only socket families a command may open, and only when the spec
/// allows the network. Unix sockets (pathname and abstract: a person's
/// tmux, `rein agents attach`, a desktop bus), netlink (the host's
/// interfaces and routes) and raw packets are never opened;
/// `socketpair` is not `socket` and stays.
const NETWORK_FAMILIES: &[i32] = &[libc::AF_INET, libc::AF_INET6];

/// Syscalls that send a signal to a process or thread named by id.
const SIGNALLING: &[i64] = &[
    libc::SYS_kill,
    libc::SYS_tkill,
    libc::SYS_tgkill,
    libc::SYS_rt_sigqueueinfo,
    libc::SYS_rt_tgsigqueueinfo,
    libc::SYS_pidfd_send_signal,
];

/// What [`confine`] could apply beyond what it must.
#[derive(Debug, Clone, Copy)]
pub struct Confined {
    /// Landlock scopes signals here (ABI 6 and later): a signal from this
    /// process or its children reaches only processes in the sandbox.
    pub signals_scoped: bool,
}

/// Confine this process as `spec` says. An `Err` says what could not be
/// applied; the caller must not run the command then.
pub fn confine(spec: &Spec) -> Result<Confined, String> {
    if let Some(cgroup) = &spec.pids_cgroup {
        std::fs::write(cgroup.join("cgroup.procs"), std::process::id().to_string())
            .map_err(|e| format!("joining the pids cgroup {}: {e}", cgroup.display()))?;
    }
    // Under bubblewrap this process may lead its session already.
    let leads = nix::unistd::getsid(None).ok() == Some(nix::unistd::getpid());
    if !leads {
        new_session()?;
    }
    release_terminal_signals()?;
    // Before the capabilities go: namespaces need them. Inside
    // bubblewrap (no parent named) it made them, and bound the paths.
    let apart = if spec.parent.is_some() {
        let mounts = spec.protect_by == ProtectBy::Mounts;
        crate::protect::enter(&spec.protect, mounts)
    } else {
        crate::protect::Apart {
            mounts: true,
            ipc: true,
        }
    };
    limit(&spec.limits)?;
    // Inside bubblewrap (no parent named), `--cap-drop ALL` has set
    // SECBIT_NOROOT: root regains nothing at exec whatever the bounding set.
    drop_capabilities(spec.parent.is_some())?;
    let scoped = files(spec, !apart.mounts)?;
    let group = nix::unistd::getpgrp().as_raw();
    syscalls(spec.network, (!scoped).then_some(group), apart.ipc)?;
    Ok(Confined {
        signals_scoped: scoped,
    })
}

/// A landlock domain of the command's own, nested in its keeper's, that
/// only scopes: made by the keeper, entered by the command as it starts
/// ([`RulesetCreated::restrict_self`]). A process in the nested domain can
/// signal no process outside it — its keeper included — while the keeper
/// can still signal into it.
pub fn set_apart() -> Result<RulesetCreated, String> {
    Ruleset::default()
        .scope(Scope::from_all(ABI::V6))
        .and_then(|r| r.create())
        .map_err(|e| format!("landlock, a domain for the command: {e}"))
}

/// Every capability gone, for good: the bounding set emptied first (so
/// `exec` gives root none back), then the ambient, inheritable, permitted
/// and effective sets. An ordinary user has none to drop and may not
/// touch the bounding set; `no_new_privs` (set with landlock) keeps a
/// set-uid program from granting any. Root whose bounding set stays (no
/// `CAP_SETPCAP`) is refused when `bounding_must_go` — outside bubblewrap,
/// where nothing else keeps `exec` from giving the capabilities back.
fn drop_capabilities(bounding_must_go: bool) -> Result<(), String> {
    let fail =
        |what: &str, e: caps::errors::CapsError| format!("dropping capabilities ({what}): {e}");
    if caps::has_cap(None, CapSet::Effective, caps::Capability::CAP_SETPCAP).unwrap_or(false) {
        caps::clear(None, CapSet::Bounding).map_err(|e| fail("bounding", e))?;
    }
    for (name, set) in [
        ("ambient", CapSet::Ambient),
        ("inheritable", CapSet::Inheritable),
        ("effective", CapSet::Effective),
        ("permitted", CapSet::Permitted),
    ] {
        caps::clear(None, set).map_err(|e| fail(name, e))?;
    }
    let left = caps::read(None, CapSet::Permitted).map_err(|e| fail("read back", e))?;
    if !left.is_empty() {
        return Err(format!("capabilities left after dropping: {left:?}"));
    }
    // Root gets its bounding set back at `exec`: one that could not be
    // emptied (no CAP_SETPCAP here) would hand the command capabilities.
    if bounding_must_go && nix::unistd::geteuid().is_root() {
        let bounding = caps::read(None, CapSet::Bounding).map_err(|e| fail("bounding", e))?;
        if !bounding.is_empty() {
            return Err(
                "running as root without CAP_SETPCAP, the command would regain capabilities at exec"
                    .into(),
            );
        }
    }
    Ok(())
}

fn limit(limits: &Limits) -> Result<(), String> {
    for (resource, value) in [
        (Resource::RLIMIT_CPU, limits.cpu_secs),
        (Resource::RLIMIT_AS, limits.memory_bytes),
        (Resource::RLIMIT_NPROC, limits.processes),
        (Resource::RLIMIT_FSIZE, limits.file_bytes),
        (Resource::RLIMIT_NOFILE, limits.open_files),
        (Resource::RLIMIT_CORE, 0),
    ] {
        setrlimit(resource, value, value).map_err(|e| format!("setrlimit {resource:?}: {e}"))?;
    }
    Ok(())
}

/// The helper's own binary, readable and executable in the sandbox: the
/// keeper starts the command through it (`helper`).
pub(crate) const SELF: &str = "/proc/self/exe";

/// The one file every command may write: the sink.
const DISCARD: &[&str] = &["/dev/null"];

/// The helper's own binary where it stays as the command's keeper (a
/// parent named), else nothing.
fn own_binary(spec: &Spec) -> &'static [&'static str] {
    if spec.parent.is_some() { &[SELF] } else { &[] }
}

/// The filesystem rules and the scopes; `Ok(true)` when this kernel scoped
/// signals to the sandbox (landlock ABI 6 and later). `around`: the
/// protected paths were not bound read-only, so the writable trees are
/// granted around them (`protect::around`).
fn files(spec: &Spec, around: bool) -> Result<bool, String> {
    let abi = ABI::V9;
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    // No device node is made anywhere, and no pathname Unix socket is
    // reached through a root (the filter refuses the socket before that).
    let write = all & !(AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::ResolveUnix);
    let discard = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
    let run = AccessFs::ReadFile | AccessFs::Execute;
    let (mut readable, writable) = if around {
        crate::protect::around(&spec.write, &spec.protect)
    } else {
        (Vec::new(), spec.write.clone())
    };
    readable.extend(spec.read.iter().cloned());
    let status = Ruleset::default()
        .handle_access(all)
        .and_then(|r| r.scope(Scope::from_all(ABI::V6)))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(&readable, read)))
        .and_then(|r| r.add_rules(path_beneath_rules(&writable, write)))
        // `cmd > /dev/null` is in every other script: what is written there
        // goes nowhere.
        .and_then(|r| r.add_rules(path_beneath_rules(DISCARD, discard)))
        // A keeper starts the command through its own binary.
        .and_then(|r| r.add_rules(path_beneath_rules(own_binary(spec), run)))
        .and_then(|r| r.restrict_self())
        .map_err(|e| format!("landlock: {e}"))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(
            "landlock is not available in this kernel: the command would run unconfined".into(),
        );
    }
    if !status.no_new_privs {
        return Err("no_new_privs could not be set".into());
    }
    Ok(matches!(
        status.landlock,
        LandlockStatus::Available { effective_abi, .. } if effective_abi >= ABI::V6
    ))
}

/// The syscall filter. `own_group` is set where landlock could not scope
/// signals: then a signal goes only to the command's own group (`kill(0)`
/// or `kill(-group)`), never to a process or thread named by id.
fn syscalls(network: bool, own_group: Option<i32>, ipc_apart: bool) -> Result<(), String> {
    let arg = |index: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value).map_err(seccomp)
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|s| (*s, Vec::new())).collect();
    // socket(): refused outright without the network; with it, refused
    // for every family but IPv4 and IPv6.
    let socket = if network {
        let others = NETWORK_FAMILIES
            .iter()
            .map(|family| arg(0, SeccompCmpOp::Ne, *family as u64))
            .collect::<Result<Vec<_>, _>>()?;
        vec![SeccompRule::new(others).map_err(seccomp)?]
    } else {
        Vec::new()
    };
    rules.insert(libc::SYS_socket, socket);
    // Device nodes (a FIFO stays): mknod's mode is its second argument,
    // mknodat's its third.
    for (syscall, mode) in [(libc::SYS_mknod, 1), (libc::SYS_mknodat, 2)] {
        let device = [libc::S_IFCHR, libc::S_IFBLK]
            .iter()
            .map(|kind| {
                arg(
                    mode,
                    SeccompCmpOp::MaskedEq(u64::from(libc::S_IFMT)),
                    u64::from(*kind),
                )
                .and_then(|c| SeccompRule::new(vec![c]).map_err(seccomp))
            })
            .collect::<Result<Vec<_>, _>>()?;
        rules.insert(syscall, device);
    }
    other_processes(&mut rules)?;
    if !ipc_apart {
        for syscall in SYSV_IPC {
            rules.insert(*syscall, Vec::new());
        }
    }
    if let Some(group) = own_group {
        for syscall in SIGNALLING {
            rules.insert(*syscall, Vec::new());
        }
        // kill() only to the own group: pid 0 or -group.
        let elsewhere = vec![
            arg(0, SeccompCmpOp::Ne, 0)?,
            arg(
                0,
                SeccompCmpOp::Ne,
                u64::from(group.wrapping_neg().cast_unsigned()),
            )?,
        ];
        rules.insert(
            libc::SYS_kill,
            vec![SeccompRule::new(elsewhere).map_err(seccomp)?],
        );
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(seccomp)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(seccomp)?;
    let program: BpfProgram = filter.try_into().map_err(seccomp)?;
    seccompiler::apply_filter(&program).map_err(seccomp)?;
    no_clone3()
}

/// The host's SysV shared memory, queues and semaphores: refused where the
/// command has no IPC namespace of its own.
const SYSV_IPC: &[i64] = &[
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_shmctl,
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semctl,
    libc::SYS_semtimedop,
];

/// Calls that act on another process by its id where 0 means the caller:
/// `(syscall, the id's argument)`. Allowed on the caller only — a command
/// (root's, or the person's own uid) would otherwise set rein's open-file
/// limit, another process's CPU limit or priority.
const ON_A_PROCESS: &[(i64, u8)] = &[
    (libc::SYS_prlimit64, 0),
    (libc::SYS_sched_setaffinity, 0),
    (libc::SYS_sched_setscheduler, 0),
    (libc::SYS_sched_setparam, 0),
    (libc::SYS_sched_setattr, 0),
];

/// Calls that reach into another process outright, refused.
const INTO_A_PROCESS: &[i64] = &[
    libc::SYS_process_madvise,
    libc::SYS_pidfd_getfd,
    libc::SYS_kcmp,
    libc::SYS_migrate_pages,
    libc::SYS_move_pages,
];

/// `clone`'s namespace flags: a new namespace is a way around the filter's
/// refusal of `unshare`.
const NAMESPACE_FLAGS: &[i32] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
    // CLONE_NEWTIME
    0x80,
];

/// The rules for calls on other processes and for namespaces by `clone`.
fn other_processes(rules: &mut BTreeMap<i64, Vec<SeccompRule>>) -> Result<(), String> {
    let arg = |index: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value).map_err(seccomp)
    };
    for (syscall, index) in ON_A_PROCESS {
        let elsewhere =
            SeccompRule::new(vec![arg(*index, SeccompCmpOp::Ne, 0)?]).map_err(seccomp)?;
        rules.insert(*syscall, vec![elsewhere]);
    }
    // setpriority(which, who) and ioprio_set(which, who): `who` 0 is the
    // caller (or its group) — but with `which` a user, every process of
    // that user, rein included.
    for (syscall, user) in [
        (libc::SYS_setpriority, libc::PRIO_USER as u64),
        (libc::SYS_ioprio_set, 3),
    ] {
        rules.insert(
            syscall,
            vec![
                SeccompRule::new(vec![arg(1, SeccompCmpOp::Ne, 0)?]).map_err(seccomp)?,
                SeccompRule::new(vec![arg(0, SeccompCmpOp::Eq, user)?]).map_err(seccomp)?,
            ],
        );
    }
    for syscall in INTO_A_PROCESS {
        rules.insert(*syscall, Vec::new());
    }
    let namespaces = NAMESPACE_FLAGS
        .iter()
        .map(|flag| {
            let flag = u64::from(flag.cast_unsigned());
            arg(0, SeccompCmpOp::MaskedEq(flag), flag)
                .and_then(|c| SeccompRule::new(vec![c]).map_err(seccomp))
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, namespaces);
    Ok(())
}

/// `clone3` passes its flags in memory a filter cannot read: it is
/// refused as unknown (`ENOSYS`), so the C library makes its threads and
/// children with `clone`, whose flags the filter sees.
fn no_clone3() -> Result<(), String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(seccomp)?;
    let filter = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(seccomp)?;
    let program: BpfProgram = filter.try_into().map_err(seccomp)?;
    seccompiler::apply_filter(&program).map_err(seccomp)
}

fn seccomp(e: impl std::fmt::Display) -> String {
    format!("seccomp: {e}")
}
