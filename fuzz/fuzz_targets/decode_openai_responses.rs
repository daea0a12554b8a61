//! A provider's streamed body (OpenAiResponses), cut anywhere, through the SSE
//! framing and its decoder: it ends typed, with at most one error, last.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rein_fuzz::decode(rein_gateway::WireApi::OpenAiResponses, data);
});
