//! The closed words the log records and surfaces show: how a turn, a run, a
//! sub-agent, a graph's task and a graph ended, what a model call did with
//! the prompt cache, and how a person intervened in a hosted terminal. Each
//! is an enum serialised as the snake_case word logs have always held, so
//! golden traces and older sessions read back unchanged.
//!
//! Not here: what produces them (the runner, the orchestrator, the cache
//! monitor, the host) or the hook words (`hook`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ErrorCode;

/// An enum of fixed words: `as_str`, `named`, `Display`, and serde as the
/// word. Written once for every closed vocabulary of the log.
macro_rules! words {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $word:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
        }

        impl $name {
            /// Every word, in declaration order.
            pub const ALL: &[$name] = &[$($name::$variant),*];

            /// Its recorded word.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)*
                }
            }

            /// The word's value, if it is one of these words.
            pub fn named(word: &str) -> Option<Self> {
                match word {
                    $($word => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, word: &str) -> bool {
                self.as_str() == word
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, word: &&str) -> bool {
                self.as_str() == *word
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let word = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(d)?;
                $name::named(&word).ok_or_else(|| {
                    ::serde::de::Error::custom(format!(
                        "`{word}` is not one of {:?}",
                        $name::ALL.iter().map(|w| w.as_str()).collect::<Vec<_>>()
                    ))
                })
            }
        }
    };
}

pub(crate) use words;

words! {
    /// How a turn or a run ended (`turn.finished`, `run.finished`).
    pub enum Ending {
        /// The model answered and nothing was left to do.
        Finished = "finished",
        /// A budget (steps, tokens, cost, time) was spent.
        Budget = "budget",
        /// The same calls were repeated past the loop detector's bound.
        LoopDetected = "loop_detected",
        /// Stopped by a person or an interrupt.
        Interrupted = "interrupted",
        /// Paused for a person's decision (a run left open).
        AwaitingApproval = "awaiting_approval",
        /// Ended by an error (its code is in the run's totals).
        Error = "error",
        /// A hosted program failed, or its driver died without closing.
        Failed = "failed",
        /// A hosted program ran past its time.
        Timeout = "timeout",
    }
}

words! {
    /// How a graph's task ended (`task.finished`).
    pub enum TaskEnding {
        /// It succeeded; its outputs are recorded.
        Succeeded = "succeeded",
        /// It failed for good.
        Failed = "failed",
        /// A task it depends on failed, so it never ran.
        Skipped = "skipped",
        /// The graph was cancelled first.
        Cancelled = "cancelled",
        /// It had not ended when the graph's record closed.
        Running = "running",
    }
}

words! {
    /// How a graph ended (`graph.finished`).
    pub enum GraphOutcome {
        /// Every task succeeded.
        Succeeded = "succeeded",
        /// A task failed for good (with `skip_dependents`, the others ran).
        Failed = "failed",
        /// It was cancelled.
        Cancelled = "cancelled",
    }
}

words! {
    /// What a model call did with the prompt cache (`model.completed`).
    pub enum CacheVerdict {
        /// The first call on a prefix: it may write the cache.
        Cold = "cold",
        /// A warm call that read the prefix from cache.
        Hit = "hit",
        /// A warm call that did not read the prefix.
        Miss = "miss",
        /// A warm call on a prefix the provider has never reported caching.
        Uncached = "uncached",
    }
}

words! {
    /// How a request's size was counted (`model.requested`'s pressure).
    pub enum CountMethod {
        /// rein's local estimate (bytes per token).
        Estimate = "estimate",
        /// The provider's own count.
        Provider = "provider",
        /// The model's tokenizer, known locally.
        Tokenizer = "tokenizer",
    }
}

words! {
    /// What a request over a line set off (`model.requested`'s pressure).
    pub enum PressureAction {
        /// Over the soft line: old read results set aside.
        Pruned = "pruned",
        /// Over the hard line: older history compacted.
        Compacted = "compacted",
    }
}

words! {
    /// How a person intervened in a hosted terminal (`host.intervened`).
    pub enum InterventionKind {
        /// A person took the session over (with what they typed).
        Takeover = "takeover",
        /// A person's takeover was refused (someone else held it).
        Refused = "refused",
        /// The person handed it back.
        Released = "released",
        /// A person switched its mode (with the mode it switched to).
        Switched = "switched",
    }
}

/// How a sub-agent ended (`agent.finished`): finished, or failed with an
/// error code (recorded as the code itself).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ChildEnding {
    /// It answered.
    Finished,
    /// It failed with this code.
    Failed(ErrorCode),
}

impl ChildEnding {
    /// Its recorded word: `finished` or the error code.
    pub fn as_str(&self) -> &str {
        match self {
            ChildEnding::Finished => "finished",
            ChildEnding::Failed(code) => code.as_str(),
        }
    }
}

impl fmt::Display for ChildEnding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for ChildEnding {
    fn eq(&self, word: &str) -> bool {
        self.as_str() == word
    }
}

impl PartialEq<&str> for ChildEnding {
    fn eq(&self, word: &&str) -> bool {
        self.as_str() == *word
    }
}

impl Serialize for ChildEnding {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ChildEnding {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let word = String::deserialize(d)?;
        Ok(if word == "finished" {
            ChildEnding::Finished
        } else {
            ChildEnding::Failed(ErrorCode::new(word))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_round_trips_as_the_word_logs_hold() {
        for ending in Ending::ALL {
            let json = serde_json::to_value(ending).unwrap_or_default();
            assert_eq!(json, serde_json::Value::from(ending.as_str()));
            let back: Ending = serde_json::from_value(json).unwrap_or(Ending::Error);
            assert_eq!(back, *ending);
        }
        assert_eq!(
            serde_json::to_value(CacheVerdict::Uncached).unwrap_or_default(),
            "uncached"
        );
        assert!(serde_json::from_str::<TaskEnding>("\"done\"").is_err());
        let child: Result<ChildEnding, _> = serde_json::from_str("\"agent_stopped\"");
        assert_eq!(
            child.ok(),
            Some(ChildEnding::Failed(ErrorCode::new("agent_stopped")))
        );
    }
}
