//! The provider fault matrix through the `rein` binary: `rein chat -p`
//! against a loopback server making each fault, for each wire API. Each
//! chat ends as the library's matrix says — answered after a retry, or a
//! failing exit naming the fault's own code — with at most one answer and
//! one finished turn in its exported log. A refused connection too. The
//! stalls are left to the library's matrix
//! (`rein-runner/tests/provider_faults.rs`): their bound is the idle
//! timeout, 90 s in the binary, which a person does not set. HTTP/2
//! resets against the TLS stand-in, its authority trusted through
//! `SSL_CERT_FILE`.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common::{rein_at, session_of, stderr, stdout};
use rein::gateway::WireApi;
use rein_testing::faults::{
    ANSWER, APIS, Ends, FAULTS, H2_FAULTS, STALLS, base_at, base_for, fault, h2_fault,
};
use rein_testing::{FakeH2Server, FakeServer};

fn provider(api: WireApi) -> &'static str {
    match api {
        WireApi::AnthropicMessages => "anthropic",
        WireApi::OpenAiChat => "openai-chat",
        WireApi::OpenAiResponses => "openai-responses",
    }
}

/// The code a failed chat names (`error[CODE]`), or what it said.
fn code_in(said: &str) -> String {
    said.split("error[")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .map_or_else(|| format!("no code in: {said}"), str::to_owned)
}

/// `rein chat -p hello` against `base` for `api`, in a fresh home: the
/// output and the home.
async fn chat(api: WireApi, base: String) -> (std::process::Output, tempfile::TempDir) {
    chat_trusting(api, base, None).await
}

/// The same, trusting the authority `ca` (PEM) as the machine's own
/// (`SSL_CERT_FILE`, as a person behind a company's authority would).
async fn chat_trusting(
    api: WireApi,
    base: String,
    ca: Option<&str>,
) -> (std::process::Output, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().to_owned();
    let ca_file = ca.map(|pem| {
        let file = path.join("ca.pem");
        std::fs::write(&file, pem).unwrap();
        file
    });
    let out = tokio::task::spawn_blocking(move || {
        let mut rein = rein_at(&path);
        if let Some(file) = ca_file {
            rein.env("SSL_CERT_FILE", file);
        }
        rein.current_dir(&path)
            .args(["chat", "--provider", provider(api), "--base-url", &base])
            .args(["--model", "m", "-p", "hello"])
            .env("ANTHROPIC_API_KEY", "sk-ant-test-fault-1234")
            .env("OPENAI_API_KEY", "sk-test-fault-1234")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    (out, home)
}

/// How many of each kind the chat's session log holds: (answers recorded,
/// turns finished).
fn recorded(out: &std::process::Output, home: &std::path::Path) -> (usize, usize) {
    let id = session_of(out);
    let export = rein_at(home)
        .args(["sessions", "export", &id])
        .output()
        .unwrap();
    assert!(export.status.success(), "{}", stderr(&export));
    let log = stdout(&export);
    let count = |kind: &str| log.matches(&format!("\"kind\":\"{kind}\"")).count();
    (count("model.completed"), count("turn.finished"))
}

/// How the chat of `cell` (its output `out`, its home) ended after
/// `requests`, held to how it must (`ends`): each broken promise goes
/// into `broken`.
fn judge(
    cell: &str,
    ends: &Ends,
    out: &std::process::Output,
    home: &std::path::Path,
    requests: usize,
    broken: &mut Vec<String>,
) -> Ends {
    let got = if out.status.success() && stdout(out).contains(ANSWER) {
        Ends::Answered(requests)
    } else {
        Ends::Fails(code_in(&stderr(out)).into(), requests)
    };
    if &got != ends {
        broken.push(format!("{cell}: ended {got:?}, not {ends:?}"));
        return got;
    }
    let wanted = usize::from(matches!(ends, Ends::Answered(_)));
    let (answers, finished) = recorded(out, home);
    if (answers, finished) != (wanted, 1) {
        broken.push(format!(
            "{cell}: {answers} answers recorded, {finished} turns finished"
        ));
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_of_every_api_through_rein_chat() {
    let mut broken = Vec::new();
    let mut table = Vec::new();
    for api in APIS {
        for name in FAULTS.iter().filter(|n| !STALLS.contains(n)) {
            let (replies, ends) = fault(name, api).unwrap();
            let server = FakeServer::start(replies).await.unwrap();
            let (out, home) = chat(api, base_for(api, &server)).await;
            let requests = server.requests().len();
            let cell = format!("{api} {name}");
            let got = judge(&cell, &ends, &out, home.path(), requests, &mut broken);
            table.push(format!("{api} | {name} | {got:?}"));
        }
    }
    assert!(
        broken.is_empty(),
        "{}\n\n{}",
        broken.join("\n"),
        table.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_ends_typed_through_rein_chat() {
    for api in APIS {
        // A port nobody listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let base = match api {
            WireApi::AnthropicMessages => format!("http://127.0.0.1:{port}"),
            _ => format!("http://127.0.0.1:{port}/v1"),
        };
        let (out, _home) = chat(api, base).await;
        assert!(!out.status.success(), "{api}");
        assert_eq!(code_in(&stderr(&out)), "connect_failed", "{api}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_http2_reset_of_every_api_through_rein_chat() {
    let mut broken = Vec::new();
    for api in APIS {
        for name in H2_FAULTS {
            let (replies, ends) = h2_fault(name, api).unwrap();
            let server = FakeH2Server::start(replies).await.unwrap();
            let base = base_at(api, &server.base_url());
            let (out, home) = chat_trusting(api, base, Some(server.ca_pem())).await;
            // Only requests that came over HTTP/2 are counted.
            let cell = format!("{api} {name}");
            judge(
                &cell,
                &ends,
                &out,
                home.path(),
                server.requests(),
                &mut broken,
            );
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
