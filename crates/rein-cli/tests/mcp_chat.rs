//! `rein chat --mcp ev` end to end: the reference MCP server
//! (`@modelcontextprotocol/server-everything`, from npm) configured in
//! `REIN_HOME/config.toml`, a model on loopback (FakeServer) that calls the
//! server's `echo` through the deferred catalog, and the server's answer
//! back in the model's next request. The server starts in the background:
//! the chat's first turns run before it is ready, and it joins at a turn
//! boundary with a note.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::time::Duration;

use crate::common::Chat;
use rein_testing::{FakeServer, Reply, ScriptedCall, ScriptedMessage};
use serde_json::json;

fn pong() -> Reply {
    Reply::sse(ScriptedMessage::text(&["pong"]).openai_chat_sse())
}

fn config_for_everything(home: &std::path::Path) {
    let entry = rein_testing::mcp::everything_server();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[mcp.servers.ev]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\nenv_from = [\"PATH\", \"REIN_TEST_VISIBLE\"]\n[mcp.servers.ev.tools]\nget-env = \"destructive\"\nget-sum = \"destructive\"\n[mcp.servers.gone]\ncommand = \"/nonexistent/server\"\n",
            entry.display().to_string()
        ),
    )
    .unwrap();
}

#[test]
fn mcp_list_shows_each_server_its_status_and_its_tools_classes() {
    let home = tempfile::tempdir().unwrap();
    config_for_everything(home.path());
    let out = common::rein_at(home.path())
        .args(["mcp", "list"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("ev  ready  13 tools"), "{said}");
    assert!(said.contains("  ev__echo  read"), "{said}");
    assert!(
        said.contains("  ev__get-env  destructive"),
        "the person's class wins: {said}"
    );
    assert!(
        said.contains("  ev__toggle-simulated-logging  write"),
        "{said}"
    );
    assert!(said.contains("gone  failed  0 tools"), "{said}");
    assert!(said.contains("could not be started"), "{said}");

    // A bad entry is refused whole, with its code.
    std::fs::write(
        home.path().join("config.toml"),
        "[mcp.servers.x]\ncommand='a'\nenv_from=['ANTHROPIC_API_KEY']\n",
    )
    .unwrap();
    let out = common::rein_at(home.path())
        .args(["mcp", "list"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[mcp_config_invalid]"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_uses_a_tool_of_the_reference_server() {
    let home = tempfile::tempdir().unwrap();
    config_for_everything(home.path());
    let root = tempfile::tempdir().unwrap();
    let server = std::sync::Arc::new(FakeServer::start(vec![pong()]).await.unwrap());
    let url = format!("{}/v1", server.base_url());
    let home_path = home.path().to_owned();
    let root_path = root.path().to_owned();
    let fake = server.clone();
    let said = tokio::task::spawn_blocking(move || {
        // Canary keys in rein's environment must never reach the server.
        let mut chat = Chat::start_with_env(
            &home_path,
            &["--base-url", &url, "--model", "m", "--root", root_path.to_str().unwrap(), "--mcp", "ev"],
            &[
                ("ANTHROPIC_API_KEY", "canary-anthropic-5f1c"),
                ("OPENAI_API_KEY", "canary-openai-9d2e"),
                ("REIN_TEST_VISIBLE", "named-and-passed"),
                ("REIN_TEST_HIDDEN", "not-named-7a3b"),
            ],
        );
        // Turns go on while the server starts; it joins at a boundary.
        let mut turns = 0;
        loop {
            turns += 1;
            chat.send("ping");
            let now = chat.wait_for("pong", turns);
            if now.contains("MCP server `ev` is ready") {
                break;
            }
            assert!(turns < 200, "the server never joined:\n{now}");
            fake.push(pong());
            std::thread::sleep(Duration::from_millis(100));
        }
        let call = ScriptedMessage::text(&[]).with_call(ScriptedCall::to("call_tool", json!({"name": "ev__echo", "arguments": {"message": "from the chat"}})).id("c1"));
        fake.push(Reply::sse(call.openai_chat_sse()));
        fake.push(Reply::sse(
            ScriptedMessage::text(&["It echoed."]).openai_chat_sse(),
        ));
        chat.send("echo something");
        chat.wait_for("It echoed.", 1);
        // A long call's progress shows as it comes.
        let long = ScriptedMessage::text(&[]).with_call(ScriptedCall::to("call_tool", json!({"name": "ev__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 200}})).id("c2"));
        fake.push(Reply::sse(long.openai_chat_sse()));
        fake.push(Reply::sse(ScriptedMessage::text(&["Done waiting."]).openai_chat_sse()));
        chat.send("run the long one");
        chat.wait_for("Done waiting.", 1);
        // `get-env` dumps the server's environment; it is classed
        // destructive here, so it is asked first.
        let env = ScriptedMessage::text(&[]).with_call(ScriptedCall::to("call_tool", json!({"name": "ev__get-env", "arguments": {}})).id("c3"));
        fake.push(Reply::sse(env.openai_chat_sse()));
        fake.push(Reply::sse(ScriptedMessage::text(&["Env read."]).openai_chat_sse()));
        chat.send("show the server's environment");
        chat.wait_for("approve?", 1);
        chat.send("y");
        chat.wait_for("Env read.", 1);
        // Asked about an MCP call, a person sees every argument.
        let sum = ScriptedMessage::text(&[]).with_call(ScriptedCall::to("call_tool", json!({"name": "ev__get-sum", "arguments": {"a": 4217, "b": 25}})).id("c4"));
        fake.push(Reply::sse(sum.openai_chat_sse()));
        fake.push(Reply::sse(ScriptedMessage::text(&["Summed."]).openai_chat_sse()));
        chat.send("add them");
        let asked = chat.wait_for("approve?", 2);
        let asked = asked.rsplit("-> ").next().unwrap_or_default().to_owned();
        assert!(
            asked.contains("\"a\": 4217") && asked.contains("\"b\": 25"),
            "the approval hid the arguments:\n{asked}"
        );
        chat.send("y");
        chat.wait_for("Summed.", 1);
        chat.send("/exit");
        chat.finish()
    })
    .await
    .unwrap();
    assert!(said.contains("-> ev__echo"), "{said}");
    assert!(said.contains("<- ok"), "{said}");
    // Progress shows as it comes, at a pace a person can read: its start
    // and its end, not two hundred lines.
    assert!(said.contains(" of 200"), "progress shown: {said}");
    assert!(said.contains(".. 200 of 200"), "its end shown: {said}");
    let lines = said.matches(" of 200").count();
    assert!(lines < 20, "{lines} progress lines for 200 reports");
    // The server's answer went back to the model.
    let requests = server.requests();
    let last = requests[requests.len() - 7].json().to_string();
    assert!(last.contains("Echo: from the chat"), "{last}");
    // The deferred catalog named the server's tools.
    assert!(last.contains("ev__get-sum"), "{last}");
    // The server had only what its entry names.
    let env = requests[requests.len() - 3].json().to_string();
    assert!(
        env.contains("named-and-passed"),
        "get-env's answer came back: {env}"
    );
    for secret in [
        "canary-anthropic-5f1c",
        "canary-openai-9d2e",
        "not-named-7a3b",
    ] {
        assert!(
            !env.contains(secret),
            "{secret} reached the MCP server: {env}"
        );
        assert!(!said.contains(secret), "{secret} was printed");
    }
}

/// An MCP tool whose every answer is stamped with the time it ran (a
/// server written with the Python SDK, from PyPI, pinned) and says the same
/// failure each time: the model calling it over and over is nudged at the
/// third and stopped at the fifth — the stamp makes no two answers differ.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stamped_mcp_answer_repeated_is_a_loop() {
    let python = common::python::venv("mcp-2.3.0", &["mcp==2.3.0"], "python");
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("clock.py");
    std::fs::write(
        &script,
        "import datetime\nfrom mcp.server.mcpserver import MCPServer\n\nserver = MCPServer(\"clock\")\n\n@server.tool()\ndef status() -> str:\n    \"\"\"The build's status, stamped.\"\"\"\n    return f\"{datetime.datetime.now(datetime.timezone.utc).isoformat()} build failed: no module named slug\"\n\nserver.run()\n",
    )
    .unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[mcp.servers.clock]\ncommand = {:?}\nargs = [{:?}]\n[mcp.servers.clock.tools]\nstatus = \"read\"\n",
            python.display().to_string(),
            script.display().to_string()
        ),
    )
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    let server = std::sync::Arc::new(FakeServer::start(vec![pong()]).await.unwrap());
    let url = format!("{}/v1", server.base_url());
    let (home_path, root_path, fake) = (
        home.path().to_owned(),
        root.path().to_owned(),
        server.clone(),
    );
    let said = tokio::task::spawn_blocking(move || {
        let mut chat = Chat::start(
            &home_path,
            &[
                "--base-url",
                &url,
                "--model",
                "m",
                "--root",
                root_path.to_str().unwrap(),
                "--mcp",
                "clock",
            ],
        );
        let mut turns = 0;
        loop {
            turns += 1;
            chat.send("ping");
            let now = chat.wait_for("pong", turns);
            if now.contains("MCP server `clock` is ready") {
                break;
            }
            assert!(turns < 200, "the server never joined:\n{now}");
            fake.push(pong());
            std::thread::sleep(Duration::from_millis(100));
        }
        let before = fake.requests().len();
        fake.respond_with(std::sync::Arc::new(|_, n| {
            let call = ScriptedMessage::text(&[]).with_call(
                ScriptedCall::to(
                    "call_tool",
                    json!({"name": "clock__status", "arguments": {}}),
                )
                .id(&format!("s{n}")),
            );
            Reply::sse(call.openai_chat_sse())
        }));
        chat.send("is the build green?");
        let said = chat.wait_for("loop", 1);
        (said, fake.requests().len() - before)
    })
    .await
    .unwrap();
    let (said, requests) = said;
    assert!(
        requests <= 6,
        "the loop was not stopped: {requests} requests\n{said}"
    );
    let sent = server.requests().last().unwrap().json().to_string();
    assert!(sent.contains("build failed"), "{sent}");
}
