//! The real wire captures beside the project, and decoding helpers for
//! tests that read them.
//!
//! The captures live in `../shared/fixtures/wire` (from the workspace root)
//! or where `REIN_WIRE_FIXTURES` says. Where they are absent (a user's fresh
//! clone) tests skip with a printed notice; with `REIN_REQUIRE_FIXTURES=1`
//! (set by `.ci/run`) their absence fails the test instead.

use std::path::PathBuf;

use bytes::Bytes;
use futures::StreamExt;
use rein_gateway::{WireApi, decode_stream, sse::SseLimits};
use rein_wire::{AgentError, StreamEvent};

/// The captures folder, or `None` (with a notice) where it is absent and
/// not required.
pub fn wire_dir() -> Option<PathBuf> {
    let dir = std::env::var("REIN_WIRE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/wire")
        });
    if dir.join("README.md").is_file() {
        return Some(dir);
    }
    assert!(
        !std::env::var("REIN_REQUIRE_FIXTURES").is_ok_and(|v| v == "1"),
        "the wire captures are required but absent at {}",
        dir.display()
    );
    eprintln!(
        "NOTICE: skipping: wire captures not found at {} (set REIN_WIRE_FIXTURES)",
        dir.display()
    );
    None
}

/// Decode `body` as `api`, fed in the given chunk sizes (cut points are
/// taken modulo the body length): the events and the error that ended it.
pub fn decode_cut(
    api: WireApi,
    body: &[u8],
    cuts: &[usize],
) -> (Vec<StreamEvent>, Option<AgentError>) {
    let body = Bytes::copy_from_slice(body);
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut chunks: Vec<Result<Bytes, AgentError>> = Vec::new();
    let mut at = 0;
    for p in points.into_iter().chain(std::iter::once(body.len())) {
        if p > at {
            chunks.push(Ok(body.slice(at..p)));
            at = p;
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap_or_else(|e| panic!("a test runtime: {e}"));
    runtime.block_on(async {
        let mut stream = Box::pin(decode_stream(
            api,
            futures::stream::iter(chunks),
            SseLimits::default(),
        ));
        let mut events = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(e) => events.push(e),
                Err(err) => return (events, Some(err)),
            }
        }
        (events, None)
    })
}

/// Decode `body` fed in chunks of `size` bytes.
pub fn decode_chunked(
    api: WireApi,
    body: &[u8],
    size: usize,
) -> (Vec<StreamEvent>, Option<AgentError>) {
    let size = size.max(1);
    let cuts: Vec<usize> = (size..body.len()).step_by(size).collect();
    decode_cut(api, body, &cuts)
}
