//! `rein wire decode`: decode a captured SSE body and print what rein sees.
//!
//! Prints each normalised [`StreamEvent`](rein::wire::StreamEvent) as one
//! JSON line, then one `summary` line with the assembled message (text,
//! tool calls with parsed arguments, usage, stop reason). A stream that
//! fails to decode, carries a provider error or a malformed tool call
//! prints an `error` line with its code and makes the command fail.

use std::io::Write;

use bytes::Bytes;
use futures::StreamExt;
use rein::gateway::{WireApi, decode_stream, sse::SseLimits};
use rein::wire::{AgentError, Assembler};
use serde_json::{Value, json};

/// The body is fed to the decoder in chunks of this size, as a network
/// would deliver it.
const CHUNK: usize = 16 * 1024;

/// Decode `body` as `api` and write JSON lines to `out`. Returns the first
/// problem found, after everything has been printed.
pub async fn decode_to(
    api: WireApi,
    body: Vec<u8>,
    out: &mut impl Write,
) -> Result<(), AgentError> {
    let body = Bytes::from(body);
    let chunks: Vec<Result<Bytes, AgentError>> = (0..body.len())
        .step_by(CHUNK)
        .map(|at| Ok(body.slice(at..(at + CHUNK).min(body.len()))))
        .collect();
    let mut events = Box::pin(decode_stream(
        api,
        futures::stream::iter(chunks),
        SseLimits::default(),
    ));
    let mut assembler = Assembler::new();
    let mut stream_error = None;
    while let Some(item) = events.next().await {
        match item {
            Ok(event) => {
                assembler.push(&event);
                write_line(out, &serde_json::to_value(&event).unwrap_or(Value::Null))?;
            }
            Err(err) => {
                stream_error = Some(err);
                break;
            }
        }
    }
    let message = assembler.finish();
    let calls: Vec<Value> = message
        .tool_calls
        .iter()
        .map(|c| {
            let mut v =
                json!({"index": c.index, "id": c.id, "name": c.name, "arguments": c.arguments});
            if let Some(err) = &c.error {
                v["error"] = json!({"code": err.code, "message": err.message});
            }
            v
        })
        .collect();
    write_line(
        out,
        &json!({
            "type": "summary",
            "id": message.id,
            "model": message.model,
            "text": message.text(),
            "tool_calls": calls,
            "usage": message.usage,
            "stop_reason": message.stop_reason,
        }),
    )?;
    let problem = stream_error.or_else(|| message.first_error().cloned());
    if let Some(err) = &problem {
        write_line(
            out,
            &json!({"type": "error", "code": err.code, "message": err.message, "retryable": err.retryable}),
        )?;
    }
    problem.map_or(Ok(()), Err)
}

fn write_line(out: &mut impl Write, value: &Value) -> Result<(), AgentError> {
    writeln!(out, "{value}").map_err(super::output::output_error)
}
