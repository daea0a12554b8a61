//! A hosted session switched to its program's own terminal UI, and back
//! (the reference host's switchable sessions; never both at once).
//!
//! A session opened as a protocol stream (`Stays::switchable`) ends its
//! stream between turns when a viewer asks (`SessionHost::ask_switch`,
//! Ctrl-] m when attached); its owner then runs the program's own UI on
//! the same conversation ([`own_ui`]) in a PTY the session shows: viewers
//! watch it and take it over by typing, as in a `tui` run. A viewer's
//! second Ctrl-] m, or the program exiting, ends the UI and the owner
//! resumes the stream. One program runs at a time: the stream's program
//! has ended before the UI starts, and the UI's before the stream resumes.
//! A stop (the run's, or one posted to the session) ends the session;
//! words posted meanwhile are recorded, and heard by nobody (the person
//! types into the UI itself).
//!
//! Not here: the stream's run (`driver.rs`), the session's rules
//! (`session`), which programs resume how (their surface: `rein agents`).

use rein_wire::AgentError;
use rein_wire::error::codes;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::child::HostSpec;
use crate::config::{AgentEntry, AgentKind};
use crate::heard::{Ears, Woke};
use crate::progress::{Progress, ProgressKind};
use crate::record::Recorder;
use crate::session::{Intervention, RenderMode, SessionHost};
use crate::talk::asked;

/// How the program's own UI ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UiEnded {
    /// A viewer switched back, or the program exited: the stream resumes.
    Back,
    /// A stop: the session ends.
    Stopped,
    /// Its time limit (the session's time left): the session ends.
    TimedOut,
}

/// The terminal size the UI starts at (the holder's, once one types).
const SIZE: (u16, u16) = (120, 40);

/// Run the program's own UI (`spec`, resuming the conversation) in
/// `session` of `host`, until a viewer switches back, it exits, a stop or
/// `spec`'s time limit; interventions (takeovers, releases, switches)
/// recorded as they come.
pub async fn own_ui(
    spec: &HostSpec,
    (host, session): (&SessionHost, &str),
    recorder: &mut Recorder,
    interventions: &mut UnboundedReceiver<Intervention>,
    stop: &CancellationToken,
    show: &mut (dyn FnMut(&Progress) + Send),
) -> Result<UiEnded, AgentError> {
    let (terminal, process) = crate::pty::spawn(
        &spec.argv,
        &spec.cwd,
        &spec.env,
        SIZE,
        host.clone(),
        session,
    )?;
    let mut killer = process.killer();
    if let Err(why) = host.switch(session, RenderMode::NativeTui, Box::new(terminal), None) {
        killer.kill();
        return Err(AgentError::new(
            codes::SESSION_REFUSED,
            format!("the session cannot switch: {why:?}"),
        ));
    }
    show(&Progress::detail(
        ProgressKind::Said,
        "now in the program's own terminal UI: attach to use it (Ctrl-] m switches back)",
    ));
    let mut switches = host.on_switch(session);
    let mut ears = Ears::new(None, Some(recorder), None);
    let mut waiting = tokio::task::spawn_blocking(move || process.wait());
    let mut exited = false;
    let limit = tokio::time::sleep(spec.timeout);
    tokio::pin!(limit);
    let ended = loop {
        tokio::select! {
            () = &mut limit => break UiEnded::TimedOut,
            _ = &mut waiting => {
                exited = true;
                break UiEnded::Back;
            }
            () = asked(&mut switches) => break UiEnded::Back,
            () = stop.cancelled() => break UiEnded::Stopped,
            Some(x) = interventions.recv() => recorder.intervention(&x).await?,
            heard = ears.wake() => match ears.take(heard, Some(&mut *recorder), show).await? {
                Woke::Stop => break UiEnded::Stopped,
                Woke::Words(words) => {
                    for _ in words {
                        show(&Progress::detail(
                            ProgressKind::Said,
                            "recorded; its own terminal UI is typed into, not told",
                        ));
                    }
                }
            },
        }
    };
    // Never both at once: the UI has ended before anything else starts.
    killer.kill();
    if !exited {
        let _ = waiting.await;
    }
    while let Ok(x) = interventions.try_recv() {
        recorder.intervention(&x).await?;
    }
    Ok(ended)
}

