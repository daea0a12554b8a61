//! Codex's app server resumed, against a stand-in speaking its protocol (a
//! Python script: real process, real pipes): a thread taken back with
//! `thread/resume` waits for its first turn, and words said while the
//! resume is still under way start that turn only once the thread is
//! resumed — never a `turn/start` on a thread the server has not loaded.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rein_host::acp::AcpAsk;
use rein_host::person::{Answer, Person, Question};
use rein_host::{CodexStream, Ended, HostSpec, Recorder, Stays};
use rein_sessions::{InboxItem, SqliteStore, Store};
use tokio_util::sync::CancellationToken;

/// An app server that notes each method it hears, answers `thread/resume`
/// a second late (reading on meanwhile, as a server does), refuses a turn
/// on a thread it has not resumed, and answers each turn "Noted: " and its
/// words.
const STAND_IN: &str = r#"
import json, sys, threading
heard = open(sys.argv[1], "a")
lock = threading.Lock()
resumed = threading.Event()
def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()
def resume(id, thread):
    resumed.set()
    send({"id": id, "result": {"thread": {"id": thread}}})
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    params = message.get("params") or {}
    if method == "turn/start" and not resumed.is_set():
        heard.write("turn/start before the thread was resumed\n")
        heard.flush()
        send({"id": message["id"], "error": {"code": -32600, "message": "thread not loaded"}})
        continue
    heard.write(method + "\n")
    heard.flush()
    if "id" not in message:
        continue
    if method == "thread/resume":
        threading.Timer(1.0, resume, (message["id"], params["threadId"])).start()
    elif method == "turn/start":
        turn = {"id": "turn-1"}
        words = params["input"][0]["text"]
        send({"id": message["id"], "result": {"turn": turn}})
        send({"method": "turn/started", "params": {"turn": turn}})
        item = {"type": "agentMessage", "id": "m1", "text": "Noted: " + words}
        send({"method": "item/completed", "params": {"item": item}})
        send({"method": "turn/completed", "params": {"turn": dict(turn, status="completed")}})
    else:
        send({"id": message["id"], "result": {}})
"#;

/// Nobody answers here.
struct Nobody;

impl Person for Nobody {
    fn ask(&self, _: Question) -> BoxFuture<'static, Option<Answer>> {
        Box::pin(async { None })
    }
}

#[tokio::test]
async fn words_said_while_a_thread_resumes_start_its_turn_once_it_is_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("app-server.py");
    std::fs::write(&script, STAND_IN).unwrap();
    let heard = dir.path().join("heard.log");
    let argv = vec![
        "python3".into(),
        script.display().to_string(),
        heard.display().to_string(),
    ];
    let spec = HostSpec::new(argv, dir.path().to_path_buf()).env_from(["PATH"]);
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let mut recorder = Recorder::start(store.clone(), "codex", "codex", "(resumed)")
        .await
        .unwrap();
    let session = recorder.session().to_owned();
    // Said while the server is still resuming the thread.
    let saying = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let said = InboxItem::Say {
            text: "second question".into(),
            by: "test".into(),
        };
        store.post(&session, said).await.unwrap();
    });
    let (answers, mut answered) = tokio::sync::mpsc::unbounded_channel();
    let ask = AcpAsk {
        prompt: String::new(),
        person: Arc::new(Nobody),
        view: None,
        stays: Some(Stays {
            idle: Duration::from_secs(2),
            answers: Some(answers),
            switchable: false,
            resumed: true,
        }),
    };
    let mut reducer = CodexStream::new("");
    let driven = rein_host::codex_app::resume_codex_app(
        &spec,
        "thread-1",
        ask,
        &mut reducer,
        Some(&mut recorder),
        &mut |_| {},
        CancellationToken::new(),
    )
    .await
    .unwrap();
    saying.await.unwrap();
    assert_eq!(driven.ended, Ended::Finished, "{:?}", driven.outcome);
    assert_eq!(
        answered.recv().await.as_deref(),
        Some("Noted: second question")
    );
    let heard = std::fs::read_to_string(&heard).unwrap();
    assert_eq!(
        heard.lines().collect::<Vec<_>>(),
        ["initialize", "initialized", "thread/resume", "turn/start"],
        "{heard}"
    );
}
