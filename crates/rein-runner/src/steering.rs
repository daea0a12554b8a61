//! Steering: say something mid-turn, or interrupt. The handle is cheap to
//! clone and may be used from any thread; what it sends lands at the next
//! step boundary and is recorded in the log. A steer is text, never
//! permission.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A handle to steer a running conversation.
#[derive(Debug, Clone, Default)]
pub struct Steering {
    said: Arc<Mutex<VecDeque<String>>>,
    interrupted: Arc<AtomicBool>,
}

impl Steering {
    /// Say something; the model sees it at the next step.
    pub fn say(&self, text: impl Into<String>) {
        self.said
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(text.into());
    }

    /// Stop the turn at the next step boundary.
    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
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
