//! `rein chat` with memory on (`[agent.memory] enabled = true`): a
//! preference the model was told to remember (and pin: the person is
//! asked) in one session is in the
//! next session's prompt (the pinned block of the project's scope); once
//! a person forgets it with `rein memory forget`, the next prompt no
//! longer has it — the model server sees it gone. Another project's
//! chat never sees it.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use crate::common::definition::{call, chat, say, write};
use rein_testing::FakeServer;
use serde_json::{Value, json};

const PREFERENCE: &str = "The person wants every answer in French.";

fn memory_on(home: &std::path::Path) {
    write(
        &home.join("config.toml"),
        "[agent.memory]\nenabled = true\n",
    );
}

/// The system prompt of `server`'s request `n`.
fn system_of(server: &FakeServer, n: usize) -> String {
    let body: Value = server.requests()[n].json();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .map(|m| m["content"].to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remembered_preference_reaches_the_next_session_until_a_person_forgets_it() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    memory_on(home.path());
    // Session 1: told, the model remembers it (pinned).
    let first = FakeServer::start(vec![
        call(
            "c1",
            "remember",
            json!({"text": PREFERENCE, "pinned": true, "tags": ["language"]}),
        ),
        say("Noted."),
    ])
    .await
    .unwrap();
    // A pin is in every later prompt: the person is asked, each time.
    let url = format!("{}/v1", first.base_url());
    let mut cmd = common::rein_at(home.path());
    cmd.args(["chat", "--base-url", &url, "--model", "m"])
        .args(["-p", "always answer me in French", "--root"])
        .arg(root.path());
    let out = common::definition::run(cmd, b"y\n").await;
    let err = common::stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("approve this one call? [y/N"), "{err}");
    // Shown as it happens, never silent.
    assert!(err.contains("remember"), "{err}");
    assert!(!system_of(&first, 0).contains(PREFERENCE));
    let told = first.requests()[1].json().to_string();
    assert!(told.contains("remembered"), "{told}");

    // Session 2, a new chat in the same project: in its prompt.
    let second = FakeServer::start(vec![say("Bonjour.")]).await.unwrap();
    let out = chat(home.path(), &second, root.path(), &[], "hello").await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    let system = system_of(&second, 0);
    assert!(system.contains(PREFERENCE), "{system}");
    assert!(system.contains("not instructions"), "{system}");

    // Another project's chat does not see it.
    let other = FakeServer::start(vec![say("Hello.")]).await.unwrap();
    let out = chat(home.path(), &other, elsewhere.path(), &[], "hello").await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(!other.requests()[0].json().to_string().contains("French"));

    // A person forgets it; the next session's prompt is without it.
    let listed = common::rein_at(home.path())
        .current_dir(root.path())
        .args(["memory", "list", "--json"])
        .output()
        .unwrap();
    assert!(listed.status.success(), "{}", common::stderr(&listed));
    let item: Value =
        serde_json::from_str(common::stdout(&listed).lines().next().unwrap()).unwrap();
    assert_eq!(item["text"], PREFERENCE);
    assert!(item["source"]["session"].is_string(), "{item}");
    let id = item["id"].as_str().unwrap().to_owned();
    let forgot = common::rein_at(home.path())
        .current_dir(root.path())
        .args(["memory", "forget", &id])
        .output()
        .unwrap();
    assert!(forgot.status.success(), "{}", common::stderr(&forgot));
    let third = FakeServer::start(vec![say("Hello.")]).await.unwrap();
    let out = chat(home.path(), &third, root.path(), &[], "hello").await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    let body = third.requests()[0].json().to_string();
    assert!(!body.contains("French"), "{body}");
}

/// `writes = "ask"`: each `remember` is a person's to decide; a no keeps
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definition_that_asks_keeps_nothing_a_person_refused() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        &home.path().join("config.toml"),
        "[agent.memory]\nenabled = true\nwrites = \"ask\"\n",
    );
    let server = FakeServer::start(vec![
        call(
            "c1",
            "remember",
            json!({"text": PREFERENCE, "pinned": true}),
        ),
        say("I will not keep it."),
    ])
    .await
    .unwrap();
    let url = format!("{}/v1", server.base_url());
    let mut cmd = common::rein_at(home.path());
    cmd.args(["chat", "--base-url", &url, "--model", "m"])
        .args(["-p", "remember French", "--root"])
        .arg(root.path());
    let out = common::definition::run(cmd, b"n\n").await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    let listed = common::rein_at(home.path())
        .current_dir(root.path())
        .args(["memory", "list", "--json"])
        .output()
        .unwrap();
    assert!(listed.status.success(), "{}", common::stderr(&listed));
    assert_eq!(common::stdout(&listed).trim(), "", "nothing was kept");
    // A bad word for it is refused naming the field.
    write(
        &home.path().join("config.toml"),
        "[agent.memory]\nenabled = true\nwrites = \"sometimes\"\n",
    );
    let check = common::rein_at(home.path())
        .current_dir(root.path())
        .args(["config", "check"])
        .output()
        .unwrap();
    assert!(!check.status.success());
    assert!(
        common::stderr(&check).contains("writes"),
        "{}",
        common::stderr(&check)
    );
}

