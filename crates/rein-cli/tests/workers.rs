//! `rein worker` from outside, on a real PostgreSQL server and a model
//! stand-in on loopback that takes its time: a graph handed to the
//! workers with `rein run --detach` and followed with `rein run --watch`
//! finishes when the worker driving it and running its tasks is SIGKILLed
//! mid-task — another takes the graph and the lapsed tasks over — with no
//! task completed twice and the outputs of an uninterrupted run.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{rein_at, spawn_with_lines, stderr, stdout};
use rein_testing::{FakeServer, Reply, ScriptedMessage};

/// The words the tasks ask for; the stand-in answers each with its own.
const WORDS: [&str; 3] = ["APPLE", "KIWI", "MANGO"];

const GRAPH: &str = r#"
[graph]
max_parallel = 3

[[task]]
id = "a"
brief = "Say APPLE."
outputs = ["answer"]

[[task]]
id = "b"
brief = "Say KIWI."
outputs = ["answer"]

[[task]]
id = "c"
brief = "Say MANGO."
outputs = ["answer"]
"#;

/// A model that answers each task with its word as JSON, after `pause`.
async fn model(pause: Duration) -> FakeServer {
    let server = FakeServer::start(Vec::new()).await.unwrap();
    server.respond_with(Arc::new(move |request, _| {
        let body = String::from_utf8_lossy(&request.body);
        let word = WORDS
            .iter()
            .find(|w| body.contains(*w))
            .map_or("none", |w| w);
        let text = format!("{{\"answer\": \"{}\"}}", word.to_lowercase());
        let mut reply = Reply::sse(ScriptedMessage::text(&[&text]).openai_chat_sse());
        reply.chunks[0].delay = pause;
        reply
    }));
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
async fn a_graph_finishes_on_the_workers_when_one_is_killed_mid_task() {
    let Some(server) = rein_testing::postgres::server() else {
        return;
    };
    let url = server.database();
    let model = model(Duration::from_secs(3)).await;
    let base = format!("{}/v1", model.base_url());
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let graph = home.path().join("graph.toml");
    std::fs::write(&graph, GRAPH).unwrap();

    // Uninterrupted, in place: what the outputs must be.
    let (h, r, g, b) = (
        home.path().to_owned(),
        root.path().to_owned(),
        graph.clone(),
        base.clone(),
    );
    let alone = tokio::task::spawn_blocking(move || {
        rein_at(&h)
            .args(["run", g.to_str().unwrap(), "--base-url", &b, "--root"])
            .arg(&r)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(alone.status.success(), "{}", stderr(&alone));

    let worker = || {
        let mut cmd = rein_at(home.path());
        cmd.args([
            "--store",
            &url,
            "worker",
            "--base-url",
            &base,
            "--tasks",
            "3",
        ])
        .args(["--claim-secs", "2", "--root"])
        .arg(root.path());
        spawn_with_lines(cmd)
    };
    let (mut first, said) = worker();
    let submitted = rein_at(home.path())
        .args(["--store", &url, "run", graph.to_str().unwrap(), "--detach"])
        .output()
        .unwrap();
    assert!(submitted.status.success(), "{}", stderr(&submitted));
    let id = stdout(&submitted).trim().to_owned();
    assert_eq!(id.len(), 36, "{id}");

    // The first worker drives the graph and has a task mid-call: killed.
    let until = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.contains("running task")) {
        let line = said
            .recv_timeout(until.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("the first worker ran nothing:\n{}", seen.join("\n")));
        seen.push(line);
    }
    std::thread::sleep(Duration::from_millis(500));
    first.kill().unwrap();
    first.wait().unwrap();

    // Another takes over; the graph is followed from a third process.
    let (mut second, _said) = worker();
    let (h, u, i) = (home.path().to_owned(), url.clone(), id.clone());
    let watched = tokio::task::spawn_blocking(move || {
        rein_at(&h)
            .args(["--store", &u, "run", "--watch", &i])
            .output()
            .unwrap()
    });
    let watched = tokio::time::timeout(Duration::from_secs(120), watched)
        .await
        .expect("the graph finished on the second worker")
        .unwrap();
    second.kill().unwrap();
    second.wait().unwrap();
    let followed = stdout(&watched);
    assert!(watched.status.success(), "{followed}\n{}", stderr(&watched));
    assert!(followed.contains("graph: succeeded"), "{followed}");

    // Each task finished once in the graph's record, with the outputs of
    // the run nothing interrupted.
    let finished = |store: Option<&str>, id: &str| {
        let mut cmd = rein_at(home.path());
        if let Some(store) = store {
            cmd.args(["--store", store]);
        }
        let export = cmd.args(["sessions", "export", id]).output().unwrap();
        assert!(export.status.success(), "{}", stderr(&export));
        let mut ends: Vec<String> = stdout(&export)
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|event| event["kind"] == "task.finished")
            .map(|event| {
                let data = &event["data"];
                format!("{} {} {}", data["task"], data["state"], data["outputs"])
            })
            .collect();
        ends.sort();
        ends
    };
    let graph_alone = stderr(&alone)
        .split("--resume ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .map(|id| id.trim_end_matches([')', '.', ',']).to_owned())
        .unwrap_or_else(|| panic!("{}", stderr(&alone)));
    let on_workers = finished(Some(&url), &id);
    assert_eq!(
        on_workers.len(),
        3,
        "each task finished once: {on_workers:?}"
    );
    assert_eq!(on_workers, finished(None, &graph_alone));
    assert!(on_workers[0].contains("apple"), "{on_workers:?}");

    // The queue: one result taken per task; the killed worker's tasks were
    // claimed again by the second.
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let rows: Vec<(String, i32, String)> =
        sqlx::query_as("SELECT task, claims, state FROM task_queue WHERE graph_session = $1")
            .bind(&id)
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(rows.len(), 3, "one attempt each: {rows:?}");
    assert!(rows.iter().all(|(_, _, state)| state == "done"), "{rows:?}");
    assert!(
        rows.iter().any(|(_, claims, _)| *claims >= 2),
        "a task the killed worker held was taken over: {rows:?}"
    );
}

/// A graph whoever can write to the store hands the workers, whose task
/// has a check: the check never runs on a worker's host on the graph's
/// say-so — a worker whose agent has no sandboxed check of its own runs
/// none, and one that has runs only what the person's policy allows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_graphs_check_never_runs_on_a_workers_host() {
    let Some(server) = rein_testing::postgres::server() else {
        return;
    };
    let url = server.database();
    let model = model(Duration::from_millis(10)).await;
    let base = format!("{}/v1", model.base_url());
    let outside = tempfile::tempdir().unwrap();
    let mark = outside.path().join("ran-on-the-host");
    let graph_text = format!(
        "[[task]]\nid = \"a\"\nbrief = \"Say APPLE.\"\noutputs = [\"answer\"]\nverify = [\"sh\", \"-c\", \"touch {} ; env > {}.env\"]\n",
        mark.display(),
        mark.display()
    );
    for config in [
        "",
        "[agent.verify]\ncommand = [\"true\"]\n[commands]\ndefault = \"allow\"\n",
    ] {
        let home = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        let graph = home.path().join("graph.toml");
        std::fs::write(&graph, &graph_text).unwrap();
        let mut cmd = rein_at(home.path());
        cmd.env("PGPASSWORD", "a-worker-secret")
            .args(["--store", &url, "worker", "--base-url", &base, "--root"])
            .arg(root.path());
        let (mut worker, _said) = spawn_with_lines(cmd);
        let submitted = rein_at(home.path())
            .args(["--store", &url, "run", graph.to_str().unwrap(), "--detach"])
            .output()
            .unwrap();
        assert!(submitted.status.success(), "{}", stderr(&submitted));
        let id = stdout(&submitted).trim().to_owned();
        let (h, u) = (home.path().to_owned(), url.clone());
        let watched = tokio::task::spawn_blocking(move || {
            rein_at(&h)
                .args(["--store", &u, "run", "--watch", &id])
                .output()
                .unwrap()
        });
        let watched = tokio::time::timeout(Duration::from_secs(120), watched)
            .await
            .expect("the graph ended")
            .unwrap();
        worker.kill().unwrap();
        worker.wait().unwrap();
        let said = format!("{}{}", stdout(&watched), stderr(&watched));
        assert!(
            !mark.exists(),
            "a stored graph's check ran on the host: {said}"
        );
        assert!(
            said.contains("command_forbidden")
                || said.contains("not a command the person's policy"),
            "{said}"
        );
    }
}
