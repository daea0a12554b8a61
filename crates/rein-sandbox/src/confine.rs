//! Confining the current process, then becoming the command: what the
//! helper `rein-sandbox-exec` does between its start and its `exec`.
//!
//! In order: a new session (so the whole group can be killed), the
//! resource limits, the filesystem rules (landlock: only the spec's trees,
//! read or write; `no_new_privs` set), the syscall filter (seccomp: no
//! network sockets unless allowed; no ptrace, mount, kexec, module
//! loading, bpf, namespaces, keyrings, reboot…, and no leaving the process
//! group, which is killed whole). Each step that cannot be
//! applied refuses the run: the command never runs less confined than
//! asked. Landlock must be enforced at least in part (an older kernel
//! lacks the newest rights); not enforced at all is a refusal.

use std::collections::BTreeMap;

use landlock::{
    ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    path_beneath_rules,
};
use nix::sys::resource::{Resource, setrlimit};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::spec::{Limits, Spec};

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
];

/// Socket families refused unless the spec allows the network.
const NETWORK_FAMILIES: &[i32] = &[libc::AF_INET, libc::AF_INET6, libc::AF_PACKET];

/// Confine this process as `spec` says. An `Err` says what could not be
/// applied; the caller must not run the command then.
pub fn confine(spec: &Spec) -> Result<(), String> {
    if let Some(cgroup) = &spec.pids_cgroup {
        std::fs::write(cgroup.join("cgroup.procs"), std::process::id().to_string())
            .map_err(|e| format!("joining the pids cgroup {}: {e}", cgroup.display()))?;
    }
    // Under bubblewrap this process may lead its session already.
    let leads = nix::unistd::getsid(None).ok() == Some(nix::unistd::getpid());
    if !leads {
        nix::unistd::setsid().map_err(|e| format!("a new session: {e}"))?;
    }
    limit(&spec.limits)?;
    files(spec)?;
    syscalls(spec.network)?;
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

fn files(spec: &Spec) -> Result<(), String> {
    let abi = ABI::V5;
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let status = Ruleset::default()
        .handle_access(all)
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(&spec.read, read)))
        .and_then(|r| r.add_rules(path_beneath_rules(&spec.write, all)))
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
    Ok(())
}

fn syscalls(network: bool) -> Result<(), String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|s| (*s, Vec::new())).collect();
    if !network {
        let families = NETWORK_FAMILIES
            .iter()
            .map(|family| {
                SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, *family as u64)
                    .and_then(|c| SeccompRule::new(vec![c]))
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("seccomp: {e}"))?;
        rules.insert(libc::SYS_socket, families);
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| format!("seccomp: {e}"))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| format!("seccomp: {e}"))?;
    let program: BpfProgram = filter.try_into().map_err(|e| format!("seccomp: {e}"))?;
    seccompiler::apply_filter(&program).map_err(|e| format!("seccomp: {e}"))
}
