//! Nothing rein starts outlives it: a hosted agent dies with `rein agents
//! run` whatever ends it (SIGTERM, SIGHUP, SIGKILL), its run is closed and
//! its socket removed; a child that left the program's group neither hangs
//! the run nor outlives it; a sandboxed command dies with `rein chat`. Real
//! processes and real signals throughout.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use rein_testing::{FakeServer, Reply, ScriptedCall, ScriptedMessage};
use serde_json::json;

/// Whether `pid` is gone (a zombie nobody reaped counts as gone).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            stat.rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next())
                == Some("Z")
        }
    }
}

fn wait_gone(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// The pid a script wrote to `file`, once it has.
fn pid_in(file: &Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "{} never came", file.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_exit(child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "rein did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn hosted(home: &Path, work: &Path, script: &str) -> Child {
    let sh = work.join("agent.sh");
    std::fs::write(&sh, script).unwrap();
    common::rein_at(home)
        .current_dir(work)
        .args(["agents", "run", "claude", "--", "/bin/sh"])
        .arg(&sh)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_hosted_agent_dies_with_rein_whatever_ends_it() {
    let init = json!({"type": "system", "subtype": "init", "model": "m"});
    for signal in [Signal::SIGTERM, Signal::SIGHUP, Signal::SIGKILL] {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let pid_file = work.path().join("agent.pid");
        let mut rein = hosted(
            home.path(),
            work.path(),
            &format!(
                "printf '%s\\n' '{init}'\necho $$ > '{}'\nexec sleep 600\n",
                pid_file.display()
            ),
        );
        let agent = pid_in(&pid_file);
        kill(Pid::from_raw(i32::try_from(rein.id()).unwrap()), signal).unwrap();
        wait_exit(&mut rein);
        assert!(wait_gone(agent), "{signal}: the hosted agent outlived rein");
        // The next look closes a run whose driver died, and its socket goes.
        let list = common::rein_at(home.path())
            .args(["agents", "list"])
            .output()
            .unwrap();
        let listed = common::stdout(&list);
        assert!(!listed.contains("running"), "{signal}: {listed}");
        assert!(
            listed.contains("interrupted") || listed.contains("failed"),
            "{signal}: {listed}"
        );
        let sockets: Vec<_> = std::fs::read_dir(home.path().join("agents"))
            .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        assert!(sockets.is_empty(), "{signal}: left behind {sockets:?}");
    }
}

#[test]
fn a_child_that_left_the_group_neither_hangs_the_run_nor_outlives_it() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let init = json!({"type": "system", "subtype": "init", "model": "m"});
    let result =
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "Done."});
    let escaped = work.path().join("escaped.pid");
    let mut rein = hosted(
        home.path(),
        work.path(),
        &format!(
            "printf '%s\\n' '{init}'\nsetsid sleep 600 &\necho $! > '{}'\nprintf '%s\\n' '{result}'\nexit 0\n",
            escaped.display()
        ),
    );
    let survivor = pid_in(&escaped);
    // The run ends when its program does, not at its one-hour limit.
    wait_exit(&mut rein);
    assert!(rein.wait().unwrap().success());
    assert!(wait_gone(survivor), "a setsid child outlived the run");
}

/// A program that kills its keeper (its parent, the same user's) leaves
/// nothing running: a child it started that left its group and its pipes
/// dies with the run all the same — where the machine offers a pids cgroup
/// (here, as root: `.ci/run`'s machine).
#[test]
fn a_program_that_kills_its_keeper_leaves_nothing_running() {
    if !Path::new("/sys/fs/cgroup/pids/cgroup.procs").is_file() {
        assert!(
            std::env::var_os("REIN_REQUIRE_SANDBOX").is_none(),
            "this machine offers no pids cgroup"
        );
        eprintln!("skipped: no pids cgroup here");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let init = json!({"type": "system", "subtype": "init", "model": "m"});
    let result =
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "Done."});
    let escaped = work.path().join("escaped.pid");
    let mut rein = hosted(
        home.path(),
        work.path(),
        &format!(
            "printf '%s\\n' '{init}'\nsetsid sleep 600 </dev/null >/dev/null 2>&1 &\necho $! > '{}'\nkill -9 $PPID\nsleep 0.2\nprintf '%s\\n' '{result}'\nexit 0\n",
            escaped.display()
        ),
    );
    let survivor = pid_in(&escaped);
    wait_exit(&mut rein);
    let left = !wait_gone(survivor);
    if left {
        let _ = kill(Pid::from_raw(survivor), Signal::SIGKILL);
    }
    assert!(
        !left,
        "a child of a program that killed its keeper outlived the run"
    );
}

