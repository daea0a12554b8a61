//! Moving a store's contents into another (`rein store copy`): every
//! session whole — its log with the numbers and times it has, so an export
//! from either is the same bytes — and every artifact.
//!
//! A session the target already holds at the same length is skipped, so a
//! copy cut short can be run again; one it holds at another length is a
//! `conflict` and the copy stops there. Inboxes and leases stay behind: a
//! copy is made while no one drives the sessions.
//!
//! Not here: how each store puts a session (`Store::import`).

use rein_wire::AgentError;

use crate::store::{Store, read_all};

/// Artifacts listed per page.
const PAGE: usize = 1_000;

/// What a copy moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Copied {
    /// Sessions copied.
    pub sessions: u64,
    /// Their events.
    pub events: u64,
    /// Sessions the target held already, at the same length.
    pub skipped: u64,
    /// Artifacts copied (the same bytes are stored once).
    pub artifacts: u64,
}

/// Copy every session and artifact of `from` into `to`.
pub async fn copy(from: &dyn Store, to: &dyn Store) -> Result<Copied, AgentError> {
    let mut copied = Copied::default();
    let mut after: Option<String> = None;
    loop {
        let page = from.artifacts(after.as_deref(), PAGE).await?;
        for artifact in &page {
            let bytes = from
                .read_artifact(&artifact.hash, crate::Slice::Whole)
                .await?;
            to.put_artifact(&bytes, &artifact.media_type).await?;
            copied.artifacts += 1;
        }
        match page.last() {
            Some(last) if page.len() == PAGE => after = Some(last.hash.clone()),
            _ => break,
        }
    }
    // Oldest first, so the target's newest-first listing is the source's.
    let mut sessions = from.list_sessions(usize::MAX).await?;
    sessions.reverse();
    for info in sessions {
        let events = read_all(from, &info.id).await?;
        if let Ok(there) = to.session(&info.id).await
            && there.head_seq == events.len() as u64
        {
            copied.skipped += 1;
            continue;
        }
        copied.events += events.len() as u64;
        to.import(&info, events).await?;
        copied.sessions += 1;
    }
    Ok(copied)
}
