//! What the fuzz targets share: cutting the input into the chunks a network
//! would deliver, and driving a decoder over them.
//!
//! Each target in `fuzz_targets/` feeds one parser of outside input —
//! provider streams, hosted agents' output, files a person writes, HTTP
//! requests — and fails only on a panic, a hang or a broken invariant it
//! states. `cargo xtask fuzz` runs them (seeded from the wire captures and
//! the repository's own files); a crash found becomes a regression test in
//! the crate that owns the parser.
//!
//! Not here: the parsers themselves, or property tests with fixed seeds
//! (those live beside their code and run with `cargo test`).

use bytes::Bytes;
use futures::StreamExt;
use rein_gateway::WireApi;
use rein_gateway::sse::SseLimits;
use rein_host::Reducer;
use rein_wire::{AgentError, StreamEvent};

/// Split `data` into chunks: the first byte picks the chunk size (1 to
/// 256), so the fuzzer tries every place a frame can be cut.
pub fn chunks(data: &[u8]) -> Vec<Result<Bytes, AgentError>> {
    let Some((&size, rest)) = data.split_first() else {
        return Vec::new();
    };
    rest.chunks(usize::from(size) + 1)
        .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
        .collect()
}

/// Small bounds, so that overlong lines are reached too.
pub fn limits() -> SseLimits {
    SseLimits {
        max_line_bytes: 4096,
    }
}

/// Decode `data` as a stream of `api`, checking that the stream ends after
/// at most one error and that nothing follows a terminal event.
pub fn decode(api: WireApi, data: &[u8]) {
    let stream = rein_gateway::decode_stream(api, futures::stream::iter(chunks(data)), limits());
    let items: Vec<Result<StreamEvent, AgentError>> = futures::executor::block_on(stream.collect());
    let errors = items.iter().filter(|i| i.is_err()).count();
    assert!(errors <= 1, "{errors} errors in one stream");
    if errors == 1 {
        assert!(
            items.last().is_some_and(Result::is_err),
            "an error was not last"
        );
    }
}

/// Feed `data` to a hosted agent's reducer line by line (the last line
/// unterminated is a framing error, as the framer reports it), draining
/// as the driver does.
pub fn reduce(mut reducer: impl Reducer, data: &[u8]) {
    let mut lines = data.split(|b| *b == b'\n').peekable();
    while let Some(line) = lines.next() {
        if lines.peek().is_none() {
            if !line.is_empty() {
                reducer.framing_error("the last line has no newline");
            }
            break;
        }
        reducer.feed(line);
        let _ = reducer.drain();
    }
    reducer.stream_ended();
    let _ = reducer.drain();
    let _ = reducer.outcome();
    let summary = reducer.summary();
    assert!(summary.is_object(), "{summary}");
}

/// `data` as text, when it is UTF-8.
pub fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}
