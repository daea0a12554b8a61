//! The person's lines: from a terminal (rustyline, with history) or any
//! reader (a pipe), read on a thread of their own ([`Asker`]) so the chat
//! can wait for a person and for other surfaces at once.
//!
//! Not here: what the chat does with a line (`chat`).

use std::io::{BufRead, Write};

use rein::wire::{AgentError, error::codes};

use super::output::output_error as io_error;

/// Where the person's lines come from.
pub trait Lines {
    /// Show `prompt` and read one line; `None` at the end of input.
    fn line(&mut self, prompt: &str, info: &mut dyn Write) -> Result<Option<String>, AgentError>;

    /// Read one line typed while a turn runs, without a prompt and without
    /// taking over the terminal (the answer streams meanwhile). Default:
    /// [`Lines::line`] with no prompt.
    fn typed(&mut self, info: &mut dyn Write) -> Result<Option<String>, AgentError> {
        self.line("", info)
    }
}

/// Lines from any reader (piped stdin, tests): the prompt is printed, one
/// line is read.
pub struct Plain<R>(pub R);

impl<R: BufRead> Lines for Plain<R> {
    fn line(&mut self, prompt: &str, info: &mut dyn Write) -> Result<Option<String>, AgentError> {
        write!(info, "{prompt}").map_err(io_error)?;
        info.flush().map_err(io_error)?;
        let mut line = String::new();
        if self.0.read_line(&mut line).map_err(io_error)? == 0 {
            writeln!(info).map_err(io_error)?;
            return Ok(None);
        }
        Ok(Some(line.trim_end_matches(['\n', '\r']).to_owned()))
    }
}

/// Lines from a terminal, with editing and history (rustyline).
pub struct Editor(rustyline::DefaultEditor);

impl Editor {
    /// An editor on the terminal.
    pub fn new() -> Result<Self, AgentError> {
        rustyline::DefaultEditor::new()
            .map(Editor)
            .map_err(|e| AgentError::new(codes::INTERNAL, format!("cannot use the terminal: {e}")))
    }
}

impl Lines for Editor {
    fn typed(&mut self, _info: &mut dyn Write) -> Result<Option<String>, AgentError> {
        // The terminal stays in its own line mode (it echoes and edits the
        // line) so what the model writes meanwhile is not disturbed.
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(0) => Ok(None),
            Ok(_) => Ok(Some(line.trim_end_matches(['\n', '\r']).to_owned())),
            Err(e) => Err(AgentError::new(
                codes::INTERNAL,
                format!("terminal input failed: {e}"),
            )),
        }
    }

    fn line(&mut self, prompt: &str, _info: &mut dyn Write) -> Result<Option<String>, AgentError> {
        match self.0.readline(prompt) {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = self.0.add_history_entry(line.as_str());
                }
                Ok(Some(line))
            }
            // Ctrl-D, or Ctrl-C at the prompt: leave.
            Err(
                rustyline::error::ReadlineError::Eof | rustyline::error::ReadlineError::Interrupted,
            ) => Ok(None),
            Err(e) => Err(AgentError::new(
                codes::INTERNAL,
                format!("terminal input failed: {e}"),
            )),
        }
    }
}

/// The person's lines, read on a thread of their own so the chat can wait
/// for a person and for other surfaces (the session's inbox) at once.
pub struct Asker {
    prompts: std::sync::mpsc::Sender<Ask>,
    answers: tokio::sync::mpsc::UnboundedReceiver<Result<Option<String>, AgentError>>,
    /// Answers still to come for prompts that were settled elsewhere.
    pub(super) stale: usize,
    /// A line typed during a turn is being read: the next answer is the
    /// person's next line, whatever is asked next.
    typing: bool,
    /// Commands typed while a turn ran, to run when it ends.
    queued: std::collections::VecDeque<String>,
}

/// What the reading thread is asked for.
enum Ask {
    /// A line after this prompt.
    Prompt(String),
    /// A line typed while a turn runs.
    Typed,
}

impl Asker {
    /// Read from `input` on its own thread; its prompts go to stderr.
    pub fn new(mut input: impl Lines + Send + 'static) -> Self {
        let (prompts, asked) = std::sync::mpsc::channel::<Ask>();
        let (answer, answers) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let mut info = std::io::stderr();
            for ask in asked {
                let line = match ask {
                    Ask::Prompt(prompt) => input.line(&prompt, &mut info),
                    Ask::Typed => input.typed(&mut info),
                };
                let more = matches!(line, Ok(Some(_)));
                if answer.send(line).is_err() || !more {
                    break;
                }
            }
        });
        Asker {
            prompts,
            answers,
            stale: 0,
            typing: false,
            queued: std::collections::VecDeque::new(),
        }
    }

    /// Show `prompt`; the answer is taken with [`Asker::answer`].
    pub(super) async fn ask(&mut self, prompt: &str) {
        // A prompt settled elsewhere still waits for its line: the person's
        // next Enter finishes it, and it is not taken as an answer.
        while self.stale > 0 {
            if self.answers.recv().await.is_none() {
                break;
            }
            self.stale -= 1;
        }
        if self.typing {
            // A line is already being read: the prompt is shown, and that
            // line is the answer to it.
            self.typing = false;
            let mut info = std::io::stderr();
            let _ = write!(info, "{prompt}");
            let _ = info.flush();
            return;
        }
        let _ = self.prompts.send(Ask::Prompt(prompt.to_owned()));
    }

    pub(super) async fn answer(&mut self) -> Result<Option<String>, AgentError> {
        self.answers.recv().await.unwrap_or(Ok(None))
    }

    /// Start reading a line the person may type while a turn runs (once:
    /// a read already under way is kept).
    pub(super) fn listen_while_running(&mut self) {
        if !self.typing && self.stale == 0 {
            self.typing = true;
            let _ = self.prompts.send(Ask::Typed);
        }
    }

    /// A line typed while the turn ran, when one is read; `Ok(None)` at the
    /// end of input.
    pub(super) async fn typed(&mut self) -> Result<Option<String>, AgentError> {
        let line = self.answer().await;
        self.typing = false;
        line
    }

    /// Whether a typed line is being read.
    pub(super) fn listening(&self) -> bool {
        self.typing
    }

    /// Show `prompt` and read one line; `None` at the end of input. A
    /// command typed while a turn ran comes first.
    pub async fn line(&mut self, prompt: &str) -> Result<Option<String>, AgentError> {
        if let Some(queued) = self.queued.pop_front() {
            let mut info = std::io::stderr();
            let _ = writeln!(info, "{prompt}{queued}");
            return Ok(Some(queued));
        }
        self.ask(prompt).await;
        self.answer().await
    }

    /// Keep a command typed while a turn ran for when it ends.
    pub(super) fn queue(&mut self, line: String) {
        self.queued.push_back(line);
    }
}
