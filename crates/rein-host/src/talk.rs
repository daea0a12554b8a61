//! A hosted run's side of its talk with the program, as the loop moves
//! it: how words reach it (`heard`'s [`Ears`]), where it is in its turns
//! ([`Turns`]), each turn's answer handed on, and how the session ends
//! between turns (its idle limit, a stop) — nothing cut short.
//!
//! Not here: the rule of what words do (`turns`), taking the inbox and
//! steering (`heard`), the loop itself (`driver.rs`).

use std::pin::Pin;
use std::time::Duration;

use rein_wire::AgentError;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Sleep;

use crate::adapter::Adapter;
use crate::child::Ended;
use crate::heard::{Ears, Heard, Woke};
use crate::progress::{Progress, ProgressKind};
use crate::record::Recorder;
use crate::reducer::Step;
use crate::session::{RenderMode, Turning};
use crate::turns::{Route, Turns};

/// How long a CLI whose session ended between turns has to finish.
const FINISHING: Duration = Duration::from_secs(5);

/// What the loop does next.
pub(crate) enum Flow {
    /// Go on reading the program.
    Go,
    /// Leave the loop; the run ended so (`None`: as its turns say).
    End(Option<Ended>),
}

/// A hosted run's talk with its program.
pub(crate) struct Talk {
    /// Where the program is in its turns.
    pub(crate) turns: Turns,
    /// How words reach it, and what wakes the run to take them.
    pub(crate) ears: Ears,
    /// Each turn's answer as it closes, when a surface prints them.
    answers: Option<UnboundedSender<String>>,
    /// The session ends between turns: the program is finishing.
    leaving: bool,
    /// Its last turn is done and no other follows.
    last: bool,
    /// Viewers' requests to switch the session to the program's own UI
    /// (heard with [`asked`]).
    pub(crate) switches: Option<tokio::sync::mpsc::Receiver<RenderMode>>,
    /// The run ends to switch its session.
    switched: bool,
}

impl Talk {
    /// A run's talk: its turns, its ears, where answers go.
    pub(crate) fn new(
        turns: Turns,
        ears: Ears,
        answers: Option<UnboundedSender<String>>,
        switches: Option<tokio::sync::mpsc::Receiver<RenderMode>>,
    ) -> Talk {
        Talk {
            turns,
            ears,
            answers,
            leaving: false,
            last: false,
            switches,
            switched: false,
        }
    }

    /// Whether the run ended to switch its session to the program's own UI.
    pub(crate) fn switched(&self) -> bool {
        self.switched
    }

    /// Switch the session to the program's own UI: between turns only (a
    /// turn is never cut short; the host refused one asked meanwhile, and
    /// one that raced a turn's start is refused here); the stream ends as
    /// the session does between turns, its record left open.
    pub(crate) fn switch<A: Adapter>(
        &mut self,
        kind: &A,
        deadline: Pin<&mut Sleep>,
        show: &mut (dyn FnMut(&Progress) + Send),
    ) -> Flow {
        if !self.turns.waiting() || self.leaving {
            show(&Progress::detail(
                ProgressKind::Said,
                "not switched: a turn is running",
            ));
            return Flow::Go;
        }
        show(&Progress::detail(
            ProgressKind::Said,
            "switching to the program's own terminal UI",
        ));
        self.switched = true;
        self.leave(kind, deadline)
    }

    /// What a line said now does, for the session host.
    pub(crate) fn turning(&self) -> Turning {
        self.turns
            .turning(self.ears.steers(), self.last || self.leaving)
    }

    /// Whether the session is ending between turns (a stop is no longer
    /// waited for: it ends anyway).
    pub(crate) fn leaving(&self) -> bool {
        self.leaving
    }

    /// The time limit struck: a program that did not finish once its
    /// session ended was stopped; any other ran out of time.
    pub(crate) fn timed_out(&self) -> Ended {
        if self.leaving {
            Ended::Stopped
        } else {
            Ended::Timeout
        }
    }

    /// A stop: a running turn is cut short; between turns the session
    /// ends as it finished.
    pub(crate) fn stop<A: Adapter>(&mut self, kind: &A, deadline: Pin<&mut Sleep>) -> Flow {
        if !self.turns.waiting() {
            return Flow::End(Some(Ended::Stopped));
        }
        self.leave(kind, deadline)
    }

    /// The program waited its idle limit for a turn: the session ends.
    pub(crate) fn idled<A: Adapter>(
        &mut self,
        kind: &A,
        deadline: Pin<&mut Sleep>,
        show: &mut (dyn FnMut(&Progress) + Send),
    ) -> Flow {
        let secs = self.turns.limit().map_or(0, |l| l.as_secs());
        show(&Progress::detail(
            ProgressKind::Said,
            &format!("no turn for {secs} s: the session ends"),
        ));
        self.leave(kind, deadline)
    }

