//! The Linux backend inside bubblewrap (installed with apt-get when
//! missing): a tree the spec does not name does not exist for the command,
//! writes stay in the root, no network, its own pid namespace, and nothing
//! outlives the limit, rein's Ctrl-C is not the command's, and `/dev/null`
//! works. Skips, saying so, where bubblewrap cannot be had.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use rein_sandbox::{LinuxSandbox, Ran, Request, Sandbox};

fn bwrap() -> Option<std::path::PathBuf> {
    if let Some(found) = rein_sandbox::bwrap::find() {
        return Some(found);
    }
    rein_testing::debian::ensure(&["bubblewrap"], &[Path::new("/usr/bin/bwrap")]);
    rein_sandbox::bwrap::find()
}

async fn sandbox(root: &Path) -> Option<LinuxSandbox> {
    let Some(bwrap) = bwrap() else {
        eprintln!("SKIPPED: bubblewrap is not installed and could not be installed");
        return None;
    };
    let sandbox = LinuxSandbox::new(
        env!("CARGO_BIN_EXE_rein-sandbox-exec"),
        vec![root.to_path_buf()],
    )
    .reading([root.to_path_buf()])
    .with_bubblewrap(bwrap);
    match sandbox.check().await {
        Ok(()) => Some(sandbox),
        Err(err) => {
            assert!(
                std::env::var_os("REIN_REQUIRE_SANDBOX").is_none()
                    || !err.message.contains("landlock"),
                "{}",
                err.message
            );
            eprintln!("SKIPPED: bubblewrap cannot run here: {}", err.message);
            None
        }
    }
}

async fn run(sandbox: &LinuxSandbox, script: &str, cwd: &Path) -> Ran {
    let request = Request {
        argv: vec!["bash".into(), "-c".into(), script.into()],
        cwd: cwd.to_path_buf(),
        env: BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]),
        timeout: Duration::from_secs(20),
    };
    sandbox.run(&request).await.expect("it ran")
}

#[tokio::test]
async fn inside_bubblewrap_only_the_named_trees_exist() {
    let root = tempfile::tempdir().expect("root");
    let hidden = tempfile::tempdir().expect("hidden");
    std::fs::write(hidden.path().join("key.txt"), "sk-canary-bwrap\n").expect("secret");
    let Some(sandbox) = sandbox(root.path()).await else {
        return;
    };

    let ok = run(
        &sandbox,
        "echo inside > made.txt && cat made.txt",
        root.path(),
    )
    .await;
    assert_eq!(ok.code, Some(0), "{ok:?}");
    assert!(ok.isolation.contains("bubblewrap"), "{}", ok.isolation);
    assert!(root.path().join("made.txt").exists());

    let gone = run(
        &sandbox,
        &format!("ls {}", hidden.path().display()),
        root.path(),
    )
    .await;
    assert_ne!(gone.code, Some(0));
    assert!(
        gone.stderr.text.contains("No such file"),
        "not even visible: {gone:?}"
    );

    let pids = run(&sandbox, "ls /proc | grep -c '^[0-9]'", root.path()).await;
    let count: u32 = pids.stdout.text.trim().parse().expect("a count");
    assert!(count < 10, "its own pid namespace: {count} processes seen");

    let net = run(
        &sandbox,
        "exec 3<>/dev/tcp/127.0.0.1/22 && echo connected",
        root.path(),
    )
    .await;
    assert!(!net.stdout.text.contains("connected"), "{net:?}");

    let mut request = Request {
        argv: vec![
            "bash".into(),
            "-c".into(),
            "(sleep 600 &) ; sleep 600".into(),
        ],
        cwd: root.path().to_path_buf(),
        env: BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]),
        timeout: Duration::from_secs(1),
    };
    request.timeout = Duration::from_secs(1);
    let ran = sandbox.run(&request).await.expect("ran");
    assert!(ran.timed_out);
}

/// The devices every shell script uses work inside bubblewrap: its own
/// `/dev` is not covered by the host's (bound `nodev`, every open of
/// `/dev/null` was refused, so `cmd > /dev/null` and `cmd &` failed).
#[tokio::test]
async fn dev_null_and_friends_work_inside_bubblewrap() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = sandbox(root.path()).await else {
        return;
    };
    let ran = run(
        &sandbox,
        "echo gone > /dev/null && head -c 16 /dev/zero | wc -c && head -c 16 /dev/urandom | wc -c && (true < /dev/null &) && echo fine",
        root.path(),
    )
    .await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert_eq!(ran.stdout.text, "16\n16\nfine\n", "{ran:?}");
    assert!(ran.stderr.text.is_empty(), "{ran:?}");
}

/// Inside bubblewrap too, rein's Ctrl-C never reaches a starting command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_to_reins_group_never_reaches_a_command_in_bubblewrap() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = sandbox(root.path()).await else {
        return;
    };
    common::reins_ctrl_c_spares(&sandbox, root.path()).await;
}
