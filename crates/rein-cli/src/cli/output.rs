//! Writing to the person's terminal or pipe: one rule for a failed write,
//! and the status line every command says through it.
//!
//! A closed output (`rein sessions list | head -0`) is not a bug: the
//! reader has all it wants. It becomes `output_closed`, which the `rein`
//! command ends on quietly with success, as ripgrep and other Unix tools do
//! on a broken pipe. Any other failed write is an internal error.

use std::io::Write;

use rein::wire::visible::visible;
use rein::wire::{AgentError, error::codes};

/// The error for a failed write to stdout or stderr.
pub fn output_error(err: std::io::Error) -> AgentError {
    if err.kind() == std::io::ErrorKind::BrokenPipe {
        AgentError::new(codes::OUTPUT_CLOSED, "the output was closed")
    } else {
        AgentError::new(codes::INTERNAL, format!("could not write output: {err}"))
    }
}

/// [`output_error`], for `map_err`.
pub(super) fn io_error(err: std::io::Error) -> AgentError {
    output_error(err)
}

pub(crate) use rein::wire::error::io_reason;

/// Print a status line. Everything said goes through [`visible`]: status
/// lines quote tool names, arguments and errors a model or provider wrote.
pub(super) fn say(info: &mut impl Write, text: &str) -> Result<(), AgentError> {
    writeln!(info, "{}", visible(text)).map_err(io_error)
}