    /// The session ends between turns: no more turns; a CLI has its input
    /// closed and is read to its end (for a few seconds at most), a server
    /// is ended at once.
    fn leave<A: Adapter>(&mut self, kind: &A, deadline: Pin<&mut Sleep>) -> Flow {
        self.leaving = true;
        self.turns.end();
        if !kind.exits_when_done() {
            return Flow::End(None);
        }
        self.ears.turn_closed();
        deadline.reset(tokio::time::Instant::now() + FINISHING);
        Flow::Go
    }

    /// Something woke the run's ears: the inbox is taken; a stop ends the
    /// turn (or the session, between turns), words go where they belong.
    pub(crate) async fn heard<A: Adapter>(
        &mut self,
        kind: &mut A,
        heard: Heard,
        deadline: Pin<&mut Sleep>,
        mut recorder: Option<&mut Recorder>,
        show: &mut (dyn FnMut(&Progress) + Send),
    ) -> Result<Flow, AgentError> {
        let woke = self.ears.take(heard, recorder.as_deref_mut(), show).await;
        match woke? {
            Woke::Stop => Ok(self.stop(kind, deadline)),
            Woke::Words(words) => {
                self.said(kind, words, recorder, show).await?;
                Ok(Flow::Go)
            }
        }
    }

    /// Words a person said (recorded): steered into the running turn,
    /// queued for the next, the next turn's request, or unheard.
    pub(crate) async fn said<A: Adapter>(
        &mut self,
        kind: &mut A,
        words: Vec<String>,
        recorder: Option<&mut Recorder>,
        show: &mut (dyn FnMut(&Progress) + Send),
    ) -> Result<(), AgentError> {
        if words.is_empty() {
            return Ok(());
        }
        match self.turns.hear(words, self.ears.steers()) {
            Route::Steer(words) => self.ears.deliver(words, show).await,
            Route::Queued(waiting) => show(&Progress::detail(
                ProgressKind::Said,
                &format!("queued: it starts the program's next turn ({waiting} waiting)"),
            )),
            Route::Start(prompt) => self.start(kind, prompt, recorder, show).await?,
            Route::Unheard(words) => {
                for _ in words {
                    show(&Progress::detail(
                        ProgressKind::Said,
                        "recorded; the program hears no words now",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Start the program's next turn with `prompt`, recorded first.
    async fn start<A: Adapter>(
        &mut self,
        kind: &mut A,
        prompt: String,
        recorder: Option<&mut Recorder>,
        show: &mut (dyn FnMut(&Progress) + Send),
    ) -> Result<(), AgentError> {
        let reply = self.turns.started();
        if let Some(recorder) = recorder {
            recorder.next_turn(&prompt, reply).await?;
        }
        kind.start_turn(prompt, self.ears.mouth()).await?;
        show(&Progress::detail(
            ProgressKind::Said,
            "it starts the program's next turn",
        ));
        Ok(())
    }

    /// What the reducer made of the program's latest message, before it
    /// is shown and recorded: the program went on by itself while it
    /// waited (a turn of its own, recorded as one), and the answer of a
    /// turn that closed, handed on. The closed turn's reply, if one did.
    pub(crate) async fn before(
        &mut self,
        steps: &[Step],
        recorder: Option<&mut Recorder>,
    ) -> Result<Option<Option<String>>, AgentError> {
        let went_on = steps
            .iter()
            .any(|s| !matches!(s, Step::Progress(p) if p.kind == ProgressKind::Activity));
        if self.turns.waiting() && went_on {
            let (prompt, reply) = self.turns.went_on();
            if let Some(recorder) = recorder {
                recorder.next_turn(&prompt, reply).await?;
            }
        }
        let reply = steps.iter().find_map(|s| match s {
            Step::TurnClosed(turn) => Some(turn.text.clone()),
            _ => None,
        });
        if let (Some(Some(text)), Some(answers)) = (&reply, &self.answers) {
            let _ = answers.send(text.clone());
        }
        Ok(reply)
    }

    /// A turn closed with `reply` (its steps recorded). In a run that
    /// stays and has not failed, words queued start the next turn, or the
    /// program waits for one; otherwise a program that reads words on its
    /// input has it closed, so that it finishes.
    pub(crate) async fn closed<A: Adapter>(
        &mut self,
        kind: &mut A,
        reply: Option<String>,
        recorder: Option<&mut Recorder>,
        show: &mut (dyn FnMut(&Progress) + Send),
    ) -> Result<(), AgentError> {
        if self.turns.stays() && kind.reducer().outcome().failure.is_none() {
            if let Some(prompt) = self.turns.closed(reply) {
                self.start(kind, prompt, recorder, show).await?;
            }
            return Ok(());
        }
        self.last = true;
        self.turns.end();
        self.ears.turn_closed();
        Ok(())
    }
}

/// A viewer asked to switch the session (never, when it cannot).
pub(crate) async fn asked(switches: &mut Option<tokio::sync::mpsc::Receiver<RenderMode>>) {
    let asked = match switches.as_mut() {
        Some(switches) => switches.recv().await,
        None => None,
    };
    if asked.is_none() {
        *switches = None;
        std::future::pending::<()>().await;
    }
}
