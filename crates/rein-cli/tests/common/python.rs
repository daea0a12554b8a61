//! Python programs from PyPI for the tests, pinned, each in a virtualenv of
//! its own under the target folder, installed on first use — by one test
//! process at a time (a file lock: nextest runs tests as processes side by
//! side, and two making one virtualenv at once broke each other's pip).

use std::path::PathBuf;
use std::process::Command;

/// The virtualenv `name` with `pinned` installed (made when missing, or
/// made again when an install was cut short): the path of its program
/// `bin` (`python`, `schemathesis`, …).
pub fn venv(name: &str, pinned: &[&str], bin: &str) -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&tmp).unwrap();
    let lock = std::fs::File::create(tmp.join(format!("{name}.lock"))).unwrap();
    // Held until this returns: another process waits, then finds it made.
    lock.lock().unwrap();
    let venv = tmp.join(name);
    let installed = venv.join(".installed");
    if !installed.exists() {
        let _ = std::fs::remove_dir_all(&venv);
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .unwrap();
        assert!(
            made.success(),
            "python3 -m venv failed (apt-get install python3-venv)"
        );
        let pip = Command::new(venv.join("bin/pip"))
            .args(["install", "-q"])
            .args(pinned)
            .status()
            .unwrap();
        assert!(pip.success(), "pip could not install {pinned:?}");
        std::fs::write(&installed, pinned.join("\n")).unwrap();
    }
    venv.join("bin").join(bin)
}
