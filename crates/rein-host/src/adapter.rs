//! What one kind of hosted program is to the loop that drives it
//! (`driver.rs`): how it is started and asked, what it said next, how it
//! hears a person's verdict and takes its next turn. A new hosted kind is
//! one new file with one [`Adapter`] (see the trait's example).
//!
//! Not here: the loop (`driver.rs`), the process (`child.rs`), what a
//! message means (the reducers).

use std::future::Future;

use rein_wire::AgentError;
use tokio::process::Child;

use crate::heard::Mouth;
use crate::person::{Question, Verdict};
use crate::reducer::Reducer;
use crate::session::RenderMode;

/// What a hosted program said next, as its adapter read it.
pub enum Next<T> {
    /// A message, fed to the reducer; `words` are the answer's words in
    /// it, for a view that renders them as they come (`RenderMode::Acp`).
    Fed {
        /// The answer's words, when the view shows them as they come.
        words: Option<String>,
    },
    /// It asks a person before a call runs; `ticket` is how the verdict
    /// goes back ([`Adapter::answer`]).
    Asks(Question, T),
    /// From now on it hears words said mid-run through this mouth.
    Hears(Mouth),
    /// Its turn is done and its answer fed; it can take another
    /// ([`Adapter::start_turn`]) in a run that stays, else the run is over.
    TurnOver,
    /// It is done: its answer (or its stream's end) was fed.
    Over,
}

/// One kind of hosted program, as the one loop drives it.
///
/// The loop starts the program ([`Adapter::stdin`] says whether its stdin
/// is piped), gives it to [`Adapter::start`], then reads
/// [`Adapter::next`] until it is [`Next::Over`], a stop, the time limit or
/// a loop; everything else (the session, the inbox, the person, the
/// record, the end) is the loop's.
///
/// A kind whose program prints one JSON line per event that a reducer of
/// rein's reads — here a stand-in that prints Claude Code's stream —
/// is this much:
///
/// ```
/// use rein_host::driver::{Adapter, Next, drive_with, Taking};
/// use rein_host::heard::Mouth;
/// use rein_host::person::{Question, Verdict};
/// use rein_host::{ClaudeStream, Ended, HostSpec, Reducer};
/// use tokio::io::{AsyncBufReadExt, BufReader, Lines};
/// use tokio::process::{Child, ChildStdout};
///
/// struct Printed {
///     reducer: ClaudeStream,
///     lines: Option<Lines<BufReader<ChildStdout>>>,
/// }
///
/// impl Adapter for Printed {
///     type Ticket = ();
///     fn stdin(&self) -> bool {
///         false
///     }
///     async fn start(&mut self, child: &mut Child) -> Result<Option<Mouth>, rein_wire::AgentError> {
///         self.lines = child.stdout.take().map(|out| BufReader::new(out).lines());
///         Ok(None)
///     }
///     async fn next(&mut self) -> Next<()> {
///         match self.lines.as_mut() {
///             Some(lines) => match lines.next_line().await {
///                 Ok(Some(line)) => {
///                     self.reducer.feed(line.as_bytes());
///                     Next::Fed { words: None }
///                 }
///                 _ => {
///                     self.reducer.stream_ended();
///                     Next::Over
///                 }
///             },
///             None => Next::Over,
///         }
///     }
///     fn answer(&mut self, (): (), _: Verdict) {}
///     fn reducer(&mut self) -> &mut dyn Reducer {
///         &mut self.reducer
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let printed = r#"printf '%s\n' '{"type":"system","subtype":"init","session_id":"s","model":"m"}' '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s","num_turns":1,"total_cost_usd":0,"usage":{}}'"#;
/// let mut spec = HostSpec::new(vec!["sh".into(), "-c".into(), printed.into()], ".".into());
/// spec = spec.env_from(["PATH"]);
/// let mut kind = Printed { reducer: ClaudeStream::new(""), lines: None };
/// let stop = tokio_util::sync::CancellationToken::new();
/// let driven = drive_with(&mut kind, &spec, None, &mut |_| {}, stop, Taking::default())
///     .await
///     .unwrap();
/// assert_eq!(driven.ended, Ended::Finished);
/// assert_eq!(driven.outcome.text.as_deref(), Some("done"));
/// # }
/// ```
pub trait Adapter: Send {
    /// How a question's verdict finds its way back to the program.
    type Ticket: Send;

    /// How viewers see the run: its progress and answers as a stream of
    /// lines (the default), or an agent's words as they come.
    fn mode(&self) -> RenderMode {
        RenderMode::Stream
    }

    /// Whether the program's stdin is piped to it (a protocol, or words
    /// said mid-run); otherwise it reads nothing.
    fn stdin(&self) -> bool;

    /// Whether viewers' typed lines go to the program as words.
    fn hears(&self) -> bool {
        false
    }

    /// Whether the program ends on its own once done (a CLI); otherwise
    /// (a server speaking a protocol) it is ended when its answer came.
    fn exits_when_done(&self) -> bool {
        false
    }

    /// The program is started: take its stdio, give it its request. A
    /// mouth returned hears words said mid-run from the first.
    fn start(
        &mut self,
        child: &mut Child,
    ) -> impl Future<Output = Result<Option<Mouth>, AgentError>> + Send;

    /// What the program says next. Cancel-safe: the loop selects on it
    /// beside the inbox, the time limit and the stop.
    fn next(&mut self) -> impl Future<Output = Next<Self::Ticket>> + Send;

    /// Whether the program takes another turn once one is done, so that a
    /// run may stay open for it ([`Taking::stays`](crate::driver::Taking::stays)).
    fn takes_turns(&self) -> bool {
        false
    }

    /// Start the program's next turn with `prompt` (its last turn is
    /// done). `mouth` is how words reach it: a program that takes its
    /// requests as words says it there; one whose turns each hear words
    /// their own way leaves it empty until [`Next::Hears`].
    fn start_turn(
        &mut self,
        prompt: String,
        mouth: &mut Option<Mouth>,
    ) -> impl Future<Output = Result<(), AgentError>> + Send {
        let _ = (prompt, mouth);
        async {
            Err(AgentError::new(
                rein_wire::error::codes::HOSTED_AGENT_FAILED,
                "this program takes one request",
            ))
        }
    }

    /// Tell the program a person's verdict on its question.
    fn answer(&mut self, ticket: Self::Ticket, verdict: Verdict);

    /// The reducer its messages feed.
    fn reducer(&mut self) -> &mut dyn Reducer;
}
