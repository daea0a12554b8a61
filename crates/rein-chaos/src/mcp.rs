//! The trial's calls served by `rein mcp serve`: the trial's process
//! serves rein's tools over MCP's streamable HTTP on loopback (`McpServe`,
//! what `rein mcp serve --http` runs, on the trial's store) and an MCP
//! client in the same process calls them one by one — reads, a change to a
//! file it read (the person approves), a delete (the person refuses), a
//! new file, the sandboxed command. The person decides each question as
//! the server tells it, from another surface (as `rein approve` does).
//!
//! A kill takes the client with the server, as a client loses its call
//! when the server dies. The client never sends a step twice: it notes a
//! step before sending it (`client.txt`), so a step cut short is not sent
//! again — a resent call would be a new call, which MCP cannot tell from a
//! repeat. The server opened again stops the call its killed predecessor
//! left waiting: a question whose client is gone runs nothing.
//!
//! Not here: checking (`check`), which holds every served call to the
//! promises but compares no story with the reference (a step cut short
//! before the server heard it is never made).

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use rein_mcp::{HttpGuard, McpServe, ServeSettings};
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::child::{main_session, parts, person};
use crate::model::STAMP;

/// The client's calls, in order: (tool, arguments).
pub const CALLS: &[(&str, &str)] = &[
    ("read_file", r#"{"path":"notes.txt"}"#),
    ("read_file", r#"{"path":"old.txt"}"#),
    ("write_file", r#"{"path":"notes.txt","content":"tidied\n"}"#),
    ("delete_file", r#"{"path":"old.txt"}"#),
    ("write_file", r#"{"path":"log.txt","content":"one\n"}"#),
    ("run_command", STAMP),
];

/// Where the client notes each step before it sends it.
const STEPS: &str = "client.txt";

/// The bearer token the trial's client sends.
const TOKEN: &str = "rein-chaos-mcp-token-0123456789abcdef0123";

/// Serve the trial in `dir` and call every step not yet sent.
pub async fn run(dir: &Path, helper: &Path) -> anyhow::Result<()> {
    let (store, backend) = parts(dir, helper).await?;
    let existing = main_session(store.as_ref()).await?;
    let settings = ServeSettings {
        approval_wait: Duration::from_secs(60),
        ..ServeSettings::default()
    };
    let served = McpServe::open(store.clone(), backend, existing.as_deref(), settings).await?;
    let session = served.session_id().to_owned();
    let served = served.telling(move |_, request| {
        let (store, session, request) = (store.clone(), session.clone(), request.clone());
        tokio::spawn(async move {
            let _ = rein_approvals::decide(
                store.as_ref(),
                &session,
                &request.approval_id,
                person(&request.tool),
                &rein_approvals::Surface::command("approve"),
            )
            .await;
        });
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let guard = HttpGuard {
        hosts: vec![format!("127.0.0.1:{}", addr.port())],
        tokens: vec![TOKEN.to_owned()],
    };
    tokio::spawn(axum::serve(listener, served.router(cancel.clone(), guard)).into_future());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp"));
    config.auth_header = Some(TOKEN.to_owned());
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    let client = ().serve(transport).await.context("the MCP client")?;
    for (step, (tool, arguments)) in CALLS.iter().enumerate().skip(sent(dir)?) {
        note(dir, step)?;
        let serde_json::Value::Object(arguments) = serde_json::from_str(arguments)? else {
            anyhow::bail!("step {step}'s arguments are no object");
        };
        let request = CallToolRequestParams::new((*tool).to_owned()).with_arguments(arguments);
        // An error result is the call's answer (a refusal, say): the
        // client goes on, as a client would.
        client
            .call_tool(request)
            .await
            .with_context(|| format!("step {step} ({tool})"))?;
    }
    client.cancel().await?;
    cancel.cancel();
    served.close().await?;
    Ok(())
}

/// How many steps the client has sent (or was about to, when killed).
fn sent(dir: &Path) -> anyhow::Result<usize> {
    match std::fs::read_to_string(dir.join(STEPS)) {
        Ok(text) => Ok(text.lines().count()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(err) => Err(err.into()),
    }
}

/// Note step `step` as sent, on disk before it is.
fn note(dir: &Path, step: usize) -> anyhow::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(STEPS))?;
    writeln!(file, "{step}")?;
    file.sync_all()?;
    Ok(())
}

/// The name the served conversation's stops are recorded under when its
/// server was killed mid-call (see `rein_mcp::serve`).
pub(crate) fn is_server_gone(by: &str) -> bool {
    by.starts_with("mcp serve")
}
