//! Paths inside a writable root that a command may read but never change:
//! `.git` (its config names programs git runs, its hooks run at the next
//! commit), `.rein` (the project's config: hooks, the sandbox, the
//! provider), rein's home when it lies under the root, and any the agent
//! definition adds. What a command writes there would run later on the
//! host, outside every sandbox.
//!
//! Two ways, in this order: a mount namespace of the command's own (with
//! an IPC namespace beside it, `enter`) in
//! which each protected path is bound read-only over itself (root makes
//! one outright, another user inside a user namespace of its own); where
//! neither can be made, landlock alone, granting the writable root entry
//! by entry around the protected paths — then nothing new can be made in a
//! folder that holds one. Under bubblewrap, bubblewrap binds them
//! read-only itself (`bwrap`).
//!
//! A protected path that does not exist when the command starts cannot be
//! bound; the run reports one that it made (`made`).
//!
//! Not here: the file tools' own rule for the same paths (`rein-files`).

use std::path::{Path, PathBuf};

/// The names protected in every writable root.
pub const PROTECTED_NAMES: &[&str] = &[".git", ".rein"];

/// How deep below a root nested `.git` and `.rein` are looked for (a
/// submodule, a vendored checkout), and how many entries at most.
const NESTED_DEPTH: usize = 3;
const NESTED_ENTRIES: usize = 5_000;

/// The protected paths of `write` roots: each root's [`PROTECTED_NAMES`]
/// (whether or not they exist), those found nested a few folders down
/// (bounded: three folders down, 5,000 entries), and `extra`.
pub fn candidates(write: &[PathBuf], extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = write
        .iter()
        .flat_map(|root| PROTECTED_NAMES.iter().map(move |name| root.join(name)))
        .chain(extra.iter().cloned())
        .collect();
    for root in write {
        nested(root, &mut paths);
    }
    paths.sort();
    paths.dedup();
    paths
}

/// `.git` and `.rein` below `root`'s top, breadth first, links not
/// followed; `target` and `node_modules` are not entered.
fn nested(root: &Path, into: &mut Vec<PathBuf>) {
    let mut level = vec![root.to_path_buf()];
    let mut seen = 0;
    for _ in 0..NESTED_DEPTH {
        let mut next = Vec::new();
        for dir in &level {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.filter_map(Result::ok) {
                seen += 1;
                if seen > NESTED_ENTRIES {
                    return;
                }
                let name = entry.file_name();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if PROTECTED_NAMES.iter().any(|p| name == *p) {
                    into.push(entry.path());
                } else if kind.is_dir() && name != "target" && name != "node_modules" {
                    next.push(entry.path());
                }
            }
        }
        level = next;
    }
}

/// Those of `candidates` that exist, resolved (a link's target is what is
/// protected), and that lie inside a writable root — one outside them is
/// read-only already.
pub fn existing(candidates: &[PathBuf], write: &[PathBuf]) -> Vec<PathBuf> {
    let roots: Vec<PathBuf> = write.iter().filter_map(|w| w.canonicalize().ok()).collect();
    let mut paths: Vec<PathBuf> = candidates
        .iter()
        .filter_map(|p| p.canonicalize().ok())
        .filter(|p| roots.iter().any(|root| p.starts_with(root) && p != root))
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// What [`enter`] made.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Apart {
    /// The protected paths are bound read-only (or there are none).
    pub mounts: bool,
    /// The host's SysV shared memory, queues and semaphores are out of
    /// sight (an IPC namespace of its own).
    pub ipc: bool,
}

/// Namespaces of this process's own, made before its capabilities go: an
/// IPC namespace, and a mount namespace in which each of `protect` is
/// bound read-only over itself (`mounts`: whether to try). Root makes
/// them outright; another user inside a user namespace of its own, with
/// the same ids inside as out. What could not be made is said in the
/// answer; the caller falls back (landlock for the paths, a syscall
/// filter for IPC). Nothing done here reaches the host's mounts (they are
/// made private first).
pub(crate) fn enter(protect: &[PathBuf], mounts: bool) -> Apart {
    use nix::sched::CloneFlags;
    let mut made = if nix::unistd::geteuid().is_root() {
        let mut made = CloneFlags::empty();
        for flag in [CloneFlags::CLONE_NEWIPC, CloneFlags::CLONE_NEWNS] {
            if nix::sched::unshare(flag).is_ok() {
                made |= flag;
            }
        }
        made
    } else {
        let all = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWIPC;
        // Read before: inside, until mapped, they are the overflow ids.
        let ids = (nix::unistd::getuid(), nix::unistd::getgid());
        if nix::sched::unshare(all).is_ok() && same_ids(ids).is_ok() {
            all
        } else {
            CloneFlags::empty()
        }
    };
    if !mounts {
        made.remove(CloneFlags::CLONE_NEWNS);
    }
    let bound = protect.is_empty()
        || (made.contains(CloneFlags::CLONE_NEWNS) && read_only_all(protect).is_ok());
    Apart {
        mounts: bound,
        ipc: made.contains(CloneFlags::CLONE_NEWIPC),
    }
}

