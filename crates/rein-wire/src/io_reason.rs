//! An I/O error in words: the system's reason without its number, for
//! every message a person or a model reads.
//!
//! Not here: rein's own error codes (`error`).

/// What an I/O error says, in words a person or a model reads: the
/// system's reason without its number (`No such file or directory`, not
/// `… (os error 2)`, which a small model repeats to its person as if it
/// were an answer).
pub fn io_reason(err: &std::io::Error) -> String {
    let text = err.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_owned(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_io_reason_has_no_error_number() {
        let err = std::io::Error::from_raw_os_error(2);
        assert_eq!(super::io_reason(&err), "No such file or directory");
        let plain = std::io::Error::other("a reason of its own");
        assert_eq!(super::io_reason(&plain), "a reason of its own");
    }
}