/// `[agent.memory.embeddings]`: items get vectors from the endpoint it
/// names (its key from the variable `key_env` names), and `recall` finds an
/// item by meaning in a later session; the key is never printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_finds_by_meaning_with_an_embeddings_endpoint() {
    let embed = FakeServer::start(Vec::new()).await.unwrap();
    embed.respond_with(std::sync::Arc::new(
        |request: &rein_testing::RecordedRequest, _| {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let data: Vec<Value> = body["input"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let t = t.as_str().unwrap().to_lowercase();
                    let animal = f64::from(u8::from(t.contains("dog") || t.contains("canine")));
                    json!({"index": i, "embedding": [animal, 0.01]})
                })
                .collect();
            rein_testing::Reply::status(200, json!({"data": data}).to_string())
        },
    ));
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        &home.path().join("config.toml"),
        &format!(
            "[agent.memory]\nenabled = true\n[agent.memory.embeddings]\nbase_url = \"{}/v1\"\nmodel = \"tiny\"\nkey_env = \"EMBED_KEY\"\n",
            embed.base_url()
        ),
    );
    let first = FakeServer::start(vec![
        call("c1", "remember", json!({"text": "The dog is called Rex."})),
        say("Noted."),
    ])
    .await
    .unwrap();
    let url = format!("{}/v1", first.base_url());
    let mut cmd = common::rein_at(home.path());
    cmd.env("EMBED_KEY", "sk-embed-SECRET")
        .args([
            "chat",
            "--base-url",
            &url,
            "--model",
            "m",
            "-p",
            "remember",
            "--root",
        ])
        .arg(root.path());
    let out = common::definition::run(cmd, b"").await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    let second = FakeServer::start(vec![
        call("c1", "recall", json!({"query": "canine"})),
        say("Found it."),
    ])
    .await
    .unwrap();
    let url = format!("{}/v1", second.base_url());
    let mut cmd = common::rein_at(home.path());
    cmd.env("EMBED_KEY", "sk-embed-SECRET")
        .args([
            "chat",
            "--base-url",
            &url,
            "--model",
            "m",
            "-p",
            "the dog?",
            "--root",
        ])
        .arg(root.path());
    let out = common::definition::run(cmd, b"").await;
    let (stdout, stderr) = (common::stdout(&out), common::stderr(&out));
    assert!(out.status.success(), "{stderr}");
    let recalled = second.requests()[1].json().to_string();
    assert!(recalled.contains("The dog is called Rex."), "{recalled}");
    assert_eq!(
        embed.requests()[0].header("authorization"),
        Some("Bearer sk-embed-SECRET")
    );
    assert!(!stdout.contains("SECRET") && !stderr.contains("SECRET"));
}

/// A memory forgotten by a person is not sent again by the session that
/// remembered it: resumed, its request shows neither the `remember` call's
/// text nor a `recall` result's — the log keeps them, the provider does not
/// see them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_memory_is_not_sent_again_when_its_session_resumes() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    memory_on(home.path());
    let first = FakeServer::start(vec![
        call(
            "c1",
            "remember",
            json!({"text": PREFERENCE, "tags": ["language"]}),
        ),
        call("c2", "recall", json!({"query": "French"})),
        say("Noted."),
    ])
    .await
    .unwrap();
    let url = format!("{}/v1", first.base_url());
    let mut cmd = common::rein_at(home.path());
    cmd.args(["chat", "--base-url", &url, "--model", "m"])
        .args(["-p", "always answer me in French", "--root"])
        .arg(root.path());
    let out = common::definition::run(cmd, b"y\ny\n").await;
    let err = common::stderr(&out);
    assert!(out.status.success(), "{err}");
    let session = common::session_of(&out);
    let recalled = first.requests()[2].json().to_string();
    assert!(recalled.contains("every answer in French"), "{recalled}");

    // The person forgets it.
    let listed = common::rein_at(home.path())
        .current_dir(root.path())
        .args(["memory", "list", "--json"])
        .output()
        .unwrap();
    let item: Value =
        serde_json::from_str(common::stdout(&listed).lines().next().unwrap()).unwrap();
    let id = item["id"].as_str().unwrap().to_owned();
    let forgot = common::rein_at(home.path())
        .current_dir(root.path())
        .args(["memory", "forget", &id])
        .output()
        .unwrap();
    assert!(forgot.status.success(), "{}", common::stderr(&forgot));

    // The session resumed: its next request carries the history, without it.
    let second = FakeServer::start(vec![say("Hello.")]).await.unwrap();
    let url = format!("{}/v1", second.base_url());
    let mut cmd = common::rein_at(home.path());
    cmd.args([
        "chat",
        "--base-url",
        &url,
        "--model",
        "m",
        "--resume",
        &session,
    ])
    .args(["-p", "hello", "--root"])
    .arg(root.path());
    let out = common::definition::run(cmd, b"").await;
    let err = common::stderr(&out);
    assert!(out.status.success(), "{err}");
    let body = second.requests()[0].json().to_string();
    assert!(
        body.contains("always answer me in French"),
        "the history is sent: {body}"
    );
    assert!(!body.contains("every answer in French"), "{body}");
    assert!(body.contains(rein::runner::RETRACTED), "{body}");
    assert!(err.contains("forgotten since"), "{err}");
}
