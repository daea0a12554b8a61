//! Escape attempts against the Linux backend, through the real helper and
//! the kernel's own landlock and seccomp (skipped, saying so, where the
//! kernel cannot confine: see `common`).

mod common;

use std::path::Path;
use std::time::Duration;

use rein_sandbox::{LinuxSandbox, Request, Sandbox};

async fn usable(write: &Path) -> Option<LinuxSandbox> {
    common::usable(common::sandbox(write)).await
}

use common::{run_sh as run, sh};

#[tokio::test]
async fn writes_stay_inside_the_writable_root() {
    let root = tempfile::tempdir().expect("root");
    let outside = tempfile::tempdir().expect("outside");
    let Some(sandbox) = usable(root.path()).await else {
        return;
    };
    let inside = run(&sandbox, "echo ok > made.txt && cat made.txt", root.path()).await;
    assert_eq!(inside.code, Some(0), "{inside:?}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("made.txt")).expect("made"),
        "ok\n"
    );

    let target = outside.path().join("escaped.txt");
    let out = run(
        &sandbox,
        &format!("echo no > {}", target.display()),
        root.path(),
    )
    .await;
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(!target.exists(), "a write outside the root happened");
    assert!(out.isolation.contains("landlock"), "{}", out.isolation);
}

#[tokio::test]
async fn a_symlink_out_of_the_root_leads_nowhere() {
    let root = tempfile::tempdir().expect("root");
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("secret.txt"), "the secret\n").expect("secret");
    std::os::unix::fs::symlink(outside.path(), root.path().join("door")).expect("link");
    let Some(sandbox) = usable(root.path()).await else {
        return;
    };
    let read = run(&sandbox, "cat door/secret.txt", root.path()).await;
    assert_ne!(read.code, Some(0), "{read:?}");
    assert!(!read.stdout.text.contains("the secret"));
    let write = run(&sandbox, "echo x > door/planted.txt", root.path()).await;
    assert_ne!(write.code, Some(0), "{write:?}");
    assert!(!outside.path().join("planted.txt").exists());
}

#[tokio::test]
async fn a_file_the_policy_does_not_name_cannot_be_read() {
    let root = tempfile::tempdir().expect("root");
    let hidden = tempfile::tempdir().expect("hidden");
    let secret = hidden.path().join("key.txt");
    std::fs::write(&secret, "sk-canary-0c1f\n").expect("secret");
    let Some(sandbox) = usable(root.path()).await else {
        return;
    };
    for script in [
        format!("cat {}", secret.display()),
        "cat /proc/1/environ".into(),
        "ls /root".into(),
    ] {
        let out = run(&sandbox, &script, root.path()).await;
        assert_ne!(out.code, Some(0), "{script}: {out:?}");
        assert!(!out.stdout.text.contains("sk-canary-0c1f"), "{script}");
    }
}

#[tokio::test]
async fn no_network_socket_unless_allowed() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = usable(root.path()).await else {
        return;
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let port = listener.local_addr().expect("addr").port();
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let bash = |script: &str| Request {
        argv: vec!["bash".into(), "-c".into(), script.into()],
        ..sh("", root.path())
    };
    let refused = sandbox.run(&bash(&script)).await.expect("ran");
    assert_ne!(refused.code, Some(0), "{refused:?}");
    assert!(!refused.stdout.text.contains("connected"));
    assert!(
        refused.stderr.text.contains("not permitted"),
        "{}",
        refused.stderr.text
    );

    let allowed = sandbox
        .clone()
        .with_network(true)
        .run(&bash(&script))
        .await
        .expect("ran");
    assert_eq!(
        allowed.code,
        Some(0),
        "the control: with the network allowed it connects: {allowed:?}"
    );
}

