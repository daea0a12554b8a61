//! The page shows the task graphs posted here (in Chromium): each task's
//! state, what a task asks shown exactly and as text, decided with a click;
//! the graph's end.

use serde_json::json;

use crate::browser::Browser;
use crate::page::serve_shaped;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_graph_shows_its_tasks_and_a_question_decided_on_the_page() {
    let (addr, login, backend, _dir) = serve_shaped(|server| server).await;
    let browser = Browser::start().await;
    browser
        .go(&format!("http://{addr}/api/login?token={login}"))
        .await;
    browser
        .until(
            "document.getElementById('graphs').hidden === true",
            "no graphs shown before one is posted",
        )
        .await;
    // Posted from the page's own origin, as a product's page would. The
    // file name the model writes to is markup: shown as text, never run.
    let graph = json!({"task": [
        {"id": "greet", "brief": "hello"},
        {"id": "note", "brief": "write <b>bold</b><img/src=x/onerror=document.title='owned'>notes.md", "depends_on": ["greet"], "retries": 0}
    ]});
    browser
        .script(&format!(
            "fetch('/api/graphs', {{method: 'POST', headers: {{'content-type': 'application/json'}}, body: JSON.stringify({graph})}}); return 1;"
        ))
        .await;
    browser
        .until(
            "document.querySelector('#graph-items li[data-task=note] .ask button[data-decision=yes]')",
            "the note task's question with its yes",
        )
        .await;
    let shown = browser
        .script("return document.querySelector('#graph-items').innerText;")
        .await;
    let shown = shown.as_str().unwrap();
    assert!(shown.contains("greet · succeeded"), "{shown}");
    assert!(shown.contains("note · running"), "{shown}");
    assert!(shown.contains("asks to run write_file"), "{shown}");
    assert!(
        shown.contains("<b>bold</b><img/src=x/onerror=document.title='owned'>notes.md"),
        "the whole path, as text: {shown}"
    );
    assert!(shown.contains("# notes"), "the content too: {shown}");
    let bold = browser
        .script("return document.querySelectorAll('#graphs b').length;")
        .await;
    assert_eq!(bold, 0);
    browser.ran_no_markup_in("#graphs").await;
    assert_eq!(backend.invocations("write_file"), 0, "nothing ran unasked");
    browser.screenshot("graph-asks").await;

    browser
        .click("#graph-items li[data-task=note] .ask button[data-decision=yes]")
        .await;
    browser
        .until(
            "document.querySelector('#graph-items li .text').innerText.includes('succeeded')",
            "the graph shown succeeded",
        )
        .await;
    assert_eq!(backend.invocations("write_file"), 1);
}
