//! `rein agents run tui` and `rein agents attach` as two real processes
//! around a real `bash` in a PTY: both terminals see the same screen, the
//! one that types holds the session, the other's keys are refused naming
//! the holder, a release hands it back, and every intervention is a
//! durable `host.intervened` event.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::hosted::{Buf, capture, text};

struct Proc {
    child: Child,
    stdin: ChildStdin,
    out: Buf,
    err: Buf,
}

fn start(mut cmd: Command) -> Proc {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let out = capture(child.stdout.take().unwrap());
    let err = capture(child.stderr.take().unwrap());
    Proc {
        child,
        stdin,
        out,
        err,
    }
}

fn wait_for(buf: &Buf, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let t = text(buf);
        if t.contains(needle) {
            return t;
        }
        assert!(Instant::now() < deadline, "never saw {needle:?} in {t:?}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// `rein agents sessions` lists the one session `id`, in its own terminal
/// mode, watched by its owner and bob, held by bob.
fn listed_as_held_by_bob(home: &std::path::Path, id: &str) {
    let listed = live_sessions(home);
    assert_eq!(listed.len(), 1, "{listed:?}");
    let session = &listed[0];
    assert_eq!(session["session"], id);
    assert_eq!(session["mode"], "native-tui");
    assert_eq!(session["holder"], "person");
    let holder = session["viewer"].as_str().unwrap();
    assert!(holder.starts_with("bob#"), "{session}");
    let mut viewers: Vec<&str> = session["viewers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    viewers.sort_unstable();
    assert_eq!(viewers, [holder, "local"], "a lister is no viewer");
    let opened = session["opened_at_ms"].as_i64().unwrap();
    assert!(opened > 0 && opened <= rein::wire::clock::now_ms());
}

/// `rein agents sessions --json`, one object a live session.
fn live_sessions(home: &std::path::Path) -> Vec<serde_json::Value> {
    let out = common::rein_at(home)
        .args(["agents", "sessions", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

impl Proc {
    fn type_keys(&mut self, keys: &[u8]) {
        self.stdin.write_all(keys).unwrap();
        self.stdin.flush().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_terminals_one_session_takeover_by_typing() {
    let home = tempfile::tempdir().unwrap();
    let mut owner_cmd = common::rein_at(home.path());
    owner_cmd.args([
        "agents",
        "run",
        "tui",
        "--",
        "/bin/bash",
        "--norc",
        "--noprofile",
        "-i",
    ]);
    let mut owner = start(owner_cmd);
    let said = wait_for(&owner.err, "rein agents attach ");
    let id = said
        .split("rein agents attach ")
        .nth(1)
        .unwrap()
        .split('`')
        .next()
        .unwrap()
        .to_owned();

    let mut bob_cmd = common::rein_at(home.path());
    bob_cmd.args(["agents", "attach", &id, "--as", "bob"]);
    let mut bob = start(bob_cmd);
    wait_for(&bob.err, "attached as bob#");

    owner.type_keys(b"echo one-$((1+1))\n");
    wait_for(&owner.out, "one-2");
    wait_for(&bob.out, "one-2");

    bob.type_keys(b"echo two-$((2+2))\n");
    wait_for(&bob.err, "local holds the session; your keys were not sent");

    owner.type_keys(&[0x1d, b'r']);
    std::thread::sleep(Duration::from_millis(300));
    bob.type_keys(b"echo three-$((3+3))\n");
    wait_for(&bob.err, "you took the session over");
    wait_for(&owner.out, "three-6");
    wait_for(&bob.out, "three-6");
    listed_as_held_by_bob(home.path(), &id);
    owner.type_keys(b"echo four-$((4+4))\n");
    wait_for(&owner.err, "holds the session; your keys were not sent");

    bob.type_keys(b"exit\n");
    wait_for(&bob.err, "the session ended");
    assert!(
        owner.child.wait().unwrap().success(),
        "{}",
        text(&owner.err)
    );
    let _ = bob.child.wait();
    assert!(!text(&owner.out).contains("two-4") && !text(&owner.out).contains("four-8"));
    assert!(
        live_sessions(home.path()).is_empty(),
        "an ended run is not live"
    );

    let store = rein::sessions::SqliteStore::open_home(home.path())
        .await
        .unwrap();
    let events = rein::sessions::read_all(&store, &id).await.unwrap();
    let interventions: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.event {
            rein::sessions::Event::HostIntervened {
                viewer,
                intervention,
                ..
            } => Some((
                viewer.split('#').next().unwrap().to_owned(),
                intervention.as_str().to_owned(),
            )),
            _ => None,
        })
        .collect();
    let pairs: Vec<(&str, &str)> = interventions
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("local", "takeover"),
            ("bob", "refused"),
            ("local", "released"),
            ("bob", "takeover"),
            ("local", "refused")
        ]
    );
    let takeover_data = events.iter().find_map(|e| match &e.event {
        rein::sessions::Event::HostIntervened { data: Some(d), .. } => Some(d.clone()),
        _ => None,
    });
    assert_eq!(takeover_data.as_deref(), Some("echo one-$((1+1))\n"));
    assert!(events.iter().any(|e| matches!(&e.event, rein::sessions::Event::RunFinished { outcome, .. } if outcome == "finished")));
}