#[tokio::test]
async fn nothing_outlives_the_limit() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = usable(root.path()).await else {
        return;
    };
    let marker = root.path().join("still-alive");
    // A child in the background keeps writing; the command itself hangs.
    let script = format!(
        "(while true; do date > {}; sleep 0.1; done) & sleep 600",
        marker.display()
    );
    let mut request = sh(&script, root.path());
    request.timeout = Duration::from_secs(1);
    let ran = sandbox.run(&request).await.expect("ran");
    assert!(ran.timed_out, "{ran:?}");
    let _ = std::fs::remove_file(&marker);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!marker.exists(), "a child kept running after the limit");

    // Leaving the group to escape the kill is refused.
    let escape = run(
        &sandbox,
        "setsid sleep 600 & sleep 0.2; echo done",
        root.path(),
    )
    .await;
    assert!(escape.stderr.text.contains("not permitted"), "{escape:?}");
}

#[tokio::test]
async fn output_is_bounded() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = usable(root.path()).await else {
        return;
    };
    let ran = run(
        &sandbox,
        "head -c 1000000 /dev/zero | tr '\\0' 'a'",
        root.path(),
    )
    .await;
    assert_eq!(ran.code, Some(0));
    assert_eq!(ran.stdout.text.len(), rein_sandbox::run_max_output());
    assert_eq!(
        ran.stdout.dropped,
        1_000_000 - rein_sandbox::run_max_output() as u64
    );
}

#[test]
fn the_host_backend_needs_its_acknowledgement() {
    let err = rein_sandbox::HostSandbox::new(false).expect_err("refused");
    assert_eq!(err.code.as_str(), "host_unacknowledged");
    let host = rein_sandbox::HostSandbox::new(true).expect("acknowledged");
    assert!(host.isolation().contains("NOT ISOLATED"));
}

#[tokio::test]
async fn a_fork_bomb_is_bounded() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = usable(root.path()).await else {
        return;
    };
    let limits = rein_sandbox::Limits {
        processes: 64,
        ..rein_sandbox::Limits::default()
    };
    let sandbox = sandbox.with_limits(limits);
    // As root, RLIMIT_NPROC binds nothing: without a pids cgroup a real
    // fork bomb would take the machine for as long as the limit allows.
    let probe = run(&sandbox, "id -u", root.path()).await;
    if probe.stdout.text.trim() == "0" && !probe.isolation.contains("pids cgroup") {
        eprintln!(
            "SKIPPED: running as root without a writable pids cgroup; a fork bomb cannot be bounded here"
        );
        return;
    }
    let mut request = sh("bomb() { bomb | bomb & }; bomb; sleep 600", root.path());
    request.argv = vec![
        "bash".into(),
        "-c".into(),
        request.argv[2].clone(),
        "rein-fork-bomb-marker".into(),
    ];
    request.timeout = Duration::from_secs(3);
    let ran = sandbox.run(&request).await.expect("ran");
    assert!(ran.timed_out || ran.code.is_some(), "{ran:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let left: Vec<String> = std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("rein-fork-bomb-marker"))
        .collect();
    assert!(
        left.is_empty(),
        "the bomb outlived its run: {} processes",
        left.len()
    );
    eprintln!("fork bomb: {}", ran.isolation);
}

/// A confined command may write to `/dev/null` (scripts do it everywhere)
/// and read the usual devices — and nothing else of `/dev`.
#[tokio::test]
async fn dev_null_takes_writes_and_other_devices_stay_closed() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = usable(root.path()).await else {
        return;
    };
    let ran = run(
        &sandbox,
        "echo gone > /dev/null && head -c 16 /dev/zero | wc -c && head -c 16 /dev/urandom | wc -c && echo fine",
        root.path(),
    )
    .await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert_eq!(ran.stdout.text, "16\n16\nfine\n", "{ran:?}");
    let zero = run(&sandbox, "echo x > /dev/zero", root.path()).await;
    assert_ne!(zero.code, Some(0), "{zero:?}");
    let tty = run(&sandbox, "echo x > /dev/tty", root.path()).await;
    assert_ne!(tty.code, Some(0), "{tty:?}");
}
