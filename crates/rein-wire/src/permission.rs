//! The words for what a tool call may do and how long a person's yes
//! lasts: permission classes, the product's policy, lease scopes.
//!
//! They live here, below every crate that speaks them, so a tool author's
//! crate (`rein-tools`) needs neither the approval machinery nor a store.
//! What decides with them is `rein-approvals`.

use serde::{Deserialize, Serialize};

/// What a tool call may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionClass {
    /// Reads only: runs without asking.
    Read,
    /// A write that can be undone: runs; the undo is offered.
    ReversibleWrite,
    /// Writes the person's source files: waits for a person.
    SourceFileWrite,
    /// Cannot be undone: waits for a person.
    Destructive,
    /// Changes something the person owns outside files (a price, an order,
    /// a message sent): waits for a person. The class for a product's own
    /// writes; the file classes above are for file tools.
    Write,
    /// Writes what runs later on the person's machine or decides what
    /// does (`.git/` — its hooks and config —, `.rein/`, rein's home, a
    /// definition's protected paths), or what every later prompt says (a
    /// pinned memory): waits for a person every time; no lease, no
    /// "always" covers it.
    Protected,
}

impl PermissionClass {
    /// The stored name (`read`, `reversible_write`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionClass::Read => "read",
            PermissionClass::ReversibleWrite => "reversible_write",
            PermissionClass::SourceFileWrite => "source_file_write",
            PermissionClass::Destructive => "destructive",
            PermissionClass::Write => "write",
            PermissionClass::Protected => "protected",
        }
    }

    /// Whether a person must approve it.
    pub fn needs_approval(self) -> bool {
        matches!(
            self,
            PermissionClass::SourceFileWrite
                | PermissionClass::Destructive
                | PermissionClass::Write
                | PermissionClass::Protected
        )
    }

    /// Whether a lease (an "always") may cover it: every class a person
    /// approves but [`PermissionClass::Protected`], asked each time.
    pub fn leasable(self) -> bool {
        self != PermissionClass::Protected
    }

    /// Whether it only reads.
    pub fn is_read(self) -> bool {
        self == PermissionClass::Read
    }
}

impl std::fmt::Display for PermissionClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A call's class as `tool.called` stores it: `none` for a call refused
/// before it had one (an unknown tool, arguments that do not parse).
pub mod class_or_none {
    use super::PermissionClass;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// The stored word for "no class".
    pub const NONE: &str = "none";

    /// Write the class, or `none`.
    pub fn serialize<S: Serializer>(
        class: &Option<PermissionClass>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match class {
            Some(class) => class.serialize(serializer),
            None => serializer.serialize_str(NONE),
        }
    }

    /// Read a class, or `none`.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<PermissionClass>, D::Error> {
        let word = String::deserialize(deserializer)?;
        if word == NONE {
            return Ok(None);
        }
        PermissionClass::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(&word))
            .map(Some)
    }
}

/// What became of an approval, as `approval.decided` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// A person said yes.
    Approved,
    /// A person said no.
    Denied,
    /// Nobody decided in time.
    Expired,
    /// The turn was stopped while it waited.
    Stopped,
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Decision {
    /// The stored word (`approved`, `denied`, `expired`, `stopped`).
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approved => "approved",
            Decision::Denied => "denied",
            Decision::Expired => "expired",
            Decision::Stopped => "stopped",
        }
    }

    /// The decision a stored word stands for.
    pub fn from_stored(word: &str) -> Option<Self> {
        [
            Decision::Approved,
            Decision::Denied,
            Decision::Expired,
            Decision::Stopped,
        ]
        .into_iter()
        .find(|d| d.as_str() == word)
    }
}

