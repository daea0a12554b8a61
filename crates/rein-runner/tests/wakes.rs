//! What wakes a conversation: a post to the session's inbox from this
//! process is heard at once — at the next step boundary, and by an open
//! model stream — not at the next look for posts from another process
//! (`INBOX_POLL`). Run on tokio's paused clock over the in-memory store, so
//! "at once" is exact: the clock moves only when everything waits.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

use crate::common::{call, calls, profile, says};
use futures::StreamExt;
use rein_gateway::{Capabilities, EventStream, Provider};
use rein_runner::{Conversation, INBOX_POLL, TurnOutcome};
use rein_sessions::{InboxItem, MemoryStore, Store};
use rein_testing::{FakeProvider, FakeToolBackend, ScriptedMessage};
use rein_wire::Request;
use serde_json::json;

/// One scripted answer: what the provider posts to the session's inbox
/// (as another surface in this process would) when the call opens, and
/// whether its stream then stalls instead of ending.
struct Answer {
    message: ScriptedMessage,
    posts: Option<InboxItem>,
    stalls: bool,
}

/// A provider that posts to the conversation's own inbox mid-call.
struct Posting {
    store: Arc<dyn Store>,
    session: OnceLock<String>,
    answers: Mutex<VecDeque<Answer>>,
    seen: FakeProvider,
}

impl Provider for Posting {
    fn name(&self) -> &str {
        "posting"
    }

    fn capabilities(&self) -> Capabilities {
        self.seen.capabilities()
    }

    fn stream(&self, request: Request) -> EventStream {
        drop(self.seen.stream(request));
        let answer = self.answers.lock().unwrap().pop_front().unwrap();
        let store = self.store.clone();
        let session = self.session.get().unwrap().clone();
        let posted = futures::stream::once(async move {
            if let Some(item) = answer.posts {
                store.post(&session, item).await.unwrap();
            }
        })
        .filter_map(|()| async { None });
        let events = futures::stream::iter(answer.message.events().into_iter().map(Ok));
        let stall = futures::stream::pending().take(usize::from(answer.stalls));
        Box::pin(posted.chain(events).chain(stall))
    }
}

async fn opened(answers: Vec<Answer>) -> (Conversation, Arc<Posting>) {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let provider = Arc::new(Posting {
        store: store.clone(),
        session: OnceLock::new(),
        answers: Mutex::new(answers.into()),
        seen: FakeProvider::default(),
    });
    let backend = Arc::new(FakeToolBackend::new(&[("a.rs", "fn a() {}")]).unwrap());
    let conv = Conversation::open(store, provider.clone(), backend, profile(), None)
        .await
        .unwrap();
    provider.session.set(conv.session_id().to_owned()).unwrap();
    (conv, provider)
}

#[tokio::test(start_paused = true)]
async fn a_stop_posted_in_this_process_cuts_an_open_stream_at_once() {
    let (mut conv, _provider) = opened(vec![Answer {
        message: ScriptedMessage::text(&["Thinking it", " over"]),
        posts: Some(InboxItem::Stop {
            by: "the page".into(),
        }),
        stalls: true,
    }])
    .await;
    let began = tokio::time::Instant::now();
    let outcome = conv.turn("think").await.unwrap();
    assert_eq!(outcome, TurnOutcome::Interrupted);
    // Heard when posted, not at the next look for another process's post.
    assert!(
        began.elapsed() < INBOX_POLL,
        "the stop waited {:?} on the paused clock",
        began.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn words_posted_in_this_process_reach_the_very_next_request() {
    let said = "only look at .rs files";
    let (mut conv, provider) = opened(vec![
        Answer {
            message: calls(vec![call("c1", "list_files", json!({}))]),
            posts: Some(InboxItem::Say {
                text: said.into(),
                by: "the page".into(),
            }),
            stalls: false,
        },
        Answer {
            message: says("Done."),
            posts: None,
            stalls: false,
        },
    ])
    .await;
    let outcome = conv.turn("look around").await.unwrap();
    assert_eq!(
        outcome,
        TurnOutcome::Finished {
            reply: "Done.".into()
        }
    );
    // The whole turn ran without the clock moving: only the post itself
    // could have made the step boundary look at the inbox again.
    let second = serde_json::to_string(&provider.seen.requests()[1].messages).unwrap();
    assert!(second.contains(said), "{second}");
}
