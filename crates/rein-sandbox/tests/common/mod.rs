//! What the sandbox tests share: a Linux sandbox writing only under a
//! root, or `None` — said on stderr — where this kernel cannot confine
//! (`REIN_REQUIRE_SANDBOX=1`, set by CI, makes that a failure instead).

#![allow(dead_code, reason = "each test file uses a part")]

use std::path::Path;

use rein_sandbox::LinuxSandbox;

/// The sandbox with the test helper binary, writing only under `root`.
pub fn sandbox(root: &Path) -> LinuxSandbox {
    LinuxSandbox::new(
        env!("CARGO_BIN_EXE_rein-sandbox-exec"),
        vec![root.to_path_buf()],
    )
}

/// `sandbox` if it can confine here, else `None` (said; or a failure when
/// the sandbox is required).
pub async fn usable(sandbox: LinuxSandbox) -> Option<LinuxSandbox> {
    match sandbox.check().await {
        Ok(()) => Some(sandbox),
        Err(err) => {
            assert!(
                std::env::var_os("REIN_REQUIRE_SANDBOX").is_none(),
                "the sandbox is required here but cannot confine: {}",
                err.message
            );
            eprintln!(
                "SKIPPED: the Linux sandbox cannot confine on this kernel: {}",
                err.message
            );
            None
        }
    }
}

/// Whether `program` runs here, installing Debian's `package` first when it
/// does not (test scripts install what they need).
pub fn installed(program: &str, package: &str) -> bool {
    let runs = || {
        std::process::Command::new(program)
            .arg("-V")
            .output()
            .is_ok()
    };
    if runs() {
        return true;
    }
    let apt = |args: &[&str]| {
        std::process::Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    if !apt(&["install", "-y", "-q", package]) {
        let _ = apt(&["update", "-q"]);
        let _ = apt(&["install", "-y", "-q", package]);
    }
    runs()
}