/// Kill `rein` outright once the two children have written their pids
/// (one in the program's group, one that left it); both must die with it.
fn killed_outright_takes_along(rein: &mut Child, grouped: &Path, escaped: &Path) {
    let (grouped, escaped) = (pid_in(grouped), pid_in(escaped));
    rein.kill().unwrap();
    rein.wait().unwrap();
    let left: Vec<i32> = [grouped, escaped]
        .into_iter()
        .filter(|pid| !wait_gone(*pid))
        .collect();
    for pid in &left {
        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    assert!(
        left.is_empty(),
        "outlived a rein killed outright: {left:?} of grouped {grouped}, escaped {escaped}"
    );
}

/// rein killed outright (it cleans up nothing) takes along what its hosted
/// agent started too: a child in the agent's group and one that left it.
#[test]
fn what_a_hosted_agent_started_dies_with_a_rein_killed_outright() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let init = json!({"type": "system", "subtype": "init", "model": "m"});
    let (grouped, escaped) = (
        work.path().join("grouped.pid"),
        work.path().join("escaped.pid"),
    );
    let mut rein = hosted(
        home.path(),
        work.path(),
        &format!(
            "printf '%s\\n' '{init}'\nsleep 600 &\necho $! > '{}'\nsetsid sleep 600 &\necho $! > '{}'\nwait\n",
            grouped.display(),
            escaped.display()
        ),
    );
    killed_outright_takes_along(&mut rein, &grouped, &escaped);
}

/// The same for a program hosted in a terminal (`rein agents run tui`)
/// that ignores the terminal's hang-up, as its children then do: rein
/// killed outright takes them along all the same.
#[test]
fn what_a_hosted_tui_started_dies_with_a_rein_killed_outright() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (grouped, escaped) = (
        work.path().join("grouped.pid"),
        work.path().join("escaped.pid"),
    );
    let sh = work.path().join("tui.sh");
    std::fs::write(
        &sh,
        format!(
            "trap '' HUP\nsleep 600 &\necho $! > '{}'\nsetsid sleep 600 &\necho $! > '{}'\nwait\n",
            grouped.display(),
            escaped.display()
        ),
    )
    .unwrap();
    let mut rein = common::rein_at(home.path())
        .current_dir(work.path())
        .args(["agents", "run", "tui", "--", "/bin/sh"])
        .arg(&sh)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    killed_outright_takes_along(&mut rein, &grouped, &escaped);
}

/// A chat whose model runs `sh -c` with a child in the background, in the
/// sandbox without bubblewrap (which would take everything along by
/// itself); the pids of the shell and its child, and the chat.
async fn chat_running_a_command(home: &Path, root: &Path) -> (Child, i32, i32) {
    std::fs::write(
        home.join("config.toml"),
        "[sandbox]\nbubblewrap = false\n[commands]\nshell = true\ndefault = \"ask\"\n",
    )
    .unwrap();
    let script = "sleep 600 & echo $! > bg.pid; echo $$ > fg.pid; wait";
    let call = ScriptedMessage::text(&[]).with_call(
        ScriptedCall::to("run_command", json!({"command": ["sh", "-c", script]})).id("c1"),
    );
    let server = FakeServer::start(vec![Reply::sse(call.openai_chat_sse())])
        .await
        .unwrap();
    let url = format!("{}/v1", server.base_url());
    let mut chat = common::rein_at(home)
        .args([
            "chat",
            "--base-url",
            &url,
            "--model",
            "m",
            "--allow-commands",
        ])
        .arg("--root")
        .arg(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let stdin = chat.stdin.as_mut().unwrap();
        stdin.write_all(b"run it\ny\n").unwrap();
        stdin.flush().unwrap();
    }
    let fg = pid_in(&root.join("fg.pid"));
    let bg = pid_in(&root.join("bg.pid"));
    std::mem::forget(server);
    (chat, fg, bg)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_command_dies_with_the_chat() {
    for signal in [Signal::SIGTERM, Signal::SIGKILL] {
        let home = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let (mut chat, fg, bg) = chat_running_a_command(home.path(), root.path()).await;
        kill(Pid::from_raw(i32::try_from(chat.id()).unwrap()), signal).unwrap();
        let home_path = home.path().to_owned();
        tokio::task::spawn_blocking(move || {
            wait_exit(&mut chat);
            assert!(wait_gone(fg), "{signal}: the command outlived the chat");
            if signal == Signal::SIGKILL {
                // Killed outright, rein could not clean up: the next rein to
                // use the sandbox kills what is left in the dead run's group.
                let next = common::rein_at(&home_path)
                    .args(["chat", "--scripted", "--allow-commands", "-p", "hi"])
                    .output()
                    .unwrap();
                assert!(next.status.success(), "{}", common::stderr(&next));
            }
            assert!(
                wait_gone(bg),
                "{signal}: the command's child outlived the chat"
            );
        })
        .await
        .unwrap();
    }
}
