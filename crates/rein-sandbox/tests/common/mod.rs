//! What the sandbox tests share: a Linux sandbox writing only under a
//! root, or `None` — said on stderr — where this kernel cannot confine
//! (`REIN_REQUIRE_SANDBOX=1`, set by CI, makes that a failure instead).

#![allow(dead_code, reason = "each test file uses a part")]

use std::path::Path;

use rein_sandbox::LinuxSandbox;

/// The sandbox with the test helper binary, writing only under `root` —
/// inside bubblewrap too when `REIN_SANDBOX_BWRAP=1` (`cargo xtask
/// sandbox` runs every escape both ways).
pub fn sandbox(root: &Path) -> LinuxSandbox {
    let sandbox = LinuxSandbox::new(
        env!("CARGO_BIN_EXE_rein-sandbox-exec"),
        vec![root.to_path_buf()],
    );
    if std::env::var_os("REIN_SANDBOX_BWRAP").is_some_and(|v| v == "1") {
        let bwrap = rein_sandbox::bwrap::find()
            .expect("REIN_SANDBOX_BWRAP=1 but bubblewrap is not installed");
        return sandbox.reading([root.to_path_buf()]).with_bubblewrap(bwrap);
    }
    sandbox
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
    let path = Path::new("/usr/bin").join(program);
    rein_testing::debian::ensure(&[package], &[path.as_path()]);
    runs()
}

/// A Ctrl-C at rein's terminal is for rein (it interrupts a turn; a
/// running command finishes first): the SIGINT the terminal sends rein's
/// process group must never reach a command, not even while it is being
/// started. Here rein's group is the test's own, sent SIGINT every
/// millisecond while commands start; each must run to its end. Call it
/// from a multi-threaded runtime.
pub async fn reins_ctrl_c_spares(sandbox: &LinuxSandbox, root: &Path) {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::{Pid, getpgrp, setpgid};
    use rein_sandbox::Sandbox;
    // The test leads a group of its own, so the signals reach it and what
    // it starts, nothing else; it survives them (a handler).
    setpgid(Pid::from_raw(0), Pid::from_raw(0)).expect("a group of its own");
    let mut heard = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .expect("a SIGINT handler");
    let group = getpgrp();
    let sender = tokio::spawn(async move {
        loop {
            let _ = killpg(group, Signal::SIGINT);
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    });
    for round in 0..15 {
        let request = rein_sandbox::Request {
            argv: ["sh", "-c", "sleep 0.1; echo lived"]
                .map(String::from)
                .to_vec(),
            cwd: root.to_path_buf(),
            env: std::collections::BTreeMap::from([(
                "PATH".to_owned(),
                "/usr/bin:/bin".to_owned(),
            )]),
            timeout: std::time::Duration::from_secs(20),
        };
        let ran = sandbox.run(&request).await.expect("it ran");
        assert!(
            ran.code == Some(0) && ran.stdout.text.contains("lived"),
            "round {round}: rein's Ctrl-C reached the command: {ran:?}"
        );
    }
    sender.abort();
    // The control: the signals were sent and heard.
    assert!(heard.recv().await.is_some());
}

/// `argv` as a request in `cwd`: `PATH` alone, 20 seconds.
pub fn request(argv: &[&str], cwd: &Path) -> rein_sandbox::Request {
    rein_sandbox::Request {
        argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        cwd: cwd.to_path_buf(),
        env: std::collections::BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]),
        timeout: std::time::Duration::from_secs(20),
    }
}

/// A `sh -c` script as a [`request`].
pub fn sh(script: &str, cwd: &Path) -> rein_sandbox::Request {
    request(&["sh", "-c", script], cwd)
}

/// Run `argv` in `cwd` (the sandbox must run it).
pub async fn run_argv(sandbox: &LinuxSandbox, argv: &[&str], cwd: &Path) -> rein_sandbox::Ran {
    use rein_sandbox::Sandbox as _;
    sandbox.run(&request(argv, cwd)).await.expect("it ran")
}

/// Run a `sh -c` script in `cwd`.
pub async fn run_sh(sandbox: &LinuxSandbox, script: &str, cwd: &Path) -> rein_sandbox::Ran {
    use rein_sandbox::Sandbox as _;
    sandbox.run(&sh(script, cwd)).await.expect("it ran")
}
