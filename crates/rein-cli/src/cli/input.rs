//! The person's lines: from a terminal (rustyline, with history) or any
//! reader (a pipe), read on a thread of their own ([`Asker`]) so the chat
//! can wait for a person and for other surfaces at once.
//!
//! Not here: what the chat does with a line (`chat`).

use std::io::{BufRead, Write};

use rein_wire::{AgentError, error::codes};

use super::output::output_error as io_error;

/// Where the person's lines come from.
pub trait Lines {
    /// Show `prompt` and read one line; `None` at the end of input.
    fn line(&mut self, prompt: &str, info: &mut dyn Write) -> Result<Option<String>, AgentError>;
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
    prompts: std::sync::mpsc::Sender<String>,
    answers: tokio::sync::mpsc::UnboundedReceiver<Result<Option<String>, AgentError>>,
    /// Answers still to come for prompts that were settled elsewhere.
    pub(super) stale: usize,
}

impl Asker {
    /// Read from `input` on its own thread; its prompts go to stderr.
    pub fn new(mut input: impl Lines + Send + 'static) -> Self {
        let (prompts, asked) = std::sync::mpsc::channel::<String>();
        let (answer, answers) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let mut info = std::io::stderr();
            for prompt in asked {
                let line = input.line(&prompt, &mut info);
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
        let _ = self.prompts.send(prompt.to_owned());
    }

    pub(super) async fn answer(&mut self) -> Result<Option<String>, AgentError> {
        self.answers.recv().await.unwrap_or(Ok(None))
    }

    /// Show `prompt` and read one line; `None` at the end of input.
    pub async fn line(&mut self, prompt: &str) -> Result<Option<String>, AgentError> {
        self.ask(prompt).await;
        self.answer().await
    }
}
