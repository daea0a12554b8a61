//! The request a step sends: the stable prefix (frozen at the first
//! request, again only after the tools or the standing text changed at a
//! turn boundary), the projected transcript (extended step by step), and
//! its size and digest measured from what is new.
//!
//! Not here: sending it (`call`) or keeping it inside the window
//! (`pressure`).

use std::sync::Arc;

use rein_tools::ToolBackend;
use rein_wire::{AgentError, Request, SystemBlock};

use super::{Sees, Window};
use crate::conversation::builtins::{
    call_tool_spec, load_tool_spec, read_result_spec, read_skill_spec, server_info_spec,
};
use rein_context::project::project;

/// The request builder's own state: the stable prefix frozen at the first
/// request, the projector that extends the transcript step by step, and
/// the sealed messages' sizes and digests.
#[derive(Default)]
pub(crate) struct Transcript {
    /// The stable prefix (system blocks and tools), frozen at the first
    /// request so it stays byte-identical for the whole conversation —
    /// unless the backend's tools change, which it says only at a turn's
    /// start (`ToolBackend::turn_boundary`): then the next turn freezes it
    /// anew.
    frozen: Option<Arc<Prefix>>,
    /// The frozen prefix's fingerprint and size, measured once when it
    /// froze (every step sends it).
    facts: Option<rein_cache::PrefixFacts>,
    /// The standing text the prefix carries (the definition's `standing`,
    /// as read at the last turn boundary; `None` before the first read).
    standing: Option<Option<String>>,
    /// The transcript so far, extended step by step.
    projector: Option<rein_context::project::Projector>,
    /// JSON size and digest of each message of the transcript but the last
    /// (the projector only ever extends the last one), so a step measures
    /// only what is new; cleared whenever the projector is rebuilt.
    sealed: Vec<(u64, blake3::Hash)>,
}

/// A stable prefix: the system blocks and the tools.
type Prefix = (Vec<SystemBlock>, Vec<rein_wire::ToolSpec>);

/// The frozen prefixes of this process's conversations, each held once:
/// conversations of one definition freeze the same prefix (the tools'
/// schemas are most of it), and ten thousand open ones keep one copy, not
/// ten thousand. A prefix is shared only when it is the same, compared
/// whole (not by its fingerprint alone); the table holds no prefix alive
/// and drops the entries of prefixes no conversation holds any more.
struct Frozen {
    by_fingerprint: std::collections::HashMap<String, std::sync::Weak<Prefix>>,
    /// Entries at which the table is next swept of dropped prefixes.
    sweep_at: usize,
}

static FROZEN: std::sync::Mutex<Option<Frozen>> = std::sync::Mutex::new(None);

/// `fresh`, or the same prefix another conversation froze already.
fn shared(fresh: Prefix, fingerprint: &str) -> Arc<Prefix> {
    let mut table = FROZEN.lock().unwrap_or_else(|p| p.into_inner());
    let table = table.get_or_insert_with(|| Frozen {
        by_fingerprint: std::collections::HashMap::new(),
        sweep_at: 64,
    });
    if let Some(held) = table
        .by_fingerprint
        .get(fingerprint)
        .and_then(std::sync::Weak::upgrade)
        && *held == fresh
    {
        return held;
    }
    let fresh = Arc::new(fresh);
    table
        .by_fingerprint
        .insert(fingerprint.to_owned(), Arc::downgrade(&fresh));
    if table.by_fingerprint.len() >= table.sweep_at {
        table
            .by_fingerprint
            .retain(|_, held| held.strong_count() > 0);
        table.sweep_at = (table.by_fingerprint.len() * 2).max(64);
    }
    fresh
}

/// What a closed conversation's transcript carries to the next open of
/// the same session in this process ([`crate::KeptLog`]): the projection
/// so far and the sealed messages' sizes and digests, so a turn does not
/// project and measure the whole history again. Valid only with the log it
/// was made from: the open drops it when the kept log is not the store's.
#[derive(Debug, Clone)]
pub(crate) struct Carried {
    projector: rein_context::project::Projector,
    sealed: Vec<(u64, blake3::Hash)>,
}

impl Carried {
    /// The last sequence number it was made from.
    pub(crate) fn seen(&self) -> u64 {
        self.projector.seen
    }
}

impl Transcript {
    /// What the next open of this session can go on from (`None` before
    /// the first request).
    pub(crate) fn carried(&mut self) -> Option<Carried> {
        let projector = self.projector.take()?;
        Some(Carried {
            projector,
            sealed: std::mem::take(&mut self.sealed),
        })
    }

    /// Go on from what an earlier conversation over the same log carried.
    pub(crate) fn carry(&mut self, carried: Carried) {
        self.projector = Some(carried.projector);
        self.sealed = carried.sealed;
    }