/// The program's own terminal UI on conversation `id` (its own id, as
/// [`crate::reducer::resumable`] accepts it), from the entry the session's
/// stream ran; `None` for a program with no UI to switch to.
///
/// - Claude Code: the entry's command without its options (`claude -p …`
///   → `claude`), `--resume ID`.
/// - Codex's app server: the entry's program, `resume`, and of its
///   arguments (before `app-server` and after) only what configures Codex
///   (`-c`/`--config`, `--enable`, `--disable`: the model provider among
///   them) — never a sandbox, approval or bypass option; then its sandbox
///   as the stream's (`workspace-write`), approvals asked in the UI
///   (`on-request`: the UI takes no `untrusted`) — these flags win over
///   any `-c` setting of the same (tried on Codex 0.169: `/status` says
///   "Workspace (Ask for approval)" under `-c sandbox_mode=
///   "danger-full-access" -c approval_policy="never"`) — no shared
///   background server (nothing it starts outlives it), `-- ID`.
pub fn ui_argv(entry: &AgentEntry, id: &str) -> Option<Vec<String>> {
    if !crate::reducer::resumable(id) {
        return None;
    }
    let argv = &entry.argv;
    let mut ui: Vec<String> = match entry.kind {
        AgentKind::Claude => {
            let mut ui: Vec<String> = argv
                .iter()
                .take_while(|a| !a.starts_with('-'))
                .cloned()
                .collect();
            ui.push("--resume".to_owned());
            ui
        }
        AgentKind::Codex if entry.speaks_app_server() => {
            let at = argv.iter().position(|a| a == "app-server")?;
            let mut ui = argv[..1].to_vec();
            ui.extend(configuring(&argv[1..at]));
            ui.push("resume".to_owned());
            ui.extend(configuring(&argv[at + 1..]));
            ui.extend(
                [
                    "-s",
                    "workspace-write",
                    "-a",
                    "on-request",
                    "--no-daemon",
                    "--",
                ]
                .map(str::to_owned),
            );
            ui
        }
        _ => return None,
    };
    ui.push(id.to_owned());
    Some(ui)
}

/// Of Codex's app-server arguments, those that configure Codex itself,
/// with their values.
fn configuring(args: &[String]) -> Vec<String> {
    const TAKING: [&str; 4] = ["-c", "--config", "--enable", "--disable"];
    let mut kept = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if TAKING.contains(&arg.as_str()) {
            if let Some(value) = args.next() {
                kept.extend([arg.clone(), value.clone()]);
            }
        } else if TAKING
            .iter()
            .any(|t| t.starts_with("--") && arg.starts_with(&format!("{t}=")))
        {
            kept.push(arg.clone());
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: AgentKind, argv: &[&str]) -> AgentEntry {
        AgentEntry {
            kind,
            argv: argv.iter().map(|a| (*a).to_owned()).collect(),
            env: std::collections::BTreeMap::new(),
            env_from: Vec::new(),
            timeout: crate::child::DEFAULT_TIMEOUT,
            max_line: crate::child::DEFAULT_MAX_LINE,
        }
    }

    #[test]
    fn claude_codes_ui_is_its_command_resuming_the_conversation() {
        let claude = entry(AgentKind::Claude, &["/bin/claude", "-p", "--verbose"]);
        assert_eq!(
            ui_argv(&claude, "abc-123").unwrap(),
            ["/bin/claude", "--resume", "abc-123"]
        );
    }

    #[test]
    fn codexs_ui_keeps_what_configures_codex_and_drops_the_servers_options() {
        let server = "codex -c a=1 --dangerously-bypass-approvals-and-sandbox -s danger-full-access \
                      app-server --listen stdio:// -c model_provider=\"standin\" \
                      --enable=x --disable y --print-startup-config";
        let codex = entry(
            AgentKind::Codex,
            &server.split_whitespace().collect::<Vec<_>>(),
        );
        let ui = "codex -c a=1 resume -c model_provider=\"standin\" --enable=x --disable y \
                  -s workspace-write -a on-request --no-daemon -- 0b1c";
        assert_eq!(
            ui_argv(&codex, "0b1c").unwrap(),
            ui.split_whitespace().collect::<Vec<_>>()
        );
    }

    #[test]
    fn no_ui_for_an_unsafe_id_or_a_program_without_one() {
        let claude = entry(AgentKind::Claude, &["claude"]);
        for id in ["", "-rf", "../x", "a b", "a;b", &"a".repeat(65)] {
            assert_eq!(ui_argv(&claude, id), None, "{id:?}");
        }
        let exec = entry(AgentKind::Codex, &["codex", "exec", "--json"]);
        assert_eq!(ui_argv(&exec, "abc"), None);
        let acp = entry(AgentKind::Acp, &["agent"]);
        assert_eq!(ui_argv(&acp, "abc"), None);
    }
}
