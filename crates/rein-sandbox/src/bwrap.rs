//! Bubblewrap around the Linux backend, where it is installed: the
//! command then also runs in its own mount, pid, IPC and UTS namespaces
//! (and network namespace unless allowed) that hold only the trees the
//! spec names — a file outside them does not exist for it, a private
//! `/tmp` and `/dev`, so no socket of the host's is even named — with the
//! helper's landlock, seccomp and rlimits inside as before. The sandbox
//! ends with bubblewrap (`--die-with-parent`; the pid namespace's first
//! process takes the rest with it).
//!
//! Not here: the confinement inside (`confine`).

use std::path::{Path, PathBuf};

/// Where `bwrap` is, if it is installed (`PATH`, then `/usr/bin`).
pub fn find() -> Option<PathBuf> {
    let candidates = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    candidates
        .into_iter()
        .chain([PathBuf::from("/usr/bin")])
        .map(|dir| dir.join("bwrap"))
        .find(|p| p.is_file())
}

/// The arguments before `--`: namespaces, the trees bound in (`protect`
/// read-only inside the writable ones), the working directory.
pub(crate) fn args(
    read: &[PathBuf],
    write: &[PathBuf],
    extra_read: &[&Path],
    extra_write: &[&Path],
    protect: &[PathBuf],
    network: bool,
    cwd: &Path,
) -> Vec<String> {
    let mut args: Vec<String> = [
        "--die-with-parent",
        // Root inside keeps no capability (the helper drops them too).
        "--cap-drop",
        "ALL",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    if !network {
        args.push("--unshare-net".into());
    }
    let text = |p: &Path| p.display().to_string();
    // `--dev /dev` already holds null, zero, random and the rest; binding
    // the host's over them would mount them `nodev`, and every open of
    // `/dev/null` would be refused.
    for path in read
        .iter()
        .map(PathBuf::as_path)
        .chain(extra_read.iter().copied())
        .filter(|p| !p.starts_with("/dev"))
    {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(path) {
                    args.extend(["--symlink".into(), text(&target), text(path)]);
                }
            }
            Ok(_) => args.extend(["--ro-bind".into(), text(path), text(path)]),
            Err(_) => {}
        }
    }
    for path in write
        .iter()
        .map(PathBuf::as_path)
        .chain(extra_write.iter().copied())
    {
        args.extend(["--bind".into(), text(path), text(path)]);
    }
    // Bound after the writable trees, over them: read-only inside them.
    for path in protect {
        args.extend(["--ro-bind".into(), text(path), text(path)]);
    }
    args.extend(["--chdir".into(), text(cwd)]);
    args
}