    /// Let the next request freeze the prefix again: the backend's tools
    /// changed at a turn boundary.
    pub(crate) fn refreeze(&mut self) {
        self.frozen = None;
        self.facts = None;
    }

    /// Take `standing` as the prefix's standing text (the next request
    /// freezes the prefix anew when it is new); whether it changed since
    /// an earlier read — the first read is no change to tell.
    pub(crate) fn stand(&mut self, standing: Option<String>) -> bool {
        let standing = standing.map(crate::standing::bounded);
        let before = self.standing.replace(standing.clone());
        if before.as_ref() == Some(&standing) {
            return false;
        }
        self.refreeze();
        before.is_some()
    }

    /// The frozen prefix's facts (`None` before the first request).
    pub(crate) fn prefix_facts(&self) -> Option<&rein_cache::PrefixFacts> {
        self.facts.as_ref()
    }

    /// Whether a prefix is frozen (a request was made in this process).
    pub(crate) fn is_frozen(&self) -> bool {
        self.frozen.is_some()
    }

    /// The transcript for `path`, fed only what is new since the last step
    /// when the path merely grew and nothing was compacted; rebuilt otherwise.
    fn messages(&mut self, events: &crate::Log, path: &[String]) -> Vec<Arc<rein_wire::Message>> {
        let mut projector = match self.projector.take() {
            Some(mut p) if p.covers(events.compactions(), path) => {
                p.extend_path(path);
                p
            }
            _ => {
                self.sealed.clear();
                rein_context::project::Projector::new(events, path)
            }
        };
        let start = events.partition_point(|e| e.seq <= projector.seen);
        for stored in &events[start..] {
            projector.feed(stored);
        }
        debug_assert!(
            projector
                .messages
                .iter()
                .map(|m| &**m)
                .eq(project(events, path).iter()),
            "the incremental projection drifted from the full one"
        );
        // Shared, not copied: the next step's feed copies the last message
        // only if this request (or the gateway) still holds it then.
        let messages = projector.messages.clone();
        self.projector = Some(projector);
        messages
    }

    /// The request's JSON size and a digest of it, computed from the sealed
    /// messages' cached sizes and digests plus what is new: the last
    /// message and the rest of the request. The size is exactly that of the
    /// request's JSON; the digest is blake3 over the parts' digests.
    pub(super) fn size_and_digest(&mut self, request: &mut Request) -> (u64, String) {
        let n = request.messages.len();
        self.sealed.truncate(n.saturating_sub(1));
        while self.sealed.len() + 1 < n {
            let message = &request.messages[self.sealed.len()];
            self.sealed
                .push(rein_context::window::size_and_hash(message));
        }
        let mut hasher = blake3::Hasher::new();
        let mut bytes: u64 = 0;
        for (size, hash) in &self.sealed {
            bytes += size;
            hasher.update(hash.as_bytes());
        }
        if let Some(last) = request.messages.last() {
            let (size, hash) = rein_context::window::size_and_hash(last);
            bytes += size;
            hasher.update(hash.as_bytes());
        }
        // `"messages":[]` in the rest becomes `[m1,m2,...]`: add the commas.
        bytes += n.saturating_sub(1) as u64;
        let messages = std::mem::take(&mut request.messages);
        let (size, hash) = rein_context::window::size_and_hash(&*request);
        request.messages = messages;
        bytes += size;
        hasher.update(hash.as_bytes());
        debug_assert_eq!(
            Some(bytes),
            serde_json::to_vec(&*request).ok().map(|b| b.len() as u64),
            "the incremental request size drifted from the request's JSON"
        );
        (bytes, hasher.finalize().to_hex().to_string())
    }
}

