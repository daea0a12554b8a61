//! The keeper: the helper that stays beside a sandboxed command (no
//! bubblewrap) so that nothing the command started outlives it or rein. A
//! perl stand-in plays rein in each test: it starts the real helper,
//! naming itself the parent, and does none of rein's own clean-up (no
//! group kill after the command), so what is tested is the keeper alone.
//! Skipped, saying so, where the kernel cannot confine (see `common`).

mod common;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A spec for `script` under `sh -c`, writing only under `root`; its
/// parent is put right by the stand-in, which knows its own id.
fn spec(root: &Path, script: &str) -> String {
    let mut read: Vec<PathBuf> = ["/usr", "/bin", "/lib", "/lib64", "/etc"]
        .iter()
        .map(PathBuf::from)
        .collect();
    read.push(root.to_path_buf());
    let spec = rein_sandbox::spec::Spec {
        read,
        write: vec![root.to_path_buf()],
        protect: Vec::new(),
        protect_by: rein_sandbox::spec::ProtectBy::Mounts,
        network: false,
        limits: rein_sandbox::Limits::default(),
        pids_cgroup: None,
        parent: Some(0),
        argv: ["sh", "-c", script].map(String::from).to_vec(),
    };
    let spec = serde_json::to_string(&spec).expect("a spec");
    assert!(spec.contains("\"parent\":0"), "{spec}");
    spec
}

/// The stand-in for rein: starts the helper, says `ended` when the helper
/// has exited, then sleeps until killed.
fn stand_in(root: &Path, script: &str) -> std::process::Child {
    std::process::Command::new("perl")
        .args([
            "-e",
            r#"$| = 1; $ENV{REIN_SANDBOX_SPEC} =~ s/"parent":0/"parent":$$/; system(@ARGV); print "ended\n"; sleep 60"#,
            env!("CARGO_BIN_EXE_rein-sandbox-exec"),
        ])
        .env(rein_sandbox::spec::SPEC_VAR, spec(root, script))
        .env("PATH", "/usr/bin:/bin")
        .current_dir(root)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("perl")
}

/// The pid the command wrote to `file` (whole lines only), waited for.
fn written_pid(file: &Path) -> String {
    for _ in 0..500 {
        if let Ok(text) = std::fs::read_to_string(file)
            && text.ends_with('\n')
        {
            return text.trim().to_owned();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the command never wrote {}", file.display());
}

/// Whether process `pid` is running (a zombie waiting to be reaped is not).
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// Whether `pid` is gone within a second; killed here if not, so a
/// failing test leaves nothing behind either.
fn gone(pid: &str) -> bool {
    for _ in 0..100 {
        if !running(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = std::process::Command::new("kill")
        .args(["-9", pid])
        .status();
    false
}

async fn confinable(root: &Path) -> bool {
    common::usable(common::sandbox(root)).await.is_some()
}

/// A rein killed outright (SIGKILL: it cleans up nothing) takes the whole
/// command with it — what the command started, not the command alone.
#[tokio::test]
async fn a_rein_killed_outright_leaves_nothing_running() {
    let root = tempfile::tempdir().expect("root");
    if !confinable(root.path()).await {
        return;
    }
    let mut rein = stand_in(root.path(), "sleep 60 & echo $! > sleeper.pid; wait");
    let sleeper = written_pid(&root.path().join("sleeper.pid"));
    assert!(running(&sleeper), "the sleeper runs before the kill");
    rein.kill().expect("SIGKILL");
    rein.wait().expect("reaped");
    assert!(
        gone(&sleeper),
        "the command's child outlived a rein killed outright"
    );
}

/// A command that ends leaves nothing behind, even before rein's own kill
/// of its group: rein may be killed in that instant, and what the command
/// started in the background must not outlive both.
#[tokio::test]
async fn a_command_that_ends_leaves_nothing_running() {
    let root = tempfile::tempdir().expect("root");
    if !confinable(root.path()).await {
        return;
    }
    let mut rein = stand_in(
        root.path(),
        "sleep 60 & echo $! > sleeper.pid; setsid sleep 60 & echo $! > other.pid; exit 3",
    );
    let mut line = String::new();
    let mut out = std::io::BufReader::new(rein.stdout.take().expect("stdout"));
    out.read_line(&mut line)
        .expect("the stand-in says the helper ended");
    assert_eq!(line, "ended\n");
    // Checked at once: rein is not told the command ended before its
    // children are gone.
    let sleeper = written_pid(&root.path().join("sleeper.pid"));
    let other = written_pid(&root.path().join("other.pid"));
    let left: Vec<&String> = [&sleeper, &other]
        .into_iter()
        .filter(|pid| running(pid))
        .collect();
    for pid in &left {
        gone(pid);
    }
    rein.kill().expect("SIGKILL");
    rein.wait().expect("reaped");
    assert!(
        left.is_empty(),
        "still running after the command and its keeper ended: {left:?}"
    );
}

/// The command cannot stop its keeper (SIGSTOP would leave the keeper
/// unable to act on rein's death), by its id or by its group, nor signal
/// it at all: then a rein killed outright still takes everything with it,
/// the stopped command included.
#[tokio::test]
async fn a_command_cannot_stop_its_keeper() {
    let root = tempfile::tempdir().expect("root");
    if !confinable(root.path()).await {
        return;
    }
    let mut rein = stand_in(
        root.path(),
        "for s in STOP URG; do kill -$s $PPID 2>/dev/null && echo $s >> reached; done; \
         sleep 60 & echo $! > sleeper.pid; kill -STOP 0",
    );
    let sleeper = written_pid(&root.path().join("sleeper.pid"));
    let reached = std::fs::read_to_string(root.path().join("reached")).unwrap_or_default();
    rein.kill().expect("SIGKILL");
    rein.wait().expect("reaped");
    let ended = gone(&sleeper);
    assert_eq!(reached, "", "the command signalled its keeper");
    assert!(ended, "the command's child outlived a rein killed outright");
}

/// The keeper starts a command through the helper again with a variable
/// that says "set apart, then run"; an environment that names it (a
/// careless config, a product's own request) must not make the helper
/// skip its confinement.
#[tokio::test]
async fn an_environment_naming_the_helpers_own_variable_confines_all_the_same() {
    use rein_sandbox::{Request, Sandbox};
    let root = tempfile::tempdir().expect("root");
    let outside = tempfile::tempdir().expect("outside");
    let Some(sandbox) = common::usable(common::sandbox(root.path())).await else {
        return;
    };
    let target = outside.path().join("escaped.txt");
    let request = Request {
        argv: vec![
            "sh".into(),
            "-c".into(),
            format!("echo no > {}", target.display()),
        ],
        cwd: root.path().to_path_buf(),
        env: [
            ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
            ("REIN_SANDBOX_APART".to_owned(), "1".to_owned()),
        ]
        .into(),
        timeout: Duration::from_secs(20),
    };
    let ran = sandbox.run(&request).await;
    assert!(
        !target.exists(),
        "a write outside the root happened: {ran:?}"
    );
}
