//! A container runtime for the container backend's tests: Docker from
//! Debian's packages (`docker.io`), installed when missing, its daemon
//! started when it does not answer (it then runs, detached, for the rest
//! of the machine's life: every test process shares it), and a small test
//! image made here with no registry: Debian's static BusyBox and its
//! applets, imported as `rein-test/busybox:<its hash>`.
//!
//! Where no runtime can be installed or started, [`image`] says so loudly
//! and returns `None` — unless `REIN_REQUIRE_CONTAINER` is set (CI sets
//! it: the machines it runs on start Docker), where it panics instead.
//!
//! Not here: the backend (`rein-sandbox`'s `container`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

const DOCKER: &str = "docker";

/// The test image's name, the runtime ready; `None` (said loudly) where
/// none can run here and none is required.
///
/// # Panics
///
/// When `REIN_REQUIRE_CONTAINER` is set and no image can be made.
pub fn image() -> Option<&'static str> {
    static IMAGE: OnceLock<Option<String>> = OnceLock::new();
    IMAGE
        .get_or_init(|| match prepared() {
            Ok(name) => Some(name),
            Err(why) if std::env::var_os("REIN_REQUIRE_CONTAINER").is_some() => {
                panic!("REIN_REQUIRE_CONTAINER is set but no container can run here: {why}")
            }
            Err(why) => {
                eprintln!("\n*** SKIPPED: the container backend's tests need Docker: {why} ***\n");
                None
            }
        })
        .as_deref()
}

/// Whether the daemon answers.
fn answers() -> bool {
    Command::new(DOCKER)
        .args(["version", "--format", "{{.Server.Version}}"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn prepared() -> Result<String, String> {
    // One test process at a time installs, starts and imports.
    let lock = std::fs::File::create(std::env::temp_dir().join("rein-docker.lock"))
        .map_err(|e| format!("the lock file: {e}"))?;
    lock.lock().map_err(|e| format!("the lock: {e}"))?;
    let daemon = Path::new("/usr/sbin/dockerd");
    if !crate::debian::ensure(&["docker.io"], &[daemon]) {
        return Err("Debian's docker.io could not be installed".into());
    }
    if !answers() {
        start(daemon)?;
    }
    let busybox = Path::new("/bin/busybox");
    let static_busybox = || {
        Command::new("dpkg-query")
            .args(["-W", "-f=${Status}", "busybox-static"])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("ok installed"))
    };
    if !static_busybox() {
        // `busybox-static` takes the place of a dynamic `busybox`.
        let _ = Command::new("apt-get")
            .args([
                "-o",
                "DPkg::Lock::Timeout=600",
                "-qy",
                "install",
                "busybox-static",
            ])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status();
        if !static_busybox() {
            return Err("no static BusyBox (Debian's busybox-static) for the test image".into());
        }
    }
    let bytes = std::fs::read(busybox).map_err(|e| format!("{}: {e}", busybox.display()))?;
    let name = format!("rein-test/busybox:{:016x}", fnv(&bytes));
    let have = Command::new(DOCKER)
        .args(["image", "inspect", &name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        import(busybox, &name)?;
    }
    Ok(name)
}

/// Start the daemon, detached (a session of its own, its output in a
/// file), and wait until it answers: at most a minute.
fn start(daemon: &Path) -> Result<(), String> {
    let log = std::fs::File::create(std::env::temp_dir().join("rein-dockerd.log"))
        .map_err(|e| format!("dockerd's log: {e}"))?;
    let mut command = Command::new("setsid");
    command
        .arg(daemon)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log);
    command
        .spawn()
        .map_err(|e| format!("dockerd could not be started: {e}"))?;
    for _ in 0..600 {
        if answers() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!(
        "dockerd did not answer in a minute (see {})",
        std::env::temp_dir().join("rein-dockerd.log").display()
    ))
}

/// A root with BusyBox and a link per applet in `/bin`, imported as
/// `name`.
fn import(busybox: &Path, name: &str) -> Result<(), String> {
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let bin: PathBuf = root.path().join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(root.path().join("tmp")).map_err(|e| e.to_string())?;
    std::fs::copy(busybox, bin.join("busybox")).map_err(|e| e.to_string())?;
    let list = Command::new(busybox)
        .arg("--list")
        .output()
        .map_err(|e| e.to_string())?;
    for applet in String::from_utf8_lossy(&list.stdout).lines() {
        if applet != "busybox" && !applet.contains('/') {
            let _ = std::os::unix::fs::symlink("busybox", bin.join(applet));
        }
    }
    let tar = Command::new("tar")
        .arg("-C")
        .arg(root.path())
        .args(["-c", "."])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let imported = Command::new(DOCKER)
        .args(["import", "--change", "ENV PATH=/bin", "-", name])
        .stdin(tar.stdout.ok_or("tar's output")?)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    if imported.success() {
        Ok(())
    } else {
        Err(format!(
            "`docker import` of the test image failed: {imported}"
        ))
    }
}

/// FNV-1a, enough to name the image by what it holds.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Containers rein's sandbox made for process `pid` that still exist.
pub fn left_by(pid: u32) -> Vec<String> {
    let out = Command::new(DOCKER)
        .args(["ps", "-aq", "--filter"])
        .arg(format!("label=rein.sandbox.pid={pid}"))
        .output();
    out.map(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    })
    .unwrap_or_default()
}
