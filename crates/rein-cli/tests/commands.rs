//! `rein chat --allow-commands`: the model's `run_command` runs in the
//! Linux sandbox with the `rein` binary as its own helper, decided by the
//! example policy shipped in `examples/commands.toml`; the host backend is
//! refused without its acknowledgement.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;
use crate::common::definition::{call, say};

use rein_testing::{FakeServer, Reply, ScriptedCall, ScriptedMessage};
use serde_json::json;

fn example_policy() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/commands.toml")
}

/// `rein chat --allow-commands [EXTRA] --root ROOT -p PROMPT` on the store
/// in `home`, against a fake server answering `replies`: what it printed,
/// and the server (its requests).
async fn chat(
    home: &std::path::Path,
    root: &std::path::Path,
    replies: Vec<Reply>,
    extra: &[&std::ffi::OsStr],
    prompt: &str,
) -> (std::process::Output, FakeServer) {
    let server = FakeServer::start(replies).await.unwrap();
    let url = format!("{}/v1", server.base_url());
    let (home, root, prompt) = (home.to_owned(), root.to_owned(), prompt.to_owned());
    let extra: Vec<std::ffi::OsString> = extra.iter().map(|e| (*e).to_owned()).collect();
    let out = tokio::task::spawn_blocking(move || {
        common::rein_at(&home)
            .args([
                "chat",
                "--base-url",
                &url,
                "--model",
                "m",
                "--allow-commands",
            ])
            .args(&extra)
            .arg("--root")
            .arg(&root)
            .args(["-p", &prompt])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    (out, server)
}

/// The model's `run_command` of `command`, as call `id`.
fn run_command(id: &str, command: serde_json::Value) -> Reply {
    call(id, "run_command", json!({ "command": command }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_runs_an_allowed_command_confined_and_shows_how_it_exited() {
    let root = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("present.txt"), "here\n").unwrap();
    let (out, server) = chat(
        home.path(),
        root.path(),
        vec![
            run_command("c1", json!(["ls", "-la"])),
            run_command("c2", json!(["ls", "no-such-file"])),
            say("Listed."),
        ],
        &["--commands".as_ref(), example_policy().as_os_str()],
        "what is here?",
    )
    .await;
    let said = String::from_utf8_lossy(&out.stderr);
    if said.contains("sandbox_unavailable") && std::env::var_os("REIN_REQUIRE_SANDBOX").is_none() {
        eprintln!("SKIPPED: the Linux sandbox cannot confine on this kernel: {said}");
        return;
    }
    assert!(out.status.success(), "{said}");
    // Bubblewrap joins when installed (the sandbox's own test installs it).
    assert!(
        said.contains("run_command: linux: ") && said.contains("landlock + seccomp"),
        "{said}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Listed."));
    // A command that ran and failed is shown by its exit status, not as ok.
    assert!(said.contains("<- ok [live]"), "{said}");
    assert!(said.contains("<- exit 2 [live]"), "{said}");
    let sent = server.requests()[1].json().to_string();
    assert!(sent.contains("present.txt"), "{sent}");
    assert!(
        sent.contains("\\\"exit_code\\\":0") || sent.contains("exit_code"),
        "{sent}"
    );
}

#[test]
fn the_host_backend_is_refused_without_its_acknowledgement() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[sandbox]\nbackend = \"host\"\n",
    )
    .unwrap();
    let out = common::rein_at(home.path())
        .args(["chat", "--scripted", "--allow-commands", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error[host_unacknowledged]"), "{err}");

    std::fs::write(
        home.path().join("config.toml"),
        "[commands]\n[[commands.rule]]\nprefix = ['cargo', 'tset']\ndecision = 'allow'\nexamples = ['cargo test']\n",
    )
    .unwrap();
    let out = common::rein_at(home.path())
        .args(["chat", "--scripted", "--allow-commands", "-p", "hi"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error[command_policy_invalid]") && err.contains("decided by no rule"),
        "{err}"
    );
}

#[test]
fn a_paused_turn_resumed_with_commands_allowed_asks_the_person_first() {
    use crate::common::{run_with_stdin, stderr};
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    // Process 1: a write waits for a person; stdin ends.
    let mut cmd = common::rein_at(home.path());
    cmd.args(["chat", "--scripted", "-p", "write later.txt", "--root"])
        .arg(root.path());
    let out = run_with_stdin(cmd, b"");
    assert!(out.status.success(), "{}", stderr(&out));
    let (session, _) = common::pending_of(&out);
    // The same session resumed with commands allowed, answering `stdin`.
    let resume = |stdin: &[u8]| {
        let mut cmd = common::rein_at(home.path());
        cmd.args([
            "chat",
            "--scripted",
            "--allow-commands",
            "--resume",
            &session,
            "--root",
        ])
        .arg(root.path());
        run_with_stdin(cmd, stdin)
    };

    // Process 2 would go on with commands allowed: the person is asked, says no.
    let out = resume(b"n\n");
    let err = stderr(&out);
    if err.contains("sandbox_unavailable") && std::env::var_os("REIN_REQUIRE_SANDBOX").is_none() {
        eprintln!("SKIPPED: the Linux sandbox cannot confine on this kernel: {err}");
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("changed: product") && err.contains("tool run_command added"),
        "{err}"
    );
    assert!(err.contains("error[authority_changed]"), "{err}");
    assert!(!root.path().join("later.txt").exists());

    // Process 3: the same, and the person accepts; the turn goes on (the
    // write is asked again, and answered yes).
    let out = resume(b"y\ny\n/exit\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(root.path().join("later.txt").exists(), "{}", stderr(&out));
    let shown = common::rein_at(home.path())
        .args(["sessions", "show", &session])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("authority"),
        "{}",
        String::from_utf8_lossy(&shown.stdout)
    );
}

/// The policy judges what will be executed: neither a path nor a wrapper
/// is a way past `forbid rm`, nor past `shell = false`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_or_a_wrapper_is_no_way_past_the_policy() {
    for command in [
        json!(["/usr/bin/rm", "keep.txt"]),
        json!(["/usr/bin/env", "rm", "keep.txt"]),
        json!(["nice", "-n", "5", "rm", "keep.txt"]),
        json!(["/bin/dash", "-c", "rm keep.txt"]),
        json!(["/usr/bin/env", "sh", "-c", "rm keep.txt"]),
    ] {
        let home = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("keep.txt"), "kept\n").unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            "[commands]\ndefault = \"allow\"\n[[commands.rule]]\nprefix = [\"rm\"]\ndecision = \"forbid\"\nexamples = [\"rm -rf x\"]\n",
        )
        .unwrap();
        let (out, _server) = chat(
            home.path(),
            root.path(),
            vec![run_command("c1", command.clone()), say("Refused.")],
            &[],
            "clean up",
        )
        .await;
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            root.path().join("keep.txt").exists(),
            "{command}: it ran: {said}"
        );
        assert!(said.contains("command_forbidden"), "{command}: {said}");
    }
}

