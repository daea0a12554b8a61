//! A call's progress notes against a server that sends them in the same
//! write as its answer (`fixtures/hasty.mjs`, over stdio with node): every
//! note sent before the answer reaches the call, in order.

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use rein_mcp::{McpClients, McpConfig};
use rein_tools::{Progress, ToolBackend, ToolContext};
use rein_wire::permission::Policy;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notes_sent_right_before_the_answer_all_reach_the_call_in_order() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hasty.mjs");
    let config = McpConfig::parse(&format!(
        "[mcp.servers.hy]\ncommand = \"node\"\nargs = [{:?}]\nenv_from = [\"PATH\"]\ntimeout_secs = 20\n",
        script.display().to_string()
    ))
    .expect("valid config");
    let clients = McpClients::start(&config);
    let tools = clients.tools();
    common::ready(&clients, &tools).await;
    let count = 40;
    for round in 0..25 {
        let seen: Arc<Mutex<Vec<f64>>> = Arc::default();
        let sink = seen.clone();
        let ctx = ToolContext {
            call_id: format!("c{round}"),
            session: String::new(),
            elevated: false,
            asked: false,
            policy: Policy::default(),
            progress: Progress::to(move |r| sink.lock().expect("lock").push(r.done)),
            app: rein_tools::AppContext::default(),
        };
        let done = tools
            .invoke("hy__hasty", json!({"notes": count}), &ctx)
            .await;
        assert!(done.is_ok(), "{done:?}");
        let seen = seen.lock().expect("lock").clone();
        let expected: Vec<f64> = (1..=count).map(f64::from).collect();
        assert_eq!(seen, expected, "round {round}");
    }
    clients.shutdown();
}
