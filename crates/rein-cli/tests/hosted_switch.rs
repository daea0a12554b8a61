//! A kept-open Claude Code session switched to Claude Code's own terminal
//! UI and back, on the real CLI (npm, pinned: `rein_testing::clis`) against
//! a loopback Messages API stand-in this test owns: after the stream's
//! first answer, an attached viewer's Ctrl-] m ends the stream and starts
//! `claude --resume ID` in a PTY the session shows; the viewer types a
//! turn into the UI (a takeover); a second Ctrl-] m ends the UI and
//! resumes the stream on the same conversation, whose next turn (`rein
//! say`) carries the turn typed in the UI. Only one program runs at a
//! time; the switches and the takeover are in the record. The same for
//! Codex's app server (`codex app-server`, pinned) and its UI (`codex
//! resume ID`) against a loopback Responses stand-in: the viewer's
//! terminal answers the questions Codex's UI asks it, as a terminal does.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::hosted::{Buf, text};
use common::kept::{Kept, asked_with, attach, keys, noting_messages, say, wait_until};
use rein_testing::FakeServer;
use serde_json::json;
use std::process::Child;

/// A home for Claude Code whose UI opens straight onto the conversation:
/// onboarding done, `work` trusted, the test's key approved.
fn claude_home(work: &Path, key: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let config = json!({
        "hasCompletedOnboarding": true,
        "theme": "dark",
        "projects": {work.display().to_string(): {"hasTrustDialogAccepted": true}},
        "customApiKeyResponses": {"approved": [&key[key.len() - 20..]], "rejected": []},
    });
    std::fs::write(home.path().join(".claude.json"), config.to_string()).unwrap();
    home
}

/// A terminal's bytes as the words it shows: escape sequences (cursor
/// moves stand for spaces) and runs of blanks made one space.
fn shown(screen: &Buf) -> String {
    let raw = text(screen);
    let mut words = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            match chars.next() {
                Some('[') => {
                    while let Some(&n) = chars.peek() {
                        chars.next();
                        if n.is_ascii_alphabetic() || n == '~' {
                            break;
                        }
                    }
                }
                Some(']') => {
                    for n in chars.by_ref() {
                        if n == '\x07' || n == '\x1b' {
                            break;
                        }
                    }
                }
                _ => {}
            }
            words.push(' ');
        } else if c.is_whitespace() || c.is_control() {
            words.push(' ');
        } else {
            words.push(c);
        }
    }
    words.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Claude Code's processes working in `work` now: (in its stream, in its
/// own UI) — by their arguments.
fn claudes_in(work: &Path) -> (usize, usize) {
    let claudes = args_in(work, "claude");
    let streams = claudes
        .iter()
        .filter(|args| args.iter().any(|a| a == "stream-json"))
        .count();
    let uis = claudes
        .iter()
        .filter(|args| {
            !args.iter().any(|a| a == "stream-json") && args.iter().any(|a| a == "--resume")
        })
        .count();
    (streams, uis)
}

/// Codex's processes working in `work` now: (its app server, its own UI).
fn codexes_in(work: &Path) -> (usize, usize) {
    let codexes = args_in(work, "codex");
    let with = |word: &str| {
        codexes
            .iter()
            .filter(|args| args.iter().any(|a| a == word))
            .count()
    };
    (with("app-server"), with("resume"))
}

/// The arguments of each `program` process working in `work` now (the
/// program itself: not rein, nor its keeper, naming it).
fn args_in(work: &Path, program: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let dir = entry.path();
        if std::fs::read_link(dir.join("cwd")).ok().as_deref() != Some(work) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args
            .first()
            .is_some_and(|a| a.ends_with(&format!("/{program}")))
        {
            found.push(args);
        }
    }
    found
}

/// Every Claude Code stream in `work` puts its permission questions to
/// rein's person (`--permission-prompt-tool`), the resumed one too.
fn streams_ask_rein(work: &Path, resumed: bool) -> bool {
    let streams: Vec<Vec<String>> = args_in(work, "claude")
        .into_iter()
        .filter(|args| args.iter().any(|a| a == "stream-json"))
        .collect();
    !streams.is_empty()
        && streams.iter().all(|args| {
            args.iter().any(|a| a == "--permission-prompt-tool")
                && args.iter().any(|a| a == "--resume") == resumed
        })
}

/// The session's interventions as recorded: (kind, data).
async fn interventions(home: &Path, session: &str) -> Vec<(String, Option<String>)> {
    common::hosted::recorded(home, session)
        .await
        .into_iter()
        .filter_map(|e| match e {
            rein::sessions::Event::HostIntervened {
                intervention, data, ..
            } => Some((intervention.to_string(), data)),
            _ => None,
        })
        .collect()
}

