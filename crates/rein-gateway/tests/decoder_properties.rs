//! Property tests: the decoders never panic on any input, and how a body
//! is cut into chunks never changes what they yield.

use proptest::prelude::*;
use rein_gateway::WireApi;
use rein_wire::StreamEvent;

/// Event-shaped lines: real event types with random payload fragments.
fn sse_like() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        Just("event: message_start\n".to_owned()),
        Just("data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"x\",\"usage\":{\"input_tokens\":3}}}\n".to_owned()),
        Just("data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{}}}\n".to_owned()),
        Just("data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n".to_owned()),
        Just("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"function\":{\"arguments\":\"1}\"}}]}}]}\n".to_owned()),
        Just("data: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"type\":\"function_call\",\"name\":\"f\"}}\n".to_owned()),
        Just("data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":1,\"delta\":\"{}\"}\n".to_owned()),
        Just("data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n".to_owned()),
        Just("data: {\"type\":\"message_stop\"}\n".to_owned()),
        Just("data: [DONE]\n".to_owned()),
        Just("data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":1}}}\n".to_owned()),
        Just(": comment\n".to_owned()),
        Just("\n".to_owned()),
        Just("\r\n".to_owned()),
        Just("\r".to_owned()),
        "[ -~]{0,20}".prop_map(|s| format!("data: {s}\n")),
    ];
    prop::collection::vec(line, 0..40).prop_map(|lines| lines.concat().into_bytes())
}

const APIS: [WireApi; 3] = [
    WireApi::AnthropicMessages,
    WireApi::OpenAiChat,
    WireApi::OpenAiResponses,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn arbitrary_bytes_never_panic_and_chunking_does_not_matter(
        body in prop::collection::vec(any::<u8>(), 0..600),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        for api in APIS {
            let whole = rein_testing::fixtures::decode_cut(api, &body, &[]);
            let split = rein_testing::fixtures::decode_cut(api, &body, &cuts);
            prop_assert_eq!(whole, split);
        }
    }

    #[test]
    fn event_shaped_streams_never_panic_and_chunking_does_not_matter(
        body in sse_like(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        for api in APIS {
            let whole = rein_testing::fixtures::decode_cut(api, &body, &[]);
            let split = rein_testing::fixtures::decode_cut(api, &body, &cuts);
            prop_assert_eq!(&whole, &split);
            // A stream ends in its terminal event or a coded error.
            if whole.1.is_none() {
                let ends = whole.0.iter().any(|e| matches!(e, StreamEvent::Stop { .. } | StreamEvent::Error { .. }));
                let responses_or_done = body.windows(6).any(|w| w == b"[DONE]") || body.windows(9).any(|w| w == b"completed") || body.windows(12).any(|w| w == b"message_stop");
                prop_assert!(ends || responses_or_done);
            }
        }
    }
}