impl Window {
    /// The request the next step sends for `events`.
    pub(crate) fn request(
        &mut self,
        sees: Sees<'_>,
        events: &crate::Log,
    ) -> Result<Request, AgentError> {
        let turns_path = events.path();
        let mut request = Request::new(sees.agent.profile.model.clone(), Vec::new());
        request.messages = self.transcript.messages(events, turns_path);
        crate::standing::without(&mut request.messages, &self.retracted);
        let frozen = match self.transcript.frozen.clone() {
            Some(frozen) => {
                // The stability guard (debug builds): the prefix must not
                // drift within a conversation (no timestamps, sorted maps
                // and tools).
                if cfg!(debug_assertions) {
                    let fresh =
                        sees.prefix(self.transcript.standing.as_ref().and_then(Option::as_deref));
                    debug_assert!(
                        *frozen == fresh,
                        "the stable prefix changed within a conversation: {} -> {}",
                        rein_cache::fingerprint(&frozen.0, &frozen.1),
                        rein_cache::fingerprint(&fresh.0, &fresh.1)
                    );
                }
                frozen
            }
            None => {
                let fresh =
                    sees.prefix(self.transcript.standing.as_ref().and_then(Option::as_deref));
                let facts = rein_cache::PrefixFacts::of(&fresh.0, &fresh.1);
                let frozen = shared(fresh, &facts.fingerprint);
                self.transcript.facts = Some(facts);
                self.transcript.frozen = Some(frozen.clone());
                frozen
            }
        };
        let (system, tools) = (frozen.0.clone(), frozen.1.clone());
        request.system = system;
        request.tools = tools;
        // The answer is given at most a quarter of the window, so a small
        // window (a local server's 8,192) keeps room for what is sent:
        // the whole reservation counts against the window.
        let quarter = u32::try_from(self.tokens(sees.agent) / 4)
            .unwrap_or(u32::MAX)
            .max(256);
        request.max_output_tokens = sees.agent.profile.max_output_tokens.min(quarter);
        request.sampling = sees.agent.profile.sampling.clone();
        // A model known not to reason refuses the setting (a 400 from its
        // API), so it is not sent; an unknown model gets it as asked.
        request.reasoning = sees.agent.profile.reasoning.filter(|_| {
            rein_wire::model_reasoning(&request.model) != rein_wire::ModelReasoning::DoesNot
        });
        if sees.words_only && !request.tools.is_empty() {
            request.tool_choice = Some(rein_wire::ToolChoice::None);
        }
        if let Some(schema) = &self.answer_schema {
            request.output_schema = Some(schema.clone());
        }
        Ok(request)
    }
}

impl Sees<'_> {
    /// The stable prefix as the profile and backend give it now, with
    /// `standing` text last among the system blocks.
    pub(crate) fn prefix(
        &self,
        standing: Option<&str>,
    ) -> (Vec<SystemBlock>, Vec<rein_wire::ToolSpec>) {
        let mut system: Vec<SystemBlock> = self
            .agent
            .profile
            .system
            .iter()
            .map(|text| SystemBlock { text: text.clone() })
            .collect();
        let mut tools = Vec::new();
        let catalog = self.tools.catalog(&self.agent.guards.policy);
        if self.agent.profile.tools.defers(catalog.len()) {
            // The catalog is sorted by name and has no volatile parts.
            let mut lines = format!("{}\n", self.agent.profile.wording.tool_catalog);
            for tool in &catalog {
                lines.push_str(&format!("- {}: {}\n", tool.name, tool.purpose));
            }
            system.push(SystemBlock { text: lines });
            tools = vec![load_tool_spec(), call_tool_spec()];
        } else {
            tools.extend(
                catalog
                    .into_iter()
                    .filter_map(|t| self.tools.definition(&t.name)),
            );
        }
        tools.push(read_result_spec());
        if self.agent.server_info {
            tools.push(server_info_spec());
        }
        if let Some(delegation) = &self.agent.delegation {
            let helpers: Vec<String> = delegation.helpers.keys().cloned().collect();
            tools.push(crate::delegation::delegate_spec(
                delegation.writes && self.agent.guards.policy.writes_allowed,
                &helpers,
            ));
        }
        let mut skills = self.tools.skills();
        if !skills.is_empty() {
            skills.sort_by(|a, b| a.name.cmp(&b.name));
            let mut lines = format!("{}\n", self.agent.profile.wording.skills);
            for skill in &skills {
                lines.push_str(&format!("- {}: {}\n", skill.name, skill.purpose));
            }
            system.push(SystemBlock { text: lines });
            tools.push(read_skill_spec());
        }
        if let Some(text) = standing {
            system.push(SystemBlock {
                text: text.to_owned(),
            });
        }
        (system, tools)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rein_wire::SystemBlock;

    use super::{Prefix, shared};

    fn prefix(text: &str) -> Prefix {
        (
            vec![SystemBlock {
                text: text.to_owned(),
            }],
            Vec::new(),
        )
    }

    /// The same prefix is held once; another under the same fingerprint
    /// (a collision, or a forged one) is never handed out for it.
    #[test]
    fn a_prefix_is_shared_only_with_the_same_prefix() {
        let first = shared(prefix("you help"), "shared-test");
        let again = shared(prefix("you help"), "shared-test");
        assert!(Arc::ptr_eq(&first, &again));
        let other = shared(prefix("you obey the file"), "shared-test");
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(other.0[0].text, "you obey the file");
        drop((first, again, other));
        let fresh = shared(prefix("you help"), "shared-test");
        assert_eq!(Arc::strong_count(&fresh), 1, "nothing held it alive");
    }
}
