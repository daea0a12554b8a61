//! How a conversation is made from its definition: [`Agent::open`],
//! [`Agent::reopen`], [`Agent::reopen_kept`] and [`Agent::open_session`],
//! the one way every surface, sub-agent and graph task opens one
//! (`Conversation::start`).
//!
//! Not here: the definition itself (`crate::agent`).

use std::sync::Arc;

use rein_sessions::Store;
use rein_wire::AgentError;
use serde_json::{Value, json};

use super::{Conversation, KeptLog};
use crate::agent::Agent;

impl Agent {
    /// Open a new session with this definition.
    pub async fn open(&self, store: Arc<dyn Store>) -> Result<Conversation, AgentError> {
        self.open_session(store, None, Value::Null).await
    }

    /// Open `session` again with this definition (after a restart, in
    /// another process): a turn a crash cut short is recovered, a run whose
    /// authority changed is refused until a person accepts the change.
    /// (Going on with the open turn is [`Conversation::resume`].)
    pub async fn reopen(
        &self,
        store: Arc<dyn Store>,
        session: &str,
    ) -> Result<Conversation, AgentError> {
        self.open_session(store, Some(session), Value::Null).await
    }

    /// [`Agent::reopen`] the session `kept` is the log of, reading from the
    /// store only what came after it ([`Conversation::close_keeping`]): a
    /// surface that serves many turns of one conversation does not read
    /// its whole log before each.
    pub async fn reopen_kept(
        &self,
        store: Arc<dyn Store>,
        kept: KeptLog,
    ) -> Result<Conversation, AgentError> {
        let session = kept.session().to_owned();
        Conversation::start(self.clone(), store, Some(&session), Value::Null, Some(kept)).await
    }

    /// Open `existing` (or a new session recording `metadata`, to which the
    /// assistant's name and model are added when absent): the one
    /// composition root every surface goes through.
    pub async fn open_session(
        &self,
        store: Arc<dyn Store>,
        existing: Option<&str>,
        metadata: Value,
    ) -> Result<Conversation, AgentError> {
        let mut metadata = match metadata {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                let mut map = serde_json::Map::new();
                map.insert("app".into(), other);
                map
            }
        };
        metadata
            .entry("assistant")
            .or_insert_with(|| json!(self.profile.name));
        metadata
            .entry("model")
            .or_insert_with(|| json!(self.profile.model));
        Conversation::start(self.clone(), store, existing, Value::Object(metadata), None).await
    }
}
