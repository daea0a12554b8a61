//! The SSE framing alone, over a body cut anywhere: it never panics, a
//! frame's data never holds a line over the bound, and nothing follows an
//! error.

#![no_main]

use futures::StreamExt;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let limits = rein_fuzz::limits();
    let framed = rein_gateway::sse::frames(futures::stream::iter(rein_fuzz::chunks(data)), limits);
    let frames: Vec<_> = futures::executor::block_on(framed.collect());
    if let Some(at) = frames.iter().position(Result::is_err) {
        assert_eq!(at + 1, frames.len(), "a frame after an error");
    }
    for frame in frames.iter().flatten() {
        for line in frame.data.split('\n') {
            assert!(line.len() <= limits.max_line_bytes, "a line over the bound");
        }
    }
});
