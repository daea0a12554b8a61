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