/// In the UI the session switched to: once its prompt is drawn (the
/// stream's program gone), the viewer types a turn (taking it over); the
/// model is asked and the UI shows its answer.
fn turn_in_the_ui(viewer: &mut Child, screen: &Buf, server: &FakeServer, work: &Path) {
    // Typing into the UI takes it over and runs a turn there.
    // Its prompt drawn: the status line under it names its agents key.
    let ui = || {
        let all = shown(screen);
        all.split("now in native-tui")
            .nth(1)
            .unwrap_or_default()
            .to_owned()
    };
    let ready = Instant::now() + Duration::from_secs(60);
    while !ui().contains("for agents") {
        assert!(
            Instant::now() < ready,
            "the UI never waited for input: {}",
            ui()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Never both at once: the stream's program is gone.
    let (streams, uis) = claudes_in(work);
    assert!(streams == 0 && uis >= 1, "{streams} streams, {uis} UIs");
    keys(viewer, b"second question");
    wait_until("the UI echoed the words", || {
        ui().contains("second question")
    });
    keys(viewer, b"\r");
    wait_until("the UI's turn reached the model", || {
        !asked_with(server, "second question").is_empty()
    });
    wait_until("the UI showed its answer", || {
        ui().contains("Noted: second question")
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_open_claude_code_session_switches_to_its_own_ui_and_back() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let claude_home = claude_home(work.path(), "sk-ant-test-NOT-A-KEY");
    let server = noting_messages(None).await;
    let options = ["--keep-open", "120", "--timeout", "300"];
    let mut cmd = common::hosted::claude(
        home.path(),
        work.path(),
        &server,
        "first question",
        &options,
    );
    cmd.env("HOME", claude_home.path());
    let run = Kept::start(cmd);
    let session = run.session.clone();
    run.answered("Noted: first question");

    assert!(
        streams_ask_rein(work.path(), false),
        "{:?}",
        args_in(work.path(), "claude")
    );
    let (mut viewer, status, screen) = attach(home.path(), &session, "bob");
    wait_until("the viewer attached", || {
        text(&status).contains("Ctrl-] m switches its mode")
    });
    // Ctrl-] m: the stream ends, Claude Code's own UI resumes the conversation.
    keys(&mut viewer, b"\x1dm");
    wait_until("the switch was asked", || {
        text(&status).contains("switching to native-tui")
    });
    wait_until("the UI shows the conversation so far", || {
        shown(&screen).contains("first question") && text(&run.err).contains("own terminal UI")
    });
    turn_in_the_ui(&mut viewer, &screen, &server, work.path());
    // Ctrl-] m again: the UI ends, the stream resumes the same conversation;
    // and once more both ways before any turn there (nothing named anew).
    for round in 1..=2 {
        if round == 2 {
            keys(&mut viewer, b"\x1dm");
            wait_until("the UI again", || {
                text(&status).matches("switching to native-tui").count() == 2
                    && matches!(claudes_in(work.path()), (0, uis) if uis >= 1)
            });
        }
        keys(&mut viewer, b"\x1dm");
        wait_until("back in the stream", || {
            text(&run.err).matches("back in the stream").count() == round
        });
        wait_until("only the stream runs", || {
            let (streams, uis) = claudes_in(work.path());
            streams >= 1 && uis == 0
        });
    }
    assert!(
        streams_ask_rein(work.path(), true),
        "{:?}",
        args_in(work.path(), "claude")
    );
    say(home.path(), &session, "third question");
    run.answered("Noted: third question");
    let third = asked_with(&server, "third question");
    assert!(
        third.iter().any(|b| b.contains("second question")),
        "the stream resumed the conversation the UI went on: {third:?}"
    );

    let (ok, stdout, stderr) = run.stop_between_turns(home.path()).await;
    let _ = viewer.kill();
    let _ = viewer.wait();
    assert!(ok, "{stderr}");
    let recorded = interventions(home.path(), &session).await;
    let kinds: Vec<&str> = recorded.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"switched"), "{recorded:?}");
    assert!(kinds.contains(&"takeover"), "{recorded:?}");
    assert_eq!(
        recorded
            .iter()
            .filter(|(k, _)| k == "switched")
            .map(|(_, d)| d.clone().unwrap_or_default())
            .collect::<Vec<_>>(),
        ["native-tui", "stream", "native-tui", "stream"],
        "{recorded:?}"
    );
    assert!(!stderr.contains("NOT-A-KEY") && !stdout.contains("NOT-A-KEY"));
}

/// What a terminal answers, by itself, to the questions Codex's UI asks
/// its terminal as it starts (it waits for them): keyboard flags, device
/// attributes, cursor position, foreground and background colours.
const ANSWERS: [(&[u8], &[u8]); 5] = [
    (b"\x1b[?u", b"\x1b[?0u"),
    (b"\x1b[c", b"\x1b[?62;22c"),
    (b"\x1b[6n", b"\x1b[1;1R"),
    (b"\x1b]10;?", b"\x1b]10;rgb:ffff/ffff/ffff\x1b\\"),
    (b"\x1b]11;?", b"\x1b]11;rgb:0000/0000/0000\x1b\\"),
];

/// An attached viewer whose terminal answers the program's questions to
/// it (as a person's terminal does, with nobody typing).
struct Terminal {
    viewer: Child,
    screen: Buf,
    /// How far its screen was read for questions.
    read: usize,
}

impl Terminal {
    /// Answer the questions asked since last time.
    fn answer(&mut self) {
        let screen = self.screen.lock().unwrap().clone();
        let longest = ANSWERS.iter().map(|(q, _)| q.len()).max().unwrap_or(0);
        // A question cut at the end is read next time.
        let end = screen.len().saturating_sub(longest - 1).max(self.read);
        let mut answers = Vec::new();
        let mut at = self.read;
        while at < end {
            match ANSWERS.iter().find(|(q, _)| screen[at..].starts_with(q)) {
                Some((q, a)) => {
                    answers.extend_from_slice(a);
                    at += q.len();
                }
                None => at += 1,
            }
        }
        self.read = at;
        if !answers.is_empty() {
            keys(&mut self.viewer, &answers);
        }
    }

    /// Wait until `done`, answering the program meanwhile.
    fn wait(&mut self, what: &str, mut done: impl FnMut(&Buf) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            self.answer();
            if done(&self.screen) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "never: {what}; the screen: {}",
                shown(&self.screen)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A Codex home whose UI opens straight onto the thread: `work` trusted.
fn codex_home(work: &Path) -> tempfile::TempDir {
    // Not under the system's temporary folder (Codex refuses its helper there).
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let config = format!(
        "[projects.{:?}]\ntrust_level = \"trusted\"\n",
        work.display().to_string()
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    home
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_open_codex_session_switches_to_its_own_ui_and_back() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let codex_home = codex_home(work.path());
    let server = common::kept::noting_responses().await;
    let cmd = common::hosted::codex_app(
        (home.path(), work.path(), codex_home.path()),
        &server,
        "first question",
        &["--keep-open", "120", "--timeout", "300"],
    );
    let run = Kept::start(cmd);
    let session = run.session.clone();
    run.answered("Noted: first question");
    let (viewer, status, screen) = attach(home.path(), &session, "bob");
    let mut terminal = Terminal {
        viewer,
        screen,
        read: 0,
    };
    wait_until("the viewer attached", || {
        text(&status).contains("Ctrl-] m switches its mode")
    });
    // Ctrl-] m: the app server ends, Codex's own UI resumes the thread.
    keys(&mut terminal.viewer, b"\x1dm");
    wait_until("the switch was asked", || {
        text(&status).contains("switching to native-tui")
    });
    let ui = |screen: &Buf| {
        shown(screen)
            .split("now in native-tui")
            .nth(1)
            .unwrap_or_default()
            .to_owned()
    };
    terminal.wait("the UI shows the thread so far", |screen| {
        ui(screen).contains("Noted: first question")
    });
    // Never both at once: the app server is gone.
    let (servers, uis) = codexes_in(work.path());
    assert!(servers == 0 && uis >= 1, "{servers} servers, {uis} UIs");
    keys(&mut terminal.viewer, b"second question");
    terminal.wait("the UI echoed the words", |screen| {
        ui(screen).contains("second question")
    });
    keys(&mut terminal.viewer, b"\r");
    terminal.wait("the UI's turn reached the model", |_| {
        !asked_with(&server, "second question").is_empty()
    });
    terminal.wait("the UI showed its answer", |screen| {
        ui(screen).contains("Noted: second question")
    });
    // Ctrl-] m again: the UI ends, the app server resumes the thread.
    keys(&mut terminal.viewer, b"\x1dm");
    wait_until("back in the stream", || {
        text(&run.err).contains("back in the stream")
    });
    wait_until("only the app server runs", || {
        let (servers, uis) = codexes_in(work.path());
        servers >= 1 && uis == 0
    });
    say(home.path(), &session, "third question");
    run.answered("Noted: third question");
    let third = asked_with(&server, "third question");
    assert!(
        third.iter().any(|b| b.contains("second question")),
        "the app server resumed the thread the UI went on: {} requests, none with the UI's turn",
        third.len()
    );

    let (ok, stdout, stderr) = run.stop_between_turns(home.path()).await;
    let _ = terminal.viewer.kill();
    let _ = terminal.viewer.wait();
    assert!(ok, "{stderr}");
    let recorded = interventions(home.path(), &session).await;
    let switched: Vec<String> = recorded
        .iter()
        .filter(|(k, _)| k == "switched")
        .map(|(_, d)| d.clone().unwrap_or_default())
        .collect();
    assert_eq!(switched, ["native-tui", "stream"], "{recorded:?}");
    assert!(
        recorded.iter().any(|(k, _)| k == "takeover"),
        "{recorded:?}"
    );
    assert!(!stderr.contains("NOT-A-KEY") && !stdout.contains("NOT-A-KEY"));
}
