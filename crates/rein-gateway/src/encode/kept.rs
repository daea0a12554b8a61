//! Each message's encoded bytes, kept between a conversation's requests.
//!
//! A conversation re-sends its whole transcript every step, and all of it
//! but what is new was encoded the step before: at 800 steps, escaping the
//! same strings again was a fifth of a step's CPU (perf on
//! `rein-peer-loop --n 800`). So the body is written as its frame (every
//! field but the transcript) with each message's bytes spliced in, and the
//! bytes of a message are kept for the next request of the same session.
//!
//! A kept entry is trusted only for the very message it was made from:
//! the entry holds the message's `Arc`, so while it is kept nobody can
//! change that message in place (`Arc::make_mut` copies a shared message,
//! `Arc::get_mut` refuses), and the same `Arc` in the next request is the
//! same content — one pointer comparison, where the runner's requests
//! share their messages step after step. Another `Arc` is compared by
//! value (a product that builds its requests afresh still gains), and a
//! message that changed — a compaction's summary in its place, an edit,
//! images replaced for a text-only model — is encoded again, never sent
//! stale. A request without a session id keeps nothing. Debug builds check
//! every spliced body against the plain encoding.
//!
//! Bounded: at most [`MAX_SESSIONS`] sessions (the least recently used is
//! dropped) and [`MAX_KEPT_BYTES`] of encoded bytes per session (beyond
//! it, the rest of a request is encoded as before and not kept).
//!
//! Not here: what a message's bytes are (each API's encoder decides; a
//! message's bytes depend only on the message and whether it carries a
//! cache breakpoint).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rein_wire::Message;

/// Sessions whose messages are kept, at most.
pub const MAX_SESSIONS: usize = 256;

/// Encoded bytes kept for one session, at most.
pub const MAX_KEPT_BYTES: usize = 32 << 20;

/// One message as it was encoded: the message, whether it carried a cache
/// breakpoint, and its bytes.
#[derive(Debug)]
struct Entry {
    message: Arc<Message>,
    marked: bool,
    bytes: Vec<u8>,
}

/// One session's kept messages, in transcript order.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    entries: Vec<Entry>,
    bytes: usize,
}

impl Kept {
    /// The bytes of each of `messages` (message `i` marked when
    /// `marked(i)`): kept ones where the message is unchanged, the rest
    /// encoded with `encode` and kept from then on (within the bound).
    pub(crate) fn chunks<E>(
        &mut self,
        messages: &[Arc<Message>],
        marked: impl Fn(usize) -> bool,
        encode: impl Fn(&Message, bool) -> Result<Vec<u8>, E>,
    ) -> Result<Vec<std::borrow::Cow<'_, [u8]>>, E> {
        // The longest run of unchanged messages from the start.
        let same = self
            .entries
            .iter()
            .zip(messages)
            .enumerate()
            .take_while(|(i, (entry, message))| {
                entry.marked == marked(*i)
                    && (Arc::ptr_eq(&entry.message, message) || entry.message == **message)
            })
            .count();
        // The same content in another `Arc`: hold the request's, so the
        // next request's comparison is a pointer one.
        for (entry, message) in self.entries.iter_mut().zip(messages).take(same) {
            if !Arc::ptr_eq(&entry.message, message) {
                entry.message = Arc::clone(message);
            }
        }
        for gone in self.entries.drain(same..) {
            self.bytes -= gone.bytes.len();
        }
        let mut fresh = Vec::new();
        for (i, message) in messages.iter().enumerate().skip(same) {
            let bytes = encode(message, marked(i))?;
            if fresh.is_empty() && self.bytes + bytes.len() <= MAX_KEPT_BYTES {
                self.bytes += bytes.len();
                self.entries.push(Entry {
                    message: Arc::clone(message),
                    marked: marked(i),
                    bytes,
                });
            } else {
                fresh.push(bytes);
            }
        }
        let mut out: Vec<std::borrow::Cow<'_, [u8]>> = self
            .entries
            .iter()
            .map(|e| std::borrow::Cow::Borrowed(e.bytes.as_slice()))
            .collect();
        out.extend(fresh.into_iter().map(std::borrow::Cow::Owned));
        Ok(out)
    }
}

/// The kept messages of the most recently used sessions.
#[derive(Debug, Default)]
pub struct EncodedCache {
    /// Most recently used first.
    sessions: Mutex<VecDeque<(String, Kept)>>,
}

impl EncodedCache {
    /// Take `session`'s kept messages out (empty if none), so encoding
    /// runs without the lock; give them back with [`EncodedCache::put`].
    pub(crate) fn take(&self, session: &str) -> Kept {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        match sessions.iter().position(|(id, _)| id == session) {
            Some(at) => sessions
                .remove(at)
                .map(|(_, kept)| kept)
                .unwrap_or_default(),
            None => Kept::default(),
        }
    }

