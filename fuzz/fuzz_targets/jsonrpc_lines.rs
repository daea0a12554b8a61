//! The JSON-RPC framing ACP and Codex's app server speak, reading whatever
//! the other side writes: every message arrives or the connection ends
//! with a reason, and a request rein made is always answered — by the
//! other side or by the connection's end — never left waiting.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let reader = std::io::Cursor::new(data.to_vec());
        let (peer, mut incoming, reading) =
            rein_host::jsonrpc::connect(reader, tokio::io::sink(), 4096);
        let asked = tokio::spawn(async move { peer.request("ping", serde_json::json!({})).await });
        while incoming.recv().await.is_some() {}
        let reason = reading.await.expect("the reader ends");
        assert!(!reason.is_empty());
        let _ = asked.await.expect("the request ends");
    });
});
