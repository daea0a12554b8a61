//! A summary record's claim the log does not back: what each kind is, how
//! it is recorded in `compaction.created`, and how the summariser is told
//! of it.
//!
//! Not here: finding the claims (`super::summary`).

/// A claim of a summary record that the log does not back, or an answer
/// that was not a record at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The answer was not the JSON object asked for.
    NotARecord,
    /// A file in `files_changed` that no call changed and no command named.
    Changed(String),
    /// A check said to have passed (or failed) with no such run recorded.
    Check {
        /// The command as the record gives it.
        command: String,
        /// What the record says it did.
        passed: bool,
    },
    /// A fact quoted from a file the stretch never read.
    Unread(String),
    /// A fact whose quote the file's reads never showed.
    Misquoted {
        /// The file the fact is given to.
        file: String,
        /// The quote, cut short.
        quote: String,
    },
    /// A file named in what was done that no call of the stretch named.
    Unknown(String),
}

impl Claim {
    /// As recorded and as the model is told.
    pub fn describe(&self) -> String {
        match self {
            Claim::NotARecord => "an answer that was not the JSON object asked for".to_owned(),
            Claim::Changed(path) => format!("that {path} was changed"),
            Claim::Check {
                command,
                passed: true,
            } => format!("that `{command}` passed (no passing run of it is recorded)"),
            Claim::Check {
                command,
                passed: false,
            } => format!("that `{command}` failed (no failing run of it is recorded)"),
            Claim::Unread(file) => format!("a fact from {file} (it was never read)"),
            Claim::Misquoted { file, quote } => {
                format!("that {file} says \"{quote}\" (its reads do not show it)")
            }
            Claim::Unknown(name) => {
                format!("that {name} was worked on (no call of it is recorded)")
            }
        }
    }
}

/// What the summariser is told its record claimed wrongly: each claim as
/// [`Claim::describe`] says it, except that files never read or named are
/// not named (try 26: told "f40.txt says something", the summary written
/// again sent the model to read f40.txt, which does not exist).
pub fn correction(claims: &[Claim]) -> String {
    let mut told: Vec<String> = Vec::new();
    for claim in claims {
        let said = match claim {
            Claim::Unread(_) => {
                "facts from files it was never shown (only the files read were read)".to_owned()
            }
            Claim::Unknown(_) => {
                "work on files no call named (only the calls the conversation shows were made)"
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