/// A relative `--root` names the same folder for every part: a sandboxed
/// command reads the project it names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relative_root_is_the_projects_for_commands_too() {
    let base = tempfile::tempdir().unwrap();
    let project = base.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("present.txt"), "here\n").unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[commands]\ndefault = \"allow\"\n",
    )
    .unwrap();
    let call = ScriptedMessage::text(&[]).with_call(
        ScriptedCall::to("run_command", json!({"command": ["cat", "present.txt"]})).id("c1"),
    );
    let server = FakeServer::start(vec![
        Reply::sse(call.openai_chat_sse()),
        Reply::sse(ScriptedMessage::text(&["Read."]).openai_chat_sse()),
    ])
    .await
    .unwrap();
    let url = format!("{}/v1", server.base_url());
    let (home_path, cwd) = (home.path().to_owned(), base.path().to_owned());
    let out = tokio::task::spawn_blocking(move || {
        common::rein_at(&home_path)
            .current_dir(&cwd)
            .args([
                "chat",
                "--base-url",
                &url,
                "--model",
                "m",
                "--allow-commands",
            ])
            .args(["--root", "project", "-p", "read it"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = server.requests()[1].json().to_string();
    assert!(sent.contains("here"), "{sent}");
}

/// Through `rein chat` itself: an approved command cannot reach a Unix
/// socket listening outside the root (a person's tmux, `rein agents
/// attach`), with or without bubblewrap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_reaches_no_unix_socket_outside_the_root() {
    for bubblewrap in ["false", "true"] {
        if bubblewrap == "true" && rein::sandbox::bwrap::find().is_none() {
            continue;
        }
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            format!("[sandbox]\nbubblewrap = {bubblewrap}\n[commands]\ndefault = \"allow\"\n"),
        )
        .unwrap();
        let socket = outside.path().join("door.sock");
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        listener.set_nonblocking(true).unwrap();
        // A script in the project (inline code is refused by the policy).
        std::fs::write(
            root.path().join("connect.pl"),
            "use Socket; socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die \"socket: $!\\n\"; connect($s, pack_sockaddr_un($ARGV[0])) or die \"connect: $!\\n\"; print \"REA\" . \"CHED\\n\";\n",
        )
        .unwrap();
        let call = ScriptedMessage::text(&[]).with_call(
            ScriptedCall::to(
                "run_command",
                json!({"command": ["perl", "connect.pl", socket.display().to_string()]}),
            )
            .id("c1"),
        );
        let server = FakeServer::start(vec![
            Reply::sse(call.openai_chat_sse()),
            Reply::sse(ScriptedMessage::text(&["Tried."]).openai_chat_sse()),
        ])
        .await
        .unwrap();
        let url = format!("{}/v1", server.base_url());
        let (home_path, root_path) = (home.path().to_owned(), root.path().to_owned());
        let out = tokio::task::spawn_blocking(move || {
            common::rein_at(&home_path)
                .args([
                    "chat",
                    "--base-url",
                    &url,
                    "--model",
                    "m",
                    "--allow-commands",
                ])
                .arg("--root")
                .arg(&root_path)
                .args(["-p", "connect"])
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let sent = server.requests()[1].json().to_string();
        assert!(!sent.contains("REACHED"), "bubblewrap {bubblewrap}: {sent}");
        assert!(
            sent.contains("not permitted") || sent.contains("No such file"),
            "bubblewrap {bubblewrap}: refused inside the sandbox: {sent}"
        );
        assert!(
            matches!(listener.accept(), Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "bubblewrap {bubblewrap}: the listener outside took a connection"
        );
    }
}

/// The same failing command over and over is a loop though each run takes
/// its own time (`duration_ms`): nudged at the third, stopped at the fifth.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_command_repeated_is_nudged_then_stopped() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let policy = outside.path().join("policy.toml");
    std::fs::write(&policy, "default = \"allow\"\n").unwrap();
    let server = FakeServer::start(vec![]).await.unwrap();
    server.respond_with(std::sync::Arc::new(|_, n| {
        let call = ScriptedMessage::text(&[]).with_call(
            ScriptedCall::to("run_command", json!({"command": ["ls", "no-such-file"]}))
                .id(&format!("c{n}")),
        );
        Reply::sse(call.openai_chat_sse())
    }));
    let url = format!("{}/v1", server.base_url());
    let (dir, policy_path) = (root.path().to_owned(), policy.clone());
    let out = tokio::task::spawn_blocking(move || {
        common::rein()
            .args([
                "chat",
                "--base-url",
                &url,
                "--model",
                "m",
                "--allow-commands",
                "--commands",
            ])
            .arg(&policy_path)
            .arg("--root")
            .arg(&dir)
            .args(["-p", "make it pass"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    if said.contains("sandbox_unavailable") && std::env::var_os("REIN_REQUIRE_SANDBOX").is_none() {
        eprintln!("SKIPPED: the Linux sandbox cannot confine on this kernel: {said}");
        return;
    }
    let requests = server.requests();
    assert!(
        requests.len() <= 6,
        "the loop was not stopped: {} requests\n{said}",
        requests.len()
    );
    assert!(said.contains("loop"), "{said}");
    // The fourth request carries the nudge, after three runs.
    let fourth = requests[3].json().to_string();
    assert!(fourth.contains("no-such-file"), "{fourth}");
    let nudge = rein::runner::Wording::default().loop_nudge;
    let nudge_start: String = nudge.chars().take(24).collect();
    assert!(
        requests
            .iter()
            .any(|r| r.json().to_string().contains(&nudge_start)),
        "no request carried the nudge {nudge_start:?}"
    );
}

/// An OpenAI-compatible server is asked its window, and the chat says what
/// it works in: what llama.cpp's `/props` states, else a conservative
/// default (never a hosted API's 128,000), which `--window` overrides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compatible_servers_window_is_asked_and_said() {
    for (props, flags, expected) in [
        (
            None,
            vec![],
            "did not say its window: working in 8192 tokens",
        ),
        (
            Some(r#"{"default_generation_settings":{"n_ctx":6144}}"#),
            vec![],
            "the server's window: 6144 tokens (llama.cpp GET /props)",
        ),
        (
            Some(r#"{"default_generation_settings":{"n_ctx":6144}}"#),
            vec!["--window", "16384"],
            "",
        ),
    ] {
        let server = FakeServer::start(vec![Reply::sse(
            ScriptedMessage::text(&["Hello."]).openai_chat_sse(),
        )])
        .await
        .unwrap();
        if let Some(props) = props {
            server.answer_get("/props", 200, props);
        }
        let url = format!("{}/v1", server.base_url());
        let given = flags.clone();
        let out = tokio::task::spawn_blocking(move || {
            common::rein()
                .args(["chat", "--base-url", &url, "--model", "m"])
                .args(&given)
                .args(["-p", "hello"])
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{said}");
        if expected.is_empty() {
            assert!(
                !said.contains("window"),
                "the definition's window was not taken: {said}"
            );
        } else {
            assert!(said.contains(expected), "{said}");
        }
        assert_eq!(server.requests().len(), 1, "a GET took a scripted reply");
        // `rein config show` says where the window comes from when unset,
        // and shows the set one as any value.
        let home = tempfile::tempdir().unwrap();
        if !flags.is_empty() {
            std::fs::write(
                home.path().join("config.toml"),
                "[agent.compaction]\nwindow = 16384\n",
            )
            .unwrap();
        }
        let shown = common::rein_at(home.path())
            .args(["config", "show"])
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
        assert_eq!(
            shown.contains("window: not set"),
            flags.is_empty(),
            "{shown}"
        );
        assert_eq!(
            shown.contains("window = 16384"),
            !flags.is_empty(),
            "{shown}"
        );
        // The answer is given at most a quarter of a small window, so what
        // is sent keeps its room (the whole reservation counts).
        if expected.contains("6144") {
            let sent = server.requests()[0].json();
            assert_eq!(sent["max_tokens"], 1536, "{sent}");
        }
    }
}

/// A command whose program is not on the commands' path is answered
/// before anyone is asked, naming the programs there with a name like it
/// (`python0` asked; `python3` is there on every machine the suite runs
/// on): the model's next call can be the right one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_program_is_answered_with_the_ones_like_it_before_anyone_is_asked() {
    let root = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let call = ScriptedMessage::text(&[]).with_call(
        ScriptedCall::to("run_command", json!({"command": ["python0", "app.py"]})).id("c1"),
    );
    let server = FakeServer::start(vec![
        Reply::sse(call.openai_chat_sse()),
        Reply::sse(ScriptedMessage::text(&["I will use python3."]).openai_chat_sse()),
    ])
    .await
    .unwrap();
    let url = format!("{}/v1", server.base_url());
    let mut cmd = common::rein_at(home.path());
    cmd.args([
        "chat",
        "--base-url",
        &url,
        "--model",
        "m",
        "--allow-commands",
        "--root",
    ])
    .arg(root.path())
    .args(["-p", "run the app"]);
    let out = tokio::task::spawn_blocking(move || common::run_with_stdin(cmd, b""))
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        !said.contains("approve?"),
        "asked for a program that is not there: {said}"
    );
    let sent = server.requests()[1].json().to_string();
    assert!(sent.contains("program_not_found"), "{sent}");
    assert!(sent.contains("python3"), "{sent}");
}

/// `[sandbox] backend = "container"`: the model's command runs in a fresh
/// container of the configured image (the test's BusyBox one, whose root
/// has no `/usr`), the project bound in at its own path, the host's
/// `PATH` not carried in; the result and the terminal say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_runs_a_command_in_a_container_of_the_configured_image() {
    let Some(image) = rein_testing::containers::image() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[sandbox]\nbackend = \"container\"\nimage = \"{image}\"\n"),
    )
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("present.txt"), "here\n").unwrap();
    let (out, server) = chat(
        home.path(),
        root.path(),
        vec![
            run_command("c1", json!(["ls", "-la"])),
            run_command("c2", json!(["ls", "/"])),
            say("Listed."),
        ],
        &["--commands".as_ref(), example_policy().as_os_str()],
        "what is here?",
    )
    .await;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "run_command: container: docker image {image}, no network"
        )),
        "{said}"
    );
    let requests = server.requests();
    let listed = requests[1].json().to_string();
    assert!(listed.contains("present.txt"), "{listed}");
    let top = requests[2].json().to_string();
    assert!(top.contains("proc") && top.contains("bin"), "{top}");
    assert!(
        !top.contains("usr"),
        "the host's root, not the image's: {top}"
    );
}