/// What the product allows in this conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Whether any write may run (approved or not).
    pub writes_allowed: bool,
    /// Hosts a product's own tools may reach (empty: none): its HTTP-speaking
    /// tools ask `ctx.policy.allows_host(host)` and refuse the rest; a
    /// child's is never wider than its parent's ([`Policy::within`]).
    /// rein's own tools reach no host on their own: a command's network is
    /// the sandbox's (`[sandbox] network`), an MCP server's URL the
    /// person's config. It is not a config key: nothing rein runs from a
    /// config file would read it.
    pub egress_allow: Vec<String>,
    /// Whether an approved call runs elevated (a tool may then skip its own
    /// second confirmation).
    pub elevate_approved: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            writes_allowed: true,
            egress_allow: Vec::new(),
            elevate_approved: true,
        }
    }
}

impl Policy {
    /// This policy held inside `outer`'s: what both allow, never more than
    /// either — writes only where both allow them, hosts both list, an
    /// approval elevated only where both say so. A child agent's policy is
    /// its own `within` its parent's.
    pub fn within(&self, outer: &Policy) -> Policy {
        Policy {
            writes_allowed: self.writes_allowed && outer.writes_allowed,
            egress_allow: self
                .egress_allow
                .iter()
                .filter(|host| outer.egress_allow.contains(host))
                .cloned()
                .collect(),
            elevate_approved: self.elevate_approved && outer.elevate_approved,
        }
    }

    /// Whether a tool may reach `host` (a name or address, compared
    /// without regard to case): only a host the list names — what a
    /// product's HTTP-speaking tool asks before it connects.
    pub fn allows_host(&self, host: &str) -> bool {
        self.egress_allow
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(host))
    }
}

/// How long an approval lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaseScope {
    /// This call only.
    Once,
    /// This tool, for the rest of the run.
    Tool,
    /// Every gated call, for the rest of the run.
    Run,
}

impl LeaseScope {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseScope::Once => "once",
            LeaseScope::Tool => "tool",
            LeaseScope::Run => "run",
        }
    }

    /// The scope a stored name stands for. An unknown name is the
    /// narrowest scope: a log written by a newer rein never widens a lease.
    pub fn from_stored(name: &str) -> Self {
        match name {
            "tool" => LeaseScope::Tool,
            "run" => LeaseScope::Run,
            _ => LeaseScope::Once,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Called {
        #[serde(with = "class_or_none")]
        permission: Option<PermissionClass>,
    }

    #[test]
    fn classes_are_stored_as_their_words_and_none_as_none() {
        for class in [
            PermissionClass::Read,
            PermissionClass::ReversibleWrite,
            PermissionClass::SourceFileWrite,
            PermissionClass::Destructive,
            PermissionClass::Write,
        ] {
            let stored = serde_json::to_string(&Called {
                permission: Some(class),
            })
            .unwrap();
            assert_eq!(stored, format!(r#"{{"permission":"{}"}}"#, class.as_str()));
            let back: Called = serde_json::from_str(&stored).unwrap();
            assert_eq!(back.permission, Some(class));
        }
        let none = serde_json::to_string(&Called { permission: None }).unwrap();
        assert_eq!(none, r#"{"permission":"none"}"#);
        assert_eq!(
            serde_json::from_str::<Called>(&none).unwrap().permission,
            None
        );
        // A word that names no class is refused, not read as "none".
        assert!(serde_json::from_str::<Called>(r#"{"permission":"admin"}"#).is_err());
    }

    #[test]
    fn a_host_is_allowed_only_when_named_and_a_child_never_reaches_more() {
        let parent = Policy {
            egress_allow: vec!["api.example.com".into()],
            ..Policy::default()
        };
        assert!(parent.allows_host("API.example.com"));
        assert!(!parent.allows_host("api.example.com.evil.test"));
        assert!(!Policy::default().allows_host("api.example.com"));
        let child = Policy {
            egress_allow: vec!["evil.test".into(), "api.example.com".into()],
            ..Policy::default()
        }
        .within(&parent);
        assert!(!child.allows_host("evil.test"));
        assert!(child.allows_host("api.example.com"));
    }
}
