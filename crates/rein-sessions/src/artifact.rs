//! Artifact addressing and slicing, shared by every store.

use rein_wire::{AgentError, error::codes};

use crate::store::Slice;

/// The blake3 hash of `bytes`, in hex.
pub fn hash_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// Check that `hash` looks like a blake3 hex digest.
pub(crate) fn check_hash(hash: &str) -> Result<(), AgentError> {
    if hash.len() == 64
        && hash
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    {
        Ok(())
    } else {
        Err(AgentError::new(
            codes::INVALID_INPUT,
            format!("`{hash}` is not an artifact hash (64 lower-case hex digits)"),
        ))
    }
}

/// The part of `bytes` that `slice` names.
pub(crate) fn slice_of(bytes: &[u8], slice: Slice) -> Vec<u8> {
    match slice {
        Slice::Whole => bytes.to_vec(),
        Slice::Bytes { offset, len } => {
            let start = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            let end = start
                .saturating_add(usize::try_from(len).unwrap_or(usize::MAX))
                .min(bytes.len());
            bytes[start..end].to_vec()
        }
        Slice::Lines { start, count } => {
            let start = usize::try_from(start).unwrap_or(usize::MAX);
            let count = usize::try_from(count).unwrap_or(usize::MAX);
            let mut out = Vec::new();
            for line in bytes
                .split_inclusive(|b| *b == b'\n')
                .skip(start)
                .take(count)
            {
                out.extend_from_slice(line);
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices() {
        let text = b"zero\none\ntwo\nthree";
        assert_eq!(
            slice_of(text, Slice::Lines { start: 1, count: 2 }),
            b"one\ntwo\n"
        );
        assert_eq!(
            slice_of(text, Slice::Lines { start: 3, count: 9 }),
            b"three"
        );
        assert_eq!(slice_of(text, Slice::Lines { start: 9, count: 1 }), b"");
        assert_eq!(slice_of(text, Slice::Bytes { offset: 5, len: 3 }), b"one");
        assert_eq!(
            slice_of(
                text,
                Slice::Bytes {
                    offset: 16,
                    len: 100
                }
            ),
            b"ee"
        );
        assert_eq!(
            slice_of(
                text,
                Slice::Bytes {
                    offset: u64::MAX,
                    len: u64::MAX
                }
            ),
            b""
        );
        assert!(check_hash(&hash_hex(text)).is_ok());
        assert!(check_hash("../etc/passwd").is_err());
    }
}
