//! The SSE framing vectors of `../shared/fixtures/wire/sse-edge-cases`,
//! fed as their source fed them, whole, and byte by byte.
//!
//! rein matches each source's expectation, with two documented departures
//! (see `rein_gateway::sse`): an event left pending at a clean end of body
//! is dispatched, and a block without a `data` field is not.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::path::PathBuf;

use bytes::Bytes;
use futures::StreamExt;
use rein_gateway::sse::{SseFrame, SseLimits, frames};
use rein_wire::AgentError;
use serde_json::Value;

fn run(chunks: Vec<Vec<u8>>) -> Vec<SseFrame> {
    let items: Vec<Result<Bytes, AgentError>> =
        chunks.into_iter().map(|c| Ok(Bytes::from(c))).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        frames(futures::stream::iter(items), SseLimits::default())
            .map(|f| f.expect("framing error"))
            .collect()
            .await
    })
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Blocks with no data field that a source dispatches and rein does not.
const NOT_DISPATCHED: &[&str] = &["openai-python__event-without-data"];

#[test]
fn every_framing_vector_matches_its_source_except_the_documented_departures() {
    let Some(dir) = rein_testing::fixtures::wire_dir() else {
        return;
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir.join("sse-edge-cases"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sse"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 28);
    for path in paths {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let body = std::fs::read(&path).unwrap();
        let expected: Value =
            serde_json::from_slice(&std::fs::read(path.with_extension("expected.json")).unwrap())
                .unwrap();
        let as_fed: Vec<Vec<u8>> = expected["chunks_as_fed_by_the_test"]
            .as_array()
            .map(|chunks| {
                chunks
                    .iter()
                    .map(|c| match (c["utf8"].as_str(), c["hex"].as_str()) {
                        (Some(text), _) => text.as_bytes().to_vec(),
                        (_, Some(h)) => hex(h),
                        _ => panic!("{name}: unknown chunk form"),
                    })
                    .collect()
            })
            .unwrap_or_else(|| vec![body.clone()]);
        let fed = run(as_fed);
        assert_eq!(
            run(vec![body.clone()])
                .iter()
                .map(|f| &f.data)
                .collect::<Vec<_>>(),
            fed.iter().map(|f| &f.data).collect::<Vec<_>>(),
            "{name}: whole vs as fed"
        );
        let bytewise = run(body.iter().map(|b| vec![*b]).collect());
        assert_eq!(bytewise, run(vec![body.clone()]), "{name}: byte by byte");

        let wanted: Vec<&Value> = expected["source_expectation"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e.get("data").is_some())
            .collect();
        if NOT_DISPATCHED.contains(&name.as_str()) {
            assert!(
                fed.is_empty(),
                "{name}: a block without data is not dispatched"
            );
            continue;
        }
        assert!(fed.len() >= wanted.len(), "{name}: {fed:?}");
        for (got, want) in fed.iter().zip(&wanted) {
            assert_eq!(got.data, want["data"].as_str().unwrap(), "{name}");
            if let Some(event) = want.get("event") {
                // No (or an empty) event field means the default type, `message`.
                let got_type = got
                    .event
                    .as_deref()
                    .filter(|e| !e.is_empty())
                    .unwrap_or("message");
                assert_eq!(got_type, event.as_str().unwrap_or("message"), "{name}");
            }
            if let Some(id) = want.get("id") {
                assert_eq!(got.id.as_deref(), id.as_str(), "{name}");
            }
            if let Some(id) = want.get("lastEventId") {
                assert_eq!(
                    got.id.as_deref().unwrap_or(""),
                    id.as_str().unwrap(),
                    "{name}"
                );
            }
            assert!(
                !got.at_eof,
                "{name}: only the extra trailing event is completed by EOF"
            );
        }
        // The one departure: the pending event at a clean end of body.
        let extra = &fed[wanted.len()..];
        assert!(extra.len() <= 1, "{name}: {extra:?}");
        if let Some(last) = extra.first() {
            assert!(
                last.at_eof,
                "{name}: an extra event must be the one completed by EOF"
            );
            let ends_with_blank_line =
                body.ends_with(b"\n\n") || body.ends_with(b"\r\r") || body.ends_with(b"\r\n\r\n");
            assert!(!ends_with_blank_line, "{name}");
        }
    }
}

#[test]
fn the_pending_event_at_a_clean_end_of_body_is_dispatched() {
    let frames = run(vec![b"data: one\n\ndata: two".to_vec()]);
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[1].data, "two");
    assert!(frames[1].at_eof);
    let frames = run(vec![b"event: x\ndata: 1\r\n".to_vec()]);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].event.as_deref(), Some("x"));
}

#[test]
fn a_body_that_fails_does_not_dispatch_its_pending_event() {
    let items: Vec<Result<Bytes, AgentError>> = vec![
        Ok(Bytes::from_static(b"data: complete\n\ndata: partial")),
        Err(AgentError::new(
            rein_wire::error::codes::STREAM_TRUNCATED,
            "cut",
        )),
    ];
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let out: Vec<Result<SseFrame, AgentError>> =
        runtime.block_on(frames(futures::stream::iter(items), SseLimits::default()).collect());
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].as_ref().unwrap().data, "complete");
    assert_eq!(
        out[1].as_ref().unwrap_err().code,
        rein_wire::error::codes::STREAM_TRUNCATED
    );
}

#[test]
fn lines_beyond_the_bound_end_the_stream_with_a_code() {
    let limits = SseLimits {
        max_line_bytes: 100,
    };
    let chunks: Vec<Result<Bytes, AgentError>> = std::iter::once(Ok(Bytes::from("data: ")))
        .chain((0..10).map(|_| Ok(Bytes::from(vec![b'a'; 30]))))
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let out: Vec<Result<SseFrame, AgentError>> =
        runtime.block_on(frames(futures::stream::iter(chunks), limits).collect());
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].as_ref().unwrap_err().code,
        rein_wire::error::codes::STREAM_LINE_TOO_LONG
    );
}