/// In a new user namespace: the same user and group inside as out.
fn same_ids((uid, gid): (nix::unistd::Uid, nix::unistd::Gid)) -> Result<(), String> {
    let write = |file: &str, text: String| {
        std::fs::write(format!("/proc/self/{file}"), text)
            .map_err(|e| format!("writing {file}: {e}"))
    };
    write("setgroups", "deny".into())?;
    write("uid_map", format!("{uid} {uid} 1"))?;
    write("gid_map", format!("{gid} {gid} 1"))
}

fn read_only_all(paths: &[PathBuf]) -> Result<(), String> {
    private_mounts()?;
    for path in paths {
        read_only(path)?;
    }
    Ok(())
}

fn private_mounts() -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("making the mounts private: {e}"))
}

/// `path` bound over itself, then remounted read-only with the flags its
/// mount already has (a user namespace may not drop `nosuid`, `nodev`…).
fn read_only(path: &Path) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    use nix::sys::statvfs::{FsFlags, statvfs};
    let fail = |what: &str, e: nix::Error| format!("{what} {}: {e}", path.display());
    mount(
        Some(path),
        path,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| fail("binding", e))?;
    let had = statvfs(path)
        .map_err(|e| fail("reading the mount of", e))?
        .flags();
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
    for (kept, flag) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if had.contains(kept) {
            flags |= flag;
        }
    }
    mount(None::<&str>, path, None::<&str>, flags, None::<&str>)
        .map_err(|e| fail("making read-only", e))
}

/// Landlock's grant of the writable roots around `protect`: the trees
/// that stay wholly writable, and the folders on the way to a protected
/// path, which are only read (their files stay writable as files; nothing
/// new is made in them). A link among the entries is left out: what it
/// leads to is granted, if at all, under its own name.
pub(crate) fn around(write: &[PathBuf], protect: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut read = Vec::new();
    let mut writable = Vec::new();
    for root in write {
        grant(root, protect, &mut read, &mut writable);
    }
    (read, writable)
}

fn grant(dir: &Path, protect: &[PathBuf], read: &mut Vec<PathBuf>, writable: &mut Vec<PathBuf>) {
    let inside: Vec<&PathBuf> = protect
        .iter()
        .filter(|p| p.starts_with(dir) && p.as_path() != dir)
        .collect();
    if inside.is_empty() {
        writable.push(dir.to_path_buf());
        return;
    }
    read.push(dir.to_path_buf());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() || protect.contains(&path) {
            continue;
        }
        if kind.is_dir() && inside.iter().any(|p| p.starts_with(&path)) {
            grant(&path, protect, read, writable);
        } else {
            writable.push(path);
        }
    }
}

/// Which of `candidates` exist now that did not in `before`: protected
/// paths a command made (a `git init`), reported with its result.
pub fn made(candidates: &[PathBuf], before: &[bool]) -> Vec<PathBuf> {
    candidates
        .iter()
        .zip(before)
        .filter(|(path, existed)| !**existed && std::fs::symlink_metadata(path).is_ok())
        .map(|(path, _)| path.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn landlock_grants_around_a_protected_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("README.md"), "x").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("door")).unwrap();
        let (read, mut writable) = around(std::slice::from_ref(&root), &[root.join(".git")]);
        writable.sort();
        assert_eq!(read, vec![root.clone()]);
        assert_eq!(writable, vec![root.join("README.md"), root.join("src")]);
        let (read, writable) = around(std::slice::from_ref(&root), &[]);
        assert!(read.is_empty());
        assert_eq!(writable, vec![root]);
    }

    #[test]
    fn a_nested_repository_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("vendor/lib/.git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("target/x/.git")).unwrap();
        let found = candidates(std::slice::from_ref(&root), &[]);
        assert!(found.contains(&root.join("vendor/lib/.git")), "{found:?}");
        assert!(!found.contains(&root.join("target/x/.git")), "{found:?}");
    }

    #[test]
    fn only_existing_paths_inside_a_root_are_protected() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::os::unix::fs::symlink(".git", root.join("gitdir")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let candidates = candidates(
            std::slice::from_ref(&root),
            &[root.join("gitdir"), outside.path().to_path_buf()],
        );
        assert_eq!(
            existing(&candidates, std::slice::from_ref(&root)),
            vec![root.join(".git")]
        );
    }
}
