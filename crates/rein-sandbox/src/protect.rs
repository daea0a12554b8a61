//! Paths inside a writable root that a command may read but never change:
//! `.git` (its config names programs git runs, its hooks run at the next
//! commit), `.rein` (the project's config: hooks, the sandbox, the
//! provider), rein's home when it lies under the root, and any the agent
//! definition adds. What a command writes there would run later on the
//! host, outside every sandbox.
//!
//! Two ways, in this order: a mount namespace of the command's own in
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

/// The protected paths of `write` roots: each root's [`PROTECTED_NAMES`]
/// and `extra`, whether or not they exist.
pub fn candidates(write: &[PathBuf], extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = write
        .iter()
        .flat_map(|root| PROTECTED_NAMES.iter().map(move |name| root.join(name)))
        .chain(extra.iter().cloned())
        .collect();
    paths.sort();
    paths.dedup();
    paths
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

/// Bind each of `paths` read-only over itself, in a mount namespace of
/// this process's own (and a user namespace, for a user other than root).
/// Nothing done here reaches the host's mounts (they are made private
/// first). An `Err` says why not; the caller falls back to landlock.
pub(crate) fn by_mounts(paths: &[PathBuf]) -> Result<(), String> {
    use nix::sched::{CloneFlags, unshare};
    let root = nix::unistd::geteuid().is_root();
    if root {
        unshare(CloneFlags::CLONE_NEWNS).map_err(|e| format!("a mount namespace: {e}"))?;
    } else {
        let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
            .map_err(|e| format!("a user and mount namespace: {e}"))?;
        // The same ids inside as out: files keep their owners.
        let write = |file: &str, text: String| {
            std::fs::write(format!("/proc/self/{file}"), text)
                .map_err(|e| format!("writing {file}: {e}"))
        };
        write("setgroups", "deny".into())?;
        write("uid_map", format!("{uid} {uid} 1"))?;
        write("gid_map", format!("{gid} {gid} 1"))?;
    }
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
        let (read, mut writable) = around(&[root.clone()], &[root.join(".git")]);
        writable.sort();
        assert_eq!(read, vec![root.clone()]);
        assert_eq!(writable, vec![root.join("README.md"), root.join("src")]);
        let (read, writable) = around(&[root.clone()], &[]);
        assert!(read.is_empty());
        assert_eq!(writable, vec![root]);
    }

    #[test]
    fn only_existing_paths_inside_a_root_are_protected() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::os::unix::fs::symlink(".git", root.join("gitdir")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let candidates = candidates(
            &[root.clone()],
            &[root.join("gitdir"), outside.path().to_path_buf()],
        );
        assert_eq!(
            existing(&candidates, &[root.clone()]),
            vec![root.join(".git")]
        );
    }
}
