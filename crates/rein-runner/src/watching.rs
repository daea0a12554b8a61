//! Watching a conversation's live events from a task of its own, to the
//! turn's last event: a watcher told the turn is over takes what is still
//! in the channel before it ends, so the last events (`Usage`,
//! `TurnFinished`) are never cut off with it, as aborting it would.
//!
//! Not here: the channel itself (`Conversation::subscribe`).

use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio_util::sync::CancellationToken;

use crate::UiEvent;

/// Give each event of `events` to `each` until `done` is cancelled, then
/// each event still in the channel; a watcher that fell behind skips what
/// it lost. Cancel `done` once the turn has sent its last event, then
/// await the task this runs on.
pub async fn hand_on(
    mut events: broadcast::Receiver<UiEvent>,
    done: CancellationToken,
    mut each: impl FnMut(UiEvent),
) {
    loop {
        tokio::select! {
            biased;
            event = events.recv() => match event {
                Ok(event) => each(event),
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            },
            () = done.cancelled() => break,
        }
    }
    loop {
        match events.try_recv() {
            Ok(event) => each(event),
            Err(TryRecvError::Lagged(_)) => {}
            Err(TryRecvError::Empty | TryRecvError::Closed) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::broadcast;
    use tokio_util::sync::CancellationToken;

    use super::hand_on;
    use crate::{AgentPath, UiEvent, UiKind};

    fn said(text: &str) -> UiEvent {
        UiEvent {
            agent: AgentPath::main(),
            kind: UiKind::TextDelta {
                text: text.to_owned(),
            },
        }
    }

    /// Events sent just before `done` are handed on, even when the watcher
    /// had not run at all before it was told.
    #[tokio::test(flavor = "current_thread")]
    async fn what_was_sent_before_done_is_handed_on() {
        let (tx, rx) = broadcast::channel(16);
        let done = CancellationToken::new();
        let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
        let watcher = tokio::spawn(hand_on(rx, done.clone(), move |e| {
            let _ = seen_tx.send(e);
        }));
        for text in ["a", "b", "c"] {
            let _ = tx.send(said(text));
        }
        done.cancel();
        watcher.await.unwrap();
        let mut texts = Vec::new();
        while let Ok(UiEvent {
            kind: UiKind::TextDelta { text },
            ..
        }) = seen.try_recv()
        {
            texts.push(text);
        }
        assert_eq!(texts, ["a", "b", "c"]);
    }
}
