//! The chat's slash commands and the session's running cost.
//!
//! Not here: what a command does to the conversation (the chat loop).

/// A line the person typed that starts with `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/exit`, `/quit`: leave the chat.
    Exit,
    /// `/help`: what can be typed.
    Help,
    /// `/cost`: what the session has cost so far.
    Cost,
    /// `/undo`: revert the session's last change to a file.
    Undo,
    /// `/compact`: compact the history now.
    Compact,
    /// `/branch [TURN]`: the turns, or continue from one (an id or the
    /// start of one).
    Branch(Option<String>),
    /// A `/word` rein does not know.
    Unknown(String),
}

/// What `/help` prints.
pub const HELP: &str = "\
  Type a message and press Enter. Commands:
    /cost   what this session has cost so far
    /undo   revert the last change to a file (not if it has changed since)
    /compact  compact the history now (older turns become a summary; the log keeps them)
    /branch         list this session's turns
    /branch TURN    continue from an earlier turn (its id, or the start of it)
    /help   this list
    /exit   leave (Ctrl-D too); `rein chat --resume SESSION` continues later";

/// The command `line` names, or `None` when it is a message (`exit` alone
/// also leaves, as people type it).
pub fn parse(line: &str) -> Option<Command> {
    let line = line.trim();
    if line == "exit" || line == "quit" {
        return Some(Command::Exit);
    }
    let word = line
        .strip_prefix('/')?
        .split_whitespace()
        .next()
        .unwrap_or("");
    Some(match word {
        "exit" | "quit" => Command::Exit,
        "help" | "?" => Command::Help,
        "cost" => Command::Cost,
        "undo" => Command::Undo,
        "compact" => Command::Compact,
        "branch" => Command::Branch(line.split_whitespace().nth(1).map(str::to_owned)),
        other => Command::Unknown(other.to_owned()),
    })
}

/// What the session's model calls have cost, as far as prices are known.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    /// Micro-USD of the calls with a known price.
    known_micro_usd: u64,
    /// Calls made.
    calls: u64,
    /// Calls whose model has no price.
    unpriced: u64,
}

impl Cost {
    /// Count one model call's cost (`None`: no price for its model).
    pub fn add(&mut self, micro_usd: Option<u64>) {
        self.calls += 1;
        match micro_usd {
            Some(micro) => self.known_micro_usd = self.known_micro_usd.saturating_add(micro),
            None => self.unpriced += 1,
        }
    }

    /// Whether every call so far had a price (and there was one).
    pub fn known(&self) -> bool {
        self.calls > 0 && self.unpriced == 0
    }

    /// The cost in words.
    pub fn describe(&self) -> String {
        let dollars = |micro: u64| format!("${:.6}", micro as f64 / 1e6);
        match (self.calls, self.unpriced) {
            (0, _) => "nothing yet (no model calls)".to_owned(),
            (calls, unpriced) if unpriced == calls => {
                format!("unknown: no price for this model ({calls} calls)")
            }
            (_, 0) => dollars(self.known_micro_usd),
            (_, unpriced) => format!(
                "{} + {unpriced} calls of unknown cost",
                dollars(self.known_micro_usd)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_messages_are_told_apart() {
        assert_eq!(parse("/exit"), Some(Command::Exit));
        assert_eq!(parse("exit"), Some(Command::Exit));
        assert_eq!(parse(" /cost "), Some(Command::Cost));
        assert_eq!(parse("/help"), Some(Command::Help));
        assert_eq!(
            parse("/frobnicate now"),
            Some(Command::Unknown("frobnicate".into()))
        );
        assert_eq!(parse("read /etc/hosts"), None);
        assert_eq!(parse("exit the loop early"), None);
    }

    #[test]
    fn the_cost_is_known_only_when_every_call_had_a_price() {
        let mut cost = Cost::default();
        assert!(!cost.known());
        assert_eq!(cost.describe(), "nothing yet (no model calls)");
        cost.add(Some(1_500));
        assert!(cost.known());
        assert_eq!(cost.describe(), "$0.001500");
        cost.add(None);
        assert!(!cost.known());
        assert_eq!(cost.describe(), "$0.001500 + 1 calls of unknown cost");
        let mut local = Cost::default();
        local.add(None);
        assert_eq!(
            local.describe(),
            "unknown: no price for this model (1 calls)"
        );
    }
}
