//! A summary's claim the log does not back: what each kind is, how it is
//! recorded in `compaction.created`, and how the summariser is told of it.
//!
//! Not here: finding the claims (`super::unbacked`).

/// A summary's claim the log does not back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Claim {
    /// A file said to be changed that no call changed.
    Changed(String),
    /// A check or test said to pass where none passed.
    Passed(String),
    /// A word said of a file read (its path, the word) that its reads never
    /// showed: moved from another file's, quoted as its own, or said of
    /// files listed together.
    Misread(String, String),
    /// A file said to hold something that was never read: by its name
    /// (`f39.txt`), or by a name shaped like the names of files read,
    /// digits apart (`f39` beside a read `f3.txt`).
    Unread(String),
    /// A file said to have been read that the stretch never read.
    NotRead(String),
    /// A word said to be in no file read, or not in `file`, that a read
    /// (`shown_by`) showed.
    Denied {
        file: Option<String>,
        word: String,
        shown_by: String,
    },
}

impl Claim {
    /// As recorded and as the model is told.
    pub(crate) fn describe(&self) -> String {
        match self {
            Claim::Changed(path) => format!("that {path} was changed"),
            Claim::Passed(sentence) => format!("that a check passed (\"{sentence}\")"),
            Claim::Misread(path, word) => {
                format!("that {path} says \"{word}\" (its reads do not show it)")
            }
            Claim::Unread(name) => format!("that {name} says something (it was never read)"),
            Claim::NotRead(name) => format!("that {name} was read (no read of it is recorded)"),
            Claim::Denied {
                file: Some(path),
                word,
                ..
            } => format!("that {path} does not say \"{word}\" (its read shows it)"),
            Claim::Denied {
                file: None,
                word,
                shown_by,
            } => format!("that no file read says \"{word}\" ({shown_by}'s read shows it)"),
        }
    }
}

/// What the summariser is told its summary claimed wrongly: each claim as
/// [`Claim::describe`] says it, except that files never read are not named
/// (try 26: told "f40.txt says something", the summary written again sent
/// the model to read f40.txt, which does not exist).
pub(crate) fn correction(claims: &[Claim]) -> String {
    let mut told: Vec<String> = Vec::new();
    for claim in claims {
        let said = match claim {
            Claim::Unread(_) => {
                "that files it was never shown say something (only the files read were read)"
                    .to_owned()
            }
            Claim::NotRead(_) => {
                "that files were read that were not (only the reads the conversation shows were made)"
                    .to_owned()
            }
            other => other.describe(),
        };
        if !told.contains(&said) {
            told.push(said);
        }
    }
    told.join("; ")
}
