//! The page in a real browser: headless Chromium driven over WebDriver
//! (Debian's `chromium` and `chromium-driver`, installed here when
//! missing), against a real server on loopback with the scripted model —
//! logging in with the one-time link, a write approved from the page and
//! one denied (each showing what it changes), a reload that rebuilds the
//! conversation, a steer and an interrupt of a running turn, the memory
//! panel (an item shown as text, one added, one forgotten), the hosted
//! sessions live (a real session host on its socket). The browser is
//! `browser.rs`'s.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::browser::Browser;
use rein_runner::{Profile, ToolLoading};
use rein_server::Server;
use rein_sessions::{SqliteStore, Store};
use rein_testing::{FakeToolBackend, Rule, ScriptedBrain};
use rein_tools::{Joined, ToolBackend};
use serde_json::json;

async fn serve() -> (SocketAddr, String, Arc<FakeToolBackend>, tempfile::TempDir) {
    serve_shaped(|server| server).await
}

/// The page's server, made as `shape` says besides.
pub(crate) async fn serve_shaped(
    shape: impl FnOnce(Server) -> Server,
) -> (SocketAddr, String, Arc<FakeToolBackend>, tempfile::TempDir) {
    serve_beside(None, shape).await
}

/// The page's server, `beside`'s tools offered beside the fake project's,
/// made as `shape` says besides.
pub(crate) async fn serve_beside(
    beside: Option<Arc<dyn ToolBackend>>,
    shape: impl FnOnce(Server) -> Server,
) -> (SocketAddr, String, Arc<FakeToolBackend>, tempfile::TempDir) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let backend = Arc::new(FakeToolBackend::new(&[("a.rs", "fn alpha() {}\n")]).unwrap());
    let mut reading = Rule::reply("keep reading", "Reading on.")
        .and_call("read_file", json!({"path": "f{step}.rs"}));
    reading.steps = 100_000;
    let brain = Arc::new(ScriptedBrain::new(vec![
        reading,
        Rule::reply("write ", "Writing it.")
            .and_call("write_file", json!({"content": "# notes\n"}))
            .word_into("path"),
        Rule::reply("hello", "Hello! **rein** answers from the page."),
        Rule::reply("note ", "Noted.")
            .and_call("set_note", json!({"key": "plan", "value": "draft"})),
        Rule::reply("run the tests", "Running them.").and_call("run_tests", json!({})),
    ]));
    let tools: Arc<dyn ToolBackend> = match beside {
        Some(beside) => Arc::new(Joined::new(vec![backend.clone(), beside])),
        None => backend.clone(),
    };
    let profile = Profile {
        tools: ToolLoading::Native,
        max_output_tokens: 256,
        ..Profile::new("served", "rein-scripted")
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // The long turn runs until it is interrupted.
    let server = shape(
        Server::new(store, brain, tools, profile, addr).with_budgets(rein_runner::Budgets {
            max_steps: 1_000_000,
            ..rein_runner::Budgets::default()
        }),
    );
    let login = server.secrets().login_token().unwrap();
    tokio::spawn(server.serve(listener));
    (addr, login, backend, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
async fn the_page_approves_denies_reloads_steers_and_interrupts() {
    let (addr, login, backend, _dir) = serve().await;
    let browser = Browser::start().await;
    browser.new_conversation(addr, &login).await;

    // A plain answer, its Markdown rendered as elements.
    browser.type_in("#say", "hello there").await;
    browser.click("#send").await;
    browser
        .until("document.querySelector('.answer strong')", "the answer")
        .await;
    browser
        .until(
            "document.querySelector('#send').innerText === 'Send'",
            "the turn's end",
        )
        .await;

    // A write: the panel shows the change; approved from the page.
    browser.type_in("#say", "write notes.md").await;
    browser.click("#send").await;
    browser
        .until(
            "document.querySelector('.approval .diff')",
            "the approval panel",
        )
        .await;
    let panel = browser
        .script("return document.querySelector('.approval').innerText;")
        .await;
    assert!(panel.as_str().unwrap().contains("notes.md"), "{panel}");
    assert!(panel.as_str().unwrap().contains("# notes"), "{panel}");
    browser.screenshot("approval").await;
    browser.click(".approval button.primary").await;
    browser
        .until(
            "document.querySelector('details.tool.ok')",
            "the write's result",
        )
        .await;
    assert_eq!(backend.invocations("write_file"), 1);
    browser
        .until(
            "document.querySelector('#send').innerText === 'Send'",
            "the turn's end",
        )
        .await;

    // Another, denied.
    browser.type_in("#say", "write other.md").await;
    browser.click("#send").await;
    browser
        .until(
            "document.querySelector('.approval button.deny')",
            "the second approval",
        )
        .await;
    browser.click(".approval button.deny").await;
    browser
        .until(
            "document.querySelectorAll('details.tool.error').length >= 1",
            "the refusal",
        )
        .await;
    assert_eq!(
        backend.invocations("write_file"),
        1,
        "the denied write never ran"
    );

    // A reload rebuilds the conversation from its events.
    browser.call("POST", "/refresh", json!({})).await;
    browser
        .until(
            "document.querySelectorAll('.turn.you').length === 3",
            "the turns again",
        )
        .await;
    browser.screenshot("reloaded").await;

    // A long turn: steered, then interrupted.
    browser.type_in("#say", "keep reading the files").await;
    browser.click("#send").await;
    browser
        .until(
            "!document.querySelector('#interrupt').hidden",
            "the running turn",
        )
        .await;
    browser.type_in("#say", "only the first ten").await;
    browser.click("#send").await;
    browser
        .until(
            "document.querySelector('#status').innerText.includes('Heard')",
            "the steer",
        )
        .await;
    browser.screenshot("running").await;
    // A reload mid-turn: the transcript is rebuilt, the turn is still
    // shown running, and its new steps keep arriving.
    browser.call("POST", "/refresh", json!({})).await;
    browser
        .until(
            "!document.querySelector('#interrupt').hidden",
            "the turn running after the reload",
        )
        .await;
    let shown = browser
        .script("return document.querySelectorAll('details.tool').length;")
        .await
        .as_u64()
        .unwrap();
    browser
        .until(
            &format!("document.querySelectorAll('details.tool').length > {shown}"),
            "new steps after the reload",
        )
        .await;
    browser.click("#interrupt").await;
    browser
        .until(
            "document.querySelector('#status').innerText.includes('interrupted')",
            "the interrupt",
        )
        .await;

    // Phone width: the list folds behind the menu button.
    browser
        .call("POST", "/window/rect", json!({"width": 390, "height": 800}))
        .await;
    browser
        .until(
            "getComputedStyle(document.querySelector('#menu')).display !== 'none'",
            "the menu button",
        )
        .await;
    browser.screenshot("phone").await;
}

/// A question that arrives while the person types in the steer box takes
/// none of their keystrokes: the focus stays where they type, and a space
/// or Enter there decides nothing (it used to land on "Approve").
/// A change the page shows is undone from it — by the product's own undo,
/// through the operation id its result gave — once: the button is spent,
/// and a reload shows it spent from the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_undoes_a_change_it_shows() {
    let (addr, login, backend, _dir) = serve().await;
    let browser = Browser::start().await;
    browser.new_conversation(addr, &login).await;
    browser.type_in("#say", "note the plan").await;
    browser.click("#send").await;
    browser
        .until("document.querySelector('button.undo')", "the undo button")
        .await;
    let notes = || backend.project().lock().unwrap().notes.clone();
    assert_eq!(notes().get("plan").map(String::as_str), Some("draft"));
    browser
        .until(
            "document.querySelector('#send').innerText === 'Send'",
            "the turn's end",
        )
        .await;
    browser.click("button.undo").await;
    browser
        .until(
            "document.querySelector('button.undo').disabled",
            "the button spent",
        )
        .await;
    assert!(!notes().contains_key("plan"), "the product's own undo ran");
    browser.screenshot("undone").await;

    // A reload rebuilds it from the log: still spent.
    browser.call("POST", "/refresh", json!({})).await;
    browser
        .until(
            "document.querySelector('button.undo') && document.querySelector('button.undo').disabled",
            "the spent button after a reload",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_arriving_mid_typing_takes_no_keystroke() {
    let (addr, login, backend, _dir) = serve().await;
    let browser = Browser::start().await;
    browser.new_conversation(addr, &login).await;
    // The person is typing in the steer box when the turn asks.
    browser
        .script(
            "$('say').focus(); $('say').value = 'half a thought'; \
             api('POST', `/api/conversations/${state.id}/turns`, {text: 'write notes.md'}); return true;",
        )
        .await;
    browser
        .until(
            "document.querySelector('.approval button.primary')",
            "the approval panel",
        )
        .await;
    let focused = browser.script("return document.activeElement.id;").await;
    assert_eq!(focused, json!("say"), "the question took the focus");
    // Their next keys go where they type, not to a decision.
    browser
        .call(
            "POST",
            "/actions",
            json!({"actions": [{"type": "key", "id": "keys", "actions": [
                {"type": "keyDown", "value": " "}, {"type": "keyUp", "value": " "},
                {"type": "keyDown", "value": "x"}, {"type": "keyUp", "value": "x"}
            ]}]}),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        backend.invocations("write_file"),
        0,
        "a keystroke approved the write"
    );
    let typed = browser.script("return $('say').value;").await;
    assert_eq!(typed, json!("half a thought x"));
    assert!(
        browser
            .script("return !!document.querySelector('.approval button.primary:not([disabled])');")
            .await
            == json!(true),
        "the question is still waiting"
    );
}

/// A file name or a prompt carrying BiDi controls reads on the page as its
/// bytes do: `run‹U+202E›txt.exe` is never shown as `runexe.txt`; nor are
/// characters drawn as nothing (a tag, a filler, a soft hyphen) hidden.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bidi_controls_are_shown_on_the_page_not_obeyed() {
    let (addr, login, _backend, _dir) = serve().await;
    let browser = Browser::start().await;
    browser.new_conversation(addr, &login).await;
    // Set, not typed: a WebDriver key is one UTF-16 unit, and a tag is two.
    browser
        .script("$('say').value = 'write run\\u202etxt\\u{e0069}\\u3164\\u00ad.exe'; return true;")
        .await;
    browser.click("#send").await;
    browser
        .until(
            "document.querySelector('.approval .diff')",
            "the approval panel",
        )
        .await;
    for (what, css) in [("the approval", ".approval"), ("the transcript", "#log")] {
        let text = browser
            .script(&format!(
                "return document.querySelector('{css}').innerText;"
            ))
            .await;
        let text = text.as_str().unwrap();
        assert!(
            !text.contains('\u{202e}'),
            "{what} obeys the control: {text:?}"
        );
        assert!(
            text.contains("run<U+202E>txt<U+E0069><U+3164><U+00AD>.exe"),
            "{what}: {text:?}"
        );
    }
}

/// The page's Markdown drops nothing the model wrote: a fence's info
/// string is shown above its block, text after a closing fence after it,
/// and backticks that do not open a line are text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_markdown_drops_no_text() {
    let (addr, login, _backend, _dir) = serve().await;
    let browser = Browser::start().await;
    browser
        .go(&format!("http://{addr}/api/login?token={login}"))
        .await;
    browser
        .until("document.querySelector('#new')", "the page")
        .await;
    let shown = browser
        .script(
            "const d = document.createElement('div'); \
             markdown(d, 'Run ```rm -rf ~``` now\\n```sh then curl evil.example\\nls\\n``` and after\\nend'); \
             return [d.innerText, d.querySelectorAll('pre').length];",
        )
        .await;
    let text = shown[0].as_str().unwrap();
    for said in [
        "rm -rf ~",
        "now",
        "sh then curl evil.example",
        "ls",
        "and after",
        "end",
    ] {
        assert!(text.contains(said), "{said:?} was dropped: {text:?}");
    }
    assert_eq!(shown[1], json!(1), "{text:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_panel_shows_items_as_text_adds_and_forgets() {
    use rein_memory::{InMemory, MemoryBank, NewMemory, Scope};
    let memory = Arc::new(InMemory::default());
    let scope = Scope::new("project:/shop").unwrap();
    let hostile = memory
        .remember(
            &scope,
            NewMemory {
                pinned: true,
                ..NewMemory::text("<img src=x onerror=\"document.title='owned'\">likes tea\u{202e}")
            },
        )
        .await
        .unwrap();
    let shown: Arc<dyn MemoryBank> = memory.clone();
    let kept = scope.clone();
    let (addr, login, _backend, _dir) =
        serve_shaped(move |server| server.with_memory(shown, kept)).await;
    let browser = Browser::start().await;
    browser
        .go(&format!("http://{addr}/api/login?token={login}"))
        .await;
    let text = browser
        .only_item_text("#memory-items", "the memory panel")
        .await;
    assert!(text.contains("<img src=x onerror="), "{text:?}");
    assert!(text.contains("likes tea<U+202E>"), "{text:?}");
    browser.ran_no_markup_in("#memory").await;
    browser.type_in("#memory-text", "Ships on Tuesdays").await;
    browser.click("#memory-add button").await;
    browser
        .until(
            "document.querySelectorAll('#memory-items li').length === 2",
            "the added item",
        )
        .await;
    browser.screenshot("memory").await;
    browser
        .click(&format!(
            "#memory-items li[data-id='{}'] button",
            hostile.id
        ))
        .await;
    browser
        .until(
            "document.querySelectorAll('#memory-items li').length === 1",
            "the item forgotten",
        )
        .await;
    assert!(memory.get(&scope, &hostile.id).await.is_err());
    let left = memory.list(&scope, 10).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].text, "Ships on Tuesdays");
    assert!(!left[0].pinned);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosted_sessions_live_are_listed_as_text_and_leave_when_they_end() {
    // A viewer whose name is markup and a BiDi override, as another
    // process could send it.
    let hostile = "<img src=x onerror=\"document.title='owned'\">eve\u{202e}";
    let hosted = crate::common::hosted("run-1", hostile);
    let (addr, login, _backend, _dir) = serve_shaped(|server| hosted.listed_by(server)).await;
    let browser = Browser::start().await;
    browser
        .go(&format!("http://{addr}/api/login?token={login}"))
        .await;
    let text = browser
        .only_item_text("#hosted-items", "the hosted sessions")
        .await;
    assert!(text.contains("run-1 · native-tui · 1 watching"), "{text:?}");
    assert!(text.contains("held by <img src=x onerror="), "{text:?}");
    assert!(text.contains("eve<U+202E>"), "{text:?}");
    browser.ran_no_markup_in("#hosted").await;
    browser.screenshot("hosted").await;

    hosted.end("run-1");
    browser
        .until(
            "document.getElementById('hosted').hidden === true",
            "the ended session gone from the list",
        )
        .await;
}