    /// Keep `kept` for `session`, dropping the least recently used
    /// session beyond [`MAX_SESSIONS`].
    pub(crate) fn put(&self, session: String, kept: Kept) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.retain(|(id, _)| *id != session);
        sessions.push_front((session, kept));
        sessions.truncate(MAX_SESSIONS);
    }

    /// How many sessions have messages kept.
    pub fn sessions(&self) -> usize {
        self.sessions.lock().map(|s| s.len()).unwrap_or(0)
    }
}

/// `frame` (a body whose `key` array is empty) with `chunks` spliced into
/// that array, comma-separated (empty chunks left out).
pub(crate) fn splice(frame: &[u8], key: &str, chunks: &[std::borrow::Cow<'_, [u8]>]) -> Vec<u8> {
    let marker = format!("\"{key}\":[]");
    let Some(at) = top_level(frame, marker.as_bytes()) else {
        debug_assert!(false, "the frame has no empty {key} array");
        return frame.to_vec();
    };
    let open = at + marker.len() - 1;
    let total: usize = chunks.iter().map(|c| c.len() + 1).sum();
    let mut out = Vec::with_capacity(frame.len() + total);
    out.extend_from_slice(&frame[..open]);
    let mut first = true;
    for chunk in chunks.iter().filter(|c| !c.is_empty()) {
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&frame[open..]);
    out
}

/// Where `marker` first starts in `json` as a member of the outermost
/// object: not inside a string, not in a nested object (a tool's schema
/// may well have a `"messages":[]` of its own).
fn top_level(json: &[u8], marker: &[u8]) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, &b) in json.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' if depth == 1 && json[i..].starts_with(marker) => return Some(i),
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use rein_wire::Message;

    use super::*;

    fn arcs(messages: Vec<Message>) -> Vec<Arc<Message>> {
        messages.into_iter().map(Arc::new).collect()
    }

    fn encode(m: &Message, marked: bool) -> Result<Vec<u8>, ()> {
        Ok(format!("{}{}", m.text(), if marked { "!" } else { "" }).into_bytes())
    }

    fn texts(chunks: &[Cow<'_, [u8]>]) -> Vec<String> {
        chunks
            .iter()
            .map(|c| String::from_utf8(c.to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn an_unchanged_message_is_reused_and_a_changed_one_encoded_again() {
        let mut kept = Kept::default();
        let a = arcs(vec![Message::user("a"), Message::assistant("b")]);
        assert_eq!(
            texts(&kept.chunks(&a, |_| false, encode).unwrap()),
            ["a", "b"]
        );
        // The same messages, one changed in place (same length, same
        // position): the change is seen.
        let b = arcs(vec![
            Message::user("a"),
            Message::assistant("B"),
            Message::user("c"),
        ]);
        assert_eq!(
            texts(&kept.chunks(&b, |_| false, encode).unwrap()),
            ["a", "B", "c"]
        );
        // A breakpoint moving onto a message makes it new.
        assert_eq!(
            texts(&kept.chunks(&b, |i| i == 1, encode).unwrap()),
            ["a", "B!", "c"]
        );
        // A shorter transcript (a branch, a compaction) drops the rest.
        let c = arcs(vec![Message::user("x")]);
        assert_eq!(texts(&kept.chunks(&c, |_| false, encode).unwrap()), ["x"]);
        assert_eq!(kept.entries.len(), 1);
        assert_eq!(kept.bytes, 1);
    }

    #[test]
    fn the_cache_is_bounded_in_sessions() {
        let cache = EncodedCache::default();
        for i in 0..MAX_SESSIONS + 10 {
            let mut kept = cache.take(&format!("s{i}"));
            kept.chunks(&arcs(vec![Message::user("a")]), |_| false, encode)
                .unwrap();
            cache.put(format!("s{i}"), kept);
        }
        assert_eq!(cache.sessions(), MAX_SESSIONS);
        // The oldest were dropped; the newest are there.
        assert!(cache.take("s0").entries.is_empty());
        assert_eq!(
            cache.take(&format!("s{}", MAX_SESSIONS + 9)).entries.len(),
            1
        );
    }

    #[test]
    fn splicing_joins_chunks_into_the_empty_array() {
        let frame = br#"{"model":"\"messages\":[]","s":{"messages":[]},"messages":[],"tools":[]}"#;
        let chunks = [
            Cow::Borrowed(&b"1"[..]),
            Cow::Borrowed(&b""[..]),
            Cow::Owned(b"2,3".to_vec()),
        ];
        assert_eq!(
            String::from_utf8(splice(frame, "messages", &chunks)).unwrap(),
            r#"{"model":"\"messages\":[]","s":{"messages":[]},"messages":[1,2,3],"tools":[]}"#
        );
        assert_eq!(splice(frame, "messages", &[]), frame.to_vec());
    }
}
