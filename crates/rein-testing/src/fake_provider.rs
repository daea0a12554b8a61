//! [`FakeProvider`]: scripted events, in process.

use std::collections::VecDeque;
use std::sync::Mutex;

use rein_gateway::{CachingStyle, Capabilities, EventStream, Provider};
use rein_wire::{AgentError, Request, StreamEvent, error::codes};

use crate::wire::ScriptedMessage;

/// One scripted call: the items its stream yields.
pub type ScriptedCallEvents = Vec<Result<StreamEvent, AgentError>>;

/// A provider that yields scripted events and records requests.
#[derive(Debug, Default)]
pub struct FakeProvider {
    script: Mutex<VecDeque<ScriptedCallEvents>>,
    requests: Mutex<Vec<Request>>,
}

impl FakeProvider {
    /// A provider answering calls with `calls`, in order.
    pub fn new(calls: Vec<ScriptedCallEvents>) -> Self {
        FakeProvider {
            script: Mutex::new(calls.into()),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// A provider answering with these messages, in order.
    pub fn from_messages(messages: &[ScriptedMessage]) -> Self {
        FakeProvider::new(
            messages
                .iter()
                .map(|m| m.events().into_iter().map(Ok).collect())
                .collect(),
        )
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Provider for FakeProvider {
    fn name(&self) -> &str {
        "fake"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            caching: CachingStyle::Explicit,
            max_cache_breakpoints: 4,
            context_window: 200_000,
            structured_output: false,
            token_counting: false,
        }
    }

    fn stream(&self, request: Request) -> EventStream {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request);
        let next = self
            .script
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()
            .unwrap_or_else(|| {
                vec![Err(AgentError::new(
                    codes::INTERNAL,
                    "FakeProvider: the script has no more calls",
                ))]
            });
        Box::pin(futures::stream::iter(next))
    }
}
