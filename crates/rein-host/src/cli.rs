//! A CLI that prints one JSON line per event — Claude Code's
//! `stream-json`, `codex exec --json` — as a hosted kind: stdout framed
//! into lines of at most [`HostSpec::max_line`] bytes (a longer line is
//! skipped and said to the reducer, an unterminated last line is a framing
//! failure) fed to the CLI's reducer; its permission questions arriving on
//! a channel beside stdout (Claude Code's permission tool, `asks`); its
//! request, and words said mid-run, written to its stdin when it takes
//! them there (`heard`).
//!
//! Not here: the loop every kind shares (`driver.rs`), what the lines mean
//! (`claude`, `codex`).

use tokio::process::{Child, ChildStdout};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use rein_wire::AgentError;

use crate::asks::{Asked, Asks};
use crate::child::{Driven, HostSpec};
use crate::driver::{Adapter, Next, Taking, drive_with};
use crate::heard::Mouth;
use crate::lines::{Line, Lines};
use crate::person::Verdict;
use crate::progress::Progress;
use crate::record::Recorder;
use crate::reducer::Reducer;
use crate::session::SessionHost;

/// What of a person's a hosted CLI's run takes part in, beyond its output.
#[derive(Default)]
pub struct Joined {
    /// Viewers watch it: a session of this host (`stream` mode) that
    /// closing stops the run.
    pub view: Option<(SessionHost, String)>,
    /// Its permission questions go to a person (`asks`).
    pub asks: Option<Asks>,
    /// The program takes its request, and words said mid-run, as messages
    /// on its stdin (Claude Code's `--input-format stream-json`, `heard`):
    /// this is the request (empty: none yet, a resumed conversation that
    /// waits for its first turn). `None`: the request is in its arguments,
    /// and words said mid-run are recorded but not heard.
    pub hears: Option<String>,
    /// The program stays after a turn for the next, started by a person's
    /// words, at most this long idle (`Taking::stays`); it needs `hears`.
    pub stays: Option<crate::driver::Stays>,
}

/// Run `spec`, feeding `reducer`, showing progress through `show` and
/// recording through `recorder`; `stop` ends it early, and so does a stop
/// posted to its session. What a person takes part in is `joined`.
pub async fn drive(
    spec: &HostSpec,
    reducer: &mut dyn Reducer,
    recorder: Option<&mut Recorder>,
    show: &mut (dyn FnMut(&Progress) + Send),
    stop: CancellationToken,
    joined: Joined,
) -> Result<Driven, AgentError> {
    let Joined {
        view,
        asks,
        hears,
        stays,
    } = joined;
    let (questions, person) = match asks {
        Some(Asks { questions, person }) => (Some(questions), Some(person)),
        None => (None, None),
    };
    let mut kind = Printed {
        reducer,
        max_line: spec.max_line,
        lines: Lines::new(None, spec.max_line),
        questions,
        hears,
    };
    drive_with(
        &mut kind,
        spec,
        recorder,
        show,
        stop,
        Taking {
            view,
            person,
            stays,
        },
    )
    .await
}

/// A CLI's run as the loop drives it.
struct Printed<'r> {
    reducer: &'r mut dyn Reducer,
    max_line: usize,
    lines: Lines<ChildStdout>,
    /// Its permission questions; `None` once their channel closed.
    questions: Option<mpsc::Receiver<Asked>>,
    /// Its request, when it takes it (and words) on stdin.
    hears: Option<String>,
}

impl Adapter for Printed<'_> {
    type Ticket = oneshot::Sender<bool>;

    fn stdin(&self) -> bool {
        self.hears.is_some()
    }

    fn hears(&self) -> bool {
        self.hears.is_some()
    }

    fn exits_when_done(&self) -> bool {
        true
    }

    /// A program that takes its request on stdin takes the next one there.
    fn takes_turns(&self) -> bool {
        self.hears.is_some()
    }

    async fn start_turn(
        &mut self,
        prompt: String,
        mouth: &mut Option<Mouth>,
    ) -> Result<(), AgentError> {
        match mouth {
            Some(mouth) => mouth.ask(&prompt).await,
            None => Err(AgentError::new(
                rein_wire::error::codes::HOSTED_AGENT_FAILED,
                "the program's input is closed: it takes no more turns",
            )),
        }
    }

    async fn start(&mut self, child: &mut Child) -> Result<Option<Mouth>, AgentError> {
        self.lines = Lines::new(child.stdout.take(), self.max_line);
        let Some(request) = &self.hears else {
            return Ok(None);
        };
        let Some(stdin) = child.stdin.take() else {
            return Ok(None);
        };
        let mut mouth = Mouth::Stdin(stdin);
        // An empty request: a conversation resumed waits for its first turn.
        if !request.is_empty() {
            mouth.ask(request).await?;
        }
        Ok(Some(mouth))
    }

    async fn next(&mut self) -> Next<Self::Ticket> {
        loop {
            let line = tokio::select! {
                line = self.lines.next() => line,
                asked = next_question(&mut self.questions) => match asked {
                    Some(Asked { question, reply }) => return Next::Asks(question, reply),
                    None => {
                        self.questions = None;
                        continue;
                    }
                },
            };
            return match line {
                Line::Text(bytes) => {
                    self.reducer.feed(&bytes);
                    Next::Fed { words: None }
                }
                Line::Oversize => {
                    self.reducer.oversize(self.max_line);
                    Next::Fed { words: None }
                }
                Line::Unterminated => {
                    self.reducer
                        .framing_error("the last stdout line has no newline");
                    Next::Fed { words: None }
                }
                Line::End => {
                    self.reducer.stream_ended();
                    Next::Over
                }
            };
        }
    }

    fn answer(&mut self, reply: Self::Ticket, verdict: Verdict) {
        let _ = reply.send(verdict == Verdict::Allow);
    }

    fn reducer(&mut self) -> &mut dyn Reducer {
        self.reducer
    }
}

/// The run's next permission question; never, for a run asked none.
async fn next_question(questions: &mut Option<mpsc::Receiver<Asked>>) -> Option<Asked> {
    match questions {
        Some(questions) => questions.recv().await,
        None => std::future::pending().await,
    }
}
