//! `rein acp`: rein served as an ACP agent on stdio (an editor starts it),
//! and the terminal's person for `rein agents run` (asked before a hosted
//! ACP agent's or Claude Code's call runs).
//!
//! Each ACP session is a conversation with the file tools in the session's
//! working directory, recorded like a chat. Calls that change files are
//! asked through the editor (`session/request_permission`).
//!
//! Not here: the protocol (`rein-host`).

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use rein::host::acp_serve::{AcpServe, OpenConversation};
use rein::host::person::{Answer, Person, Question};
use rein::sessions::Store;
use rein::wire::AgentError;

use super::chat::ProviderArgs;

/// Options of `rein acp`.
#[derive(Debug, Clone, clap::Args)]
pub struct AcpOptions {
    /// The model provider.
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// The agent each session runs (`[agents.NAME]`; default: the default
    /// agent of the folder the editor opens).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Where rein's config lives (set by `rein` from `--home`).
    #[arg(skip)]
    pub home: Option<PathBuf>,
}

/// Serve until the editor closes stdin.
pub async fn serve(options: AcpOptions, store: Arc<dyn Store>) -> Result<(), AgentError> {
    // Nothing is served without a provider.
    options.provider.resolve("acp")?;
    let open: OpenConversation = Arc::new(move |cwd: PathBuf| {
        let store = store.clone();
        let options = options.clone();
        Box::pin(async move {
            // Each folder the editor opens has its own project config.
            let root = super::session_root::absolute(Some(&cwd))?;
            let surface = rein::compose::for_surface(
                rein::compose::SurfaceWanted {
                    home: options.home.clone(),
                    root: &root,
                    name: options.agent.as_deref(),
                    flags: options.provider.spec(),
                    verb: "acp",
                    default_instructions: "You are a helpful assistant working in the person's project folder, inside their editor. Use the tools to look at files before answering questions about them. Answer concisely.",
                },
                &store,
                // Stdout is the protocol: nothing else is written there.
                &mut std::io::sink(),
            )
            .await?;
            let metadata =
                serde_json::json!({"surface": "acp", "root": root.display().to_string()});
            surface.agent.open_session(store, None, metadata).await
        })
    });
    AcpServe::new(open).serve_stdio().await
}

/// The person at this terminal, asked on stderr, answering on stdin. The
/// line is read on a thread of its own, not the runtime's blocking pool: a
/// question decided elsewhere leaves that read waiting, and the process
/// must still be able to end.
pub struct TerminalPerson;

impl Person for TerminalPerson {
    fn ask(&self, question: Question) -> futures::future::BoxFuture<'static, Option<Answer>> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let _ = tx.send(read_answer(&question));
        });
        Box::pin(async move { rx.await.ok().flatten() })
    }
}

/// The most lines of what a question shows before `d` shows the rest.
const SHOWN_LINES: usize = 40;

fn read_answer(question: &Question) -> Option<Answer> {
    let mut err = std::io::stderr();
    // Exactly what runs, made visible (the agent wrote it): never its own
    // description alone.
    let shown = question.preview();
    let text = rein::wire::visible::visible(&shown.text).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let _ = writeln!(err, "[rein] the agent asks to run:");
    for line in lines.iter().take(SHOWN_LINES) {
        let _ = writeln!(err, "    {line}");
    }
    let hidden = lines.len().saturating_sub(SHOWN_LINES);
    let mut prompt = String::from("[rein] allow once? [y/N");
    if hidden > 0 || shown.truncated {
        let _ = writeln!(err, "    … {hidden} more lines");
        prompt.push_str("/d = show all");
    }
    prompt.push_str("] ");
    let stdin = std::io::stdin();
    let mut line = String::new();
    loop {
        let _ = write!(err, "{prompt}");
        let _ = err.flush();
        line.clear();
        if stdin.lock().read_line(&mut line).ok()? == 0 {
            // Nobody can answer here: say where it can be, and what
            // happens when nobody does.
            let _ = writeln!(
                err,
                "\n[rein] no answer here (the input is closed): `rein approve` from another terminal decides it; if nobody does, it is refused at the run's time limit"
            );
            return None;
        }
        if !matches!(line.trim(), "d" | "D") {
            break;
        }
        for shown_line in &lines {
            let _ = writeln!(err, "    {shown_line}");
        }
        if shown.truncated {
            let _ = writeln!(err, "    … cut at {} bytes", rein::wire::MAX_PREVIEW_BYTES);
        }
    }
    let by = if stdin.is_terminal() {
        "terminal"
    } else {
        "stdin"
    };
    Some(Answer {
        allow: rein::approvals::Answer::is_yes(&line),
        surface: rein::approvals::Surface::product(by, "person"),
    })
}

/// A Claude run's questions, when rein asks them, and the permission
/// server that hears them for the run's length.
pub(crate) type Asking = (
    Option<rein::host::asks::Asks>,
    Option<rein::host::claude::permission::PermissionServer>,
);

/// A Claude run whose questions rein asks: a permission server for the
/// run's length, named in its arguments, its questions put to this
/// terminal (and decided from any surface).
pub(crate) async fn asking_here(
    entry: &rein::host::config::AgentEntry,
    cwd: &str,
    spec: &mut rein::host::HostSpec,
    prompt_last: bool,
) -> Result<Asking, AgentError> {
    if !entry.asks_rein() {
        return Ok((None, None));
    }
    let person = Arc::new(TerminalPerson);
    let (asks, server) =
        rein::host::claude::permission::asking(person, cwd, &mut spec.argv, prompt_last).await?;
    Ok((Some(asks), Some(server)))
}
