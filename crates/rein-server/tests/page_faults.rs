//! The page when the server cannot read a conversation's log (in
//! Chromium): the list still shows it, as unreadable, and opening it says
//! why.

use crate::browser::Browser;
use crate::page::serve_shaped;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_the_server_cannot_read_is_said_on_the_page() {
    let (addr, login, _backend, dir) = serve_shaped(|server| server).await;
    let browser = Browser::start().await;
    browser.new_conversation(addr, &login).await;
    browser.type_in("#say", "hello").await;
    browser.click("#send").await;
    browser
        .until(
            "document.getElementById('log').innerText.includes('answers from the page')",
            "the answer",
        )
        .await;
    let id = browser.script("return location.hash.slice(1);").await;
    let id = id.as_str().unwrap().to_owned();
    crate::common::spoil_log_row(&dir.path().join("rein.db"), &id, 3);
    browser.script("location.reload(); return 1;").await;
    // Listed as one that cannot be read, the others still listed.
    browser
        .until(
            "document.getElementById('list').innerText.includes('unreadable')",
            "the conversation listed as unreadable",
        )
        .await;
    browser
        .until(
            "document.getElementById('status').innerText.includes('could not be opened: the store failed')",
            "the failed read said",
        )
        .await;
}
