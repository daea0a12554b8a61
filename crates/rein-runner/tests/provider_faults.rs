//! The provider fault matrix: every fault a model server can make, for
//! every wire API, through a whole turn of the library over real HTTP on
//! loopback (`FakeServer`). A refused connection, 429 with and without
//! Retry-After, 500, 529 overloaded, a stream cut before its first event,
//! mid-text, mid-tool-arguments and before its final usage, a stall before
//! and after output, garbage, a 10 MB line, a success that is not an event
//! stream. Each turn must end typed — answered after a retry, or with the
//! fault's own code — within its bounds, with nothing recorded twice and
//! no tool run for a message that never arrived whole. HTTP/2 streams
//! reset before the headers, mid-text, mid-tool-arguments and before the
//! final usage, against a TLS stand-in (`FakeH2Server`) the provider trusts
//! through its config's `extra_roots`.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::sync::Arc;
use std::time::Duration;

use rein_gateway::{ApiKey, HttpProvider, ProviderConfig, RetryPolicy, Timeouts, WireApi};
use rein_runner::{Conversation, Profile, TurnOutcome};
use rein_sessions::{Event, SqliteStore, Store};
use rein_testing::faults::{ANSWER, APIS, Ends, FAULTS, H2_FAULTS, base_at, fault, h2_fault};
use rein_testing::{FakeH2Server, FakeServer, FakeToolBackend};
use rein_wire::error::codes;

fn config(api: WireApi, base: &str) -> ProviderConfig {
    let mut config = ProviderConfig::new(api)
        .with_base_url(base_at(api, base))
        .with_api_key(ApiKey::new("sk-test-fault-1234"));
    config.offline = Some(false);
    config.retry = RetryPolicy {
        max_retries: 2,
        min_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(5),
    };
    config.timeouts = Timeouts {
        connect: Duration::from_secs(2),
        first_byte: Duration::from_secs(2),
        idle: Duration::from_millis(500),
        total: Duration::from_secs(30),
    };
    config
}

/// One turn through a provider of `config`; its outcome and the log's
/// counts (model answers recorded, turns finished, tools run).
async fn turn(config: ProviderConfig) -> (TurnOutcome, usize, usize, u64) {
    let provider = Arc::new(HttpProvider::new(config).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let backend = Arc::new(FakeToolBackend::new(&[("a.rs", "fn a() {}")]).unwrap());
    let profile = Profile {
        max_output_tokens: 256,
        ..Profile::new("Helper", "m")
    };
    let mut conv = Conversation::open(store, provider, backend.clone(), profile, None)
        .await
        .unwrap();
    // A hang guard, not a measurement: every bound above is far shorter.
    let outcome = tokio::time::timeout(Duration::from_secs(120), conv.turn("hello"))
        .await
        .expect("the turn ended within its bounds")
        .unwrap();
    let log = conv.log_events().await.unwrap();
    let count = |f: fn(&Event) -> bool| log.iter().filter(|e| f(&e.event)).count();
    (
        outcome,
        count(|e| matches!(e, Event::ModelCompleted { .. })),
        count(|e| matches!(e, Event::TurnFinished { .. })),
        backend.invocations("read_file"),
    )
}

/// How the turn of `cell` ended after `requests`, held to how it must
/// (`ends`): each broken promise goes into `broken`.
fn judge(
    cell: &str,
    ends: &Ends,
    turned: &(TurnOutcome, usize, usize, u64),
    requests: usize,
    broken: &mut Vec<String>,
) -> Ends {
    let (outcome, answers, finished, ran) = turned;
    let got = match outcome {
        TurnOutcome::Finished { reply } if reply == ANSWER => Ends::Answered(requests),
        TurnOutcome::Error { error } => Ends::Fails(error.code.as_str().into(), requests),
        other => panic!("{cell}: {other:?}"),
    };
    if &got != ends {
        broken.push(format!("{cell}: ended {got:?}, not {ends:?} ({outcome:?})"));
    }
    let wanted_answers = usize::from(matches!(ends, Ends::Answered(_)));
    if *answers != wanted_answers || *finished != 1 || *ran != 0 {
        broken.push(format!(
            "{cell}: {answers} answers recorded, {finished} turns finished, {ran} tools run"
        ));
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_of_every_api_ends_typed_with_nothing_recorded_twice() {
    let mut broken = Vec::new();
    let mut table = Vec::new();
    for api in APIS {
        for name in FAULTS {
            let (replies, ends) = fault(name, api).unwrap();
            let server = FakeServer::start(replies).await.unwrap();
            let turned = turn(config(api, &server.base_url())).await;
            let requests = server.requests().len();
            let got = judge(
                &format!("{api} {name}"),
                &ends,
                &turned,
                requests,
                &mut broken,
            );
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
async fn every_http2_reset_of_every_api_ends_typed_with_nothing_recorded_twice() {
    let mut broken = Vec::new();
    for api in APIS {
        for name in H2_FAULTS {
            let (replies, ends) = h2_fault(name, api).unwrap();
            let server = FakeH2Server::start(replies).await.unwrap();
            let mut config = config(api, &server.base_url());
            config.extra_roots = vec![server.ca_pem().to_owned()];
            let turned = turn(config).await;
            // Only requests that came over HTTP/2 are counted.
            judge(
                &format!("{api} {name}"),
                &ends,
                &turned,
                server.requests(),
                &mut broken,
            );
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[tokio::test]
async fn a_trusted_certificate_that_is_not_pem_is_refused_with_its_code() {
    let mut config = config(WireApi::OpenAiChat, "https://127.0.0.1:1");
    config.extra_roots = vec!["-----BEGIN CERTIFICATE-----\nnot base64 at all\n".into()];
    let err = HttpProvider::new(config).unwrap_err();
    assert_eq!(err.code, codes::CONFIG_INVALID, "{err:?}");
}

#[tokio::test]
async fn a_refused_connection_ends_typed_for_every_api() {
    for api in APIS {
        // A port nobody listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let (outcome, answers, finished, _) =
            turn(config(api, &format!("http://127.0.0.1:{port}"))).await;
        match outcome {
            TurnOutcome::Error { error } => {
                assert_eq!(error.code, codes::CONNECT_FAILED, "{api}: {error:?}");
                // Tried again, within the retry bound, then given up.
                assert_eq!(error.detail.unwrap()["attempts"], 3, "{api}");
            }
            other => panic!("{api}: {other:?}"),
        }
        assert_eq!((answers, finished), (0, 1), "{api}");
    }
}
