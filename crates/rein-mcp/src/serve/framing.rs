//! The stdio framing in front of rmcp when rein serves MCP: every line the
//! client sends is checked before rmcp sees it. A line that is not JSON,
//! or longer than [`MAX_LINE`], is answered with JSON-RPC's parse error
//! (`-32700`, id `null`) and never reaches rmcp, which would drop it
//! silently and leave the client waiting. What rmcp writes and the errors
//! written here go out through one writer, a whole line at a time, so they
//! never interleave.
//!
//! Not here: the protocol (rmcp), what a call does (`serve`).

use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};
use tokio::sync::mpsc;

/// The longest line a client may send (bytes).
pub(crate) const MAX_LINE: usize = 8 * 1024 * 1024;

/// Room in the pipes between the framing and rmcp.
const PIPE: usize = 256 * 1024;

/// The parse error a bad line gets.
const PARSE_ERROR: &str = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: a line that is not one JSON value, or longer than 8 MiB"}}"#;

/// Frame `input` and `output` for rmcp: the pair rmcp reads and writes.
pub(crate) fn framed(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> (DuplexStream, DuplexStream) {
    let (to_rmcp, rmcp_reads) = tokio::io::duplex(PIPE);
    let (rmcp_writes, from_rmcp) = tokio::io::duplex(PIPE);
    let (errors, errors_out) = mpsc::channel::<()>(64);
    tokio::spawn(read_lines(input, to_rmcp, errors));
    tokio::spawn(write_lines(from_rmcp, output, errors_out));
    (rmcp_reads, rmcp_writes)
}

/// Pass each good line on; report each bad one.
async fn read_lines(
    input: impl AsyncRead + Unpin,
    mut to_rmcp: DuplexStream,
    errors: mpsc::Sender<()>,
) {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let Ok(read) = (&mut input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
        else {
            return;
        };
        if read == 0 {
            return;
        }
        if line.last() != Some(&b'\n') && line.len() > MAX_LINE {
            // Over-long: the rest of it, up to its newline, is passed over.
            let mut rest = Vec::new();
            loop {
                rest.clear();
                match (&mut input)
                    .take(64 * 1024)
                    .read_until(b'\n', &mut rest)
                    .await
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) if rest.last() == Some(&b'\n') => break,
                    Ok(_) => {}
                }
            }
            if errors.send(()).await.is_err() {
                return;
            }
            continue;
        }
        let body = line.trim_ascii();
        if body.is_empty() {
            continue;
        }
        if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err() {
            if errors.send(()).await.is_err() {
                return;
            }
            continue;
        }
        if to_rmcp.write_all(body).await.is_err() || to_rmcp.write_all(b"\n").await.is_err() {
            return;
        }
    }
}

/// Write rmcp's lines and the parse errors, whole lines only.
async fn write_lines(
    from_rmcp: DuplexStream,
    mut output: impl AsyncWrite + Unpin,
    mut errors: mpsc::Receiver<()>,
) {
    let mut from_rmcp = BufReader::new(from_rmcp);
    let mut line = Vec::new();
    loop {
        tokio::select! {
            read = from_rmcp.read_until(b'\n', &mut line) => {
                match read {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                            return;
                        }
                        line.clear();
                    }
                }
            }
            Some(()) = errors.recv(), if line.is_empty() => {
                let error = format!("{PARSE_ERROR}\n");
                if output.write_all(error.as_bytes()).await.is_err() || output.flush().await.is_err() {
                    return;
                }
            }
        }
    }
}
