//! A call's progress notes, taken off the server's connection as it is read
//! and handed to the call they name, in the order they came.
//!
//! rmcp runs each notification's handler in a task of its own, so a note a
//! server sends just before a call's answer could reach the call after the
//! answer, and be lost. [`Heard`] wraps the connection instead: a note is
//! filed while the connection is read, before the message after it is, so a
//! call that has its answer already has every note sent before it.
//!
//! Bounded: at most [`PER_CALL`] notes wait for one call (more are dropped;
//! progress is advisory) and notes for at most [`UNCLAIMED`] calls nobody has
//! asked for yet (a note may come before its call subscribes; a server's
//! notes for tokens no call holds are dropped oldest first).
//!
//! Not here: what a call does with a note (`tools.rs`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::RoleClient;
use rmcp::model::{
    JsonRpcMessage, JsonRpcNotification, ProgressNotificationParam, ProgressToken,
    ServerJsonRpcMessage, ServerNotification,
};
use rmcp::service::TxJsonRpcMessage;
use rmcp::transport::Transport;
use tokio::sync::mpsc;

/// The most notes kept for one call that has not read them yet.
pub(crate) const PER_CALL: usize = 256;
/// The most calls whose notes came before anyone asked for them.
pub(crate) const UNCLAIMED: usize = 64;

type Note = ProgressNotificationParam;

/// Every call's notes on one server.
#[derive(Default)]
pub(crate) struct Notes {
    book: Mutex<Book>,
}

#[derive(Default)]
struct Book {
    calls: HashMap<ProgressToken, Filed>,
    /// Tokens with notes and no subscriber yet, oldest first.
    unclaimed: VecDeque<ProgressToken>,
}

struct Filed {
    sender: mpsc::Sender<Note>,
    /// Here until a call subscribes and takes it.
    waiting: Option<mpsc::Receiver<Note>>,
}

impl Filed {
    fn new() -> (Filed, mpsc::Receiver<Note>) {
        let (sender, receiver) = mpsc::channel(PER_CALL);
        (
            Filed {
                sender,
                waiting: None,
            },
            receiver,
        )
    }
}

impl Notes {
    fn book(&self) -> MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// File a note heard on the connection.
    fn heard(&self, note: Note) {
        let mut book = self.book();
        let book = &mut *book;
        let token = note.progress_token.clone();
        if !book.calls.contains_key(&token) {
            if book.unclaimed.len() >= UNCLAIMED
                && let Some(oldest) = book.unclaimed.pop_front()
            {
                book.calls.remove(&oldest);
            }
            let (mut filed, receiver) = Filed::new();
            filed.waiting = Some(receiver);
            book.calls.insert(token.clone(), filed);
            book.unclaimed.push_back(token.clone());
        }
        if let Some(filed) = book.calls.get(&token) {
            // Full: the call is not reading; a progress note may be lost.
            let _ = filed.sender.try_send(note);
        }
    }

    /// The notes for the call holding `token`, those heard already first.
    pub(crate) fn subscribe(self: &Arc<Self>, token: ProgressToken) -> Subscription {
        let mut book = self.book();
        book.unclaimed.retain(|t| *t != token);
        let receiver = match book.calls.get_mut(&token).and_then(|f| f.waiting.take()) {
            Some(receiver) => receiver,
            None => {
                let (filed, receiver) = Filed::new();
                book.calls.insert(token.clone(), filed);
                receiver
            }
        };
        Subscription {
            notes: self.clone(),
            token,
            receiver,
        }
    }
}

/// One call's notes; dropping it forgets the call's token.
pub(crate) struct Subscription {
    notes: Arc<Notes>,
    token: ProgressToken,
    receiver: mpsc::Receiver<Note>,
}

impl Subscription {
    /// The next note, waiting for it.
    pub(crate) async fn next(&mut self) -> Option<Note> {
        self.receiver.recv().await
    }

    /// A note already here, without waiting.
    pub(crate) fn ready(&mut self) -> Option<Note> {
        self.receiver.try_recv().ok()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.notes.book().calls.remove(&self.token);
    }
}

/// A server's connection that files progress notes as they are read.
pub(crate) struct Heard<T> {
    inner: T,
    notes: Arc<Notes>,
}

impl<T> Heard<T> {
    pub(crate) fn new(inner: T, notes: Arc<Notes>) -> Heard<T> {
        Heard { inner, notes }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Heard<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(JsonRpcNotification {
            notification: ServerNotification::ProgressNotification(note),
            ..
        }) = &message
        {
            self.notes.heard(note.params.clone());
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    fn note(token: i64, done: f64) -> Note {
        ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), done)
    }

    #[test]
    fn notes_heard_before_the_call_subscribes_are_its_first() {
        let notes = Arc::new(Notes::default());
        notes.heard(note(1, 1.0));
        notes.heard(note(2, 9.0));
        let mut call = notes.subscribe(ProgressToken(NumberOrString::Number(1)));
        notes.heard(note(1, 2.0));
        let heard: Vec<f64> = std::iter::from_fn(|| call.ready())
            .map(|n| n.progress)
            .collect();
        assert_eq!(heard, [1.0, 2.0]);
        drop(call);
        let book = notes.book();
        assert_eq!(book.calls.len(), 1, "only the unclaimed call 2 is kept");
    }

    #[test]
    fn notes_nobody_asks_for_and_a_flood_for_one_call_are_bounded() {
        let notes = Arc::new(Notes::default());
        for token in 0..(UNCLAIMED as i64 * 3) {
            notes.heard(note(token, 1.0));
        }
        assert_eq!(notes.book().calls.len(), UNCLAIMED);
        // The oldest went first.
        let mut first = notes.subscribe(ProgressToken(NumberOrString::Number(0)));
        assert!(first.ready().is_none());
        let mut call = notes.subscribe(ProgressToken(NumberOrString::Number(-1)));
        for n in 0..(PER_CALL * 2) {
            notes.heard(note(-1, n as f64));
        }
        let heard = std::iter::from_fn(|| call.ready()).count();
        assert_eq!(heard, PER_CALL);
    }
}
