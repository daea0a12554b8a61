//! The session store as the place offloaded tool results go: the adapter
//! between `rein-tools`' one-method `ArtifactSink` and `rein-sessions`'
//! `Store`, so neither crate depends on the other.

use async_trait::async_trait;
use rein_sessions::Store;
use rein_tools::ArtifactSink;
use rein_wire::AgentError;

/// A store, lent as an artifact sink.
pub(crate) struct StoreArtifacts<'a>(pub(crate) &'a dyn Store);

#[async_trait]
impl ArtifactSink for StoreArtifacts<'_> {
    async fn put_artifact(&self, bytes: &[u8], media_type: &str) -> Result<String, AgentError> {
        Ok(self.0.put_artifact(bytes, media_type).await?.hash)
    }
}
