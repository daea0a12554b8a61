//! Steering: say something mid-turn, or interrupt. The handle is cheap to
//! clone and may be used from any thread; what it sends lands at the next
//! step boundary and is recorded in the log. A steer is text, never
//! permission.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// A handle to steer a running conversation.
#[derive(Debug, Clone, Default)]
pub struct Steering {
    said: Arc<Mutex<VecDeque<String>>>,
    interrupted: Arc<AtomicBool>,
    /// Wakes a loop waiting on an open stream or a batch of sub-agents.
    woken: Arc<Notify>,
}

impl Steering {
    /// Say something; the model sees it at the next step.
    pub fn say(&self, text: impl Into<String>) {
        self.said
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(text.into());
        self.woken.notify_one();
    }

    /// Stop the turn at the next step boundary.
    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
        self.woken.notify_one();
    }

    /// Until something was said or an interrupt asked for (at once when
    /// one came since the last wait).
    pub(crate) async fn woken(&self) {
        self.woken.notified().await;
    }

    pub(crate) fn take_said(&self) -> Vec<String> {
        self.said
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect()
    }

    /// Whether an interrupt waits to be taken (the turn's sub-agents are
    /// stopped when one does).
    pub(crate) fn is_interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    pub(crate) fn take_interrupt(&self) -> bool {
        self.interrupted.swap(false, Ordering::SeqCst)
    }
}
