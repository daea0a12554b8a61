//! Debian packages a test needs, installed when missing: one install at a
//! time on the machine (tests run as parallel processes, and two
//! `apt-get`s at once fail on dpkg's lock), the package lists fetched when
//! a fresh machine has none.
//!
//! Not here: deciding whether a test may skip (it may not, where CI runs
//! it) — the caller checks what it needs before and after.

use std::path::Path;
use std::process::Command;

/// Install `packages` unless every path in `present` is already there;
/// whether they all are afterwards. Waits for any other install (ours, by
/// a file lock; anyone's, by dpkg's own lock, at most ten minutes).
///
/// # Panics
///
/// When the lock file cannot be made or taken.
pub fn ensure(packages: &[&str], present: &[&Path]) -> bool {
    let there = || present.iter().all(|p| p.exists());
    if there() {
        return true;
    }
    let lock = std::fs::File::create(std::env::temp_dir().join("rein-apt.lock"))
        .expect("the apt lock file");
    lock.lock().expect("the apt lock");
    // Another test may have installed them while this one waited.
    if there() {
        return true;
    }
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(["-o", "DPkg::Lock::Timeout=600", "-q"])
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    let install = [&["install", "-y"][..], packages].concat();
    if !apt(&install) {
        let _ = apt(&["update"]);
        let _ = apt(&install);
    }
    there()
}
