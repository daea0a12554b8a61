//! A child's stdout framed into lines of at most a bound: a longer line is
//! skipped and said as such, an unterminated last line is a framing
//! failure — for the driver's reducers and the JSON-RPC peers alike.
//!
//! Not here: what the lines mean (the reducers, `jsonrpc`), the child
//! itself (`driver`).

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

pub(crate) enum Line {
    Text(Vec<u8>),
    Oversize,
    Unterminated,
    End,
}

/// stdout framed into bounded lines. A line being read is kept in the
/// struct, so [`Lines::next`] is cancel-safe (the driver selects on it).
pub(crate) struct Lines<R> {
    reader: Option<BufReader<R>>,
    max: usize,
    partial: Vec<u8>,
    over: bool,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    pub(crate) fn new(stream: Option<R>, max: usize) -> Self {
        Lines {
            reader: stream.map(|s| BufReader::with_capacity(64 * 1024, s)),
            max,
            partial: Vec::new(),
            over: false,
        }
    }

    /// The next line; a line past the bound is consumed and reported.
    pub(crate) async fn next(&mut self) -> Line {
        let Some(reader) = self.reader.as_mut() else {
            return Line::End;
        };
        loop {
            let buf = reader.fill_buf().await.unwrap_or_default();
            if buf.is_empty() {
                self.reader = None;
                let over = std::mem::take(&mut self.over);
                let partial = std::mem::take(&mut self.partial);
                return if over {
                    Line::Oversize
                } else if partial.is_empty() {
                    Line::End
                } else {
                    Line::Unterminated
                };
            }
            let (take, done) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (i, true),
                None => (buf.len(), false),
            };
            if !self.over {
                if self.partial.len() + take > self.max {
                    self.over = true;
                    self.partial = Vec::new();
                } else {
                    self.partial.extend_from_slice(&buf[..take]);
                }
            }
            reader.consume(take + usize::from(done));
            if done {
                if std::mem::take(&mut self.over) {
                    return Line::Oversize;
                }
                let mut line = std::mem::take(&mut self.partial);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Line::Text(line);
            }
        }
    }
}
