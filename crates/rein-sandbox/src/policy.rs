//! The command policy: prefix rules deciding whether a command runs, asks
//! a person first, or is refused — checked at load against each rule's
//! own example commands.
//!
//! ```toml
//! shell = false                 # `sh -c …` (any shell's -c) is refused unless true
//! default = "ask"               # a command no rule names
//! [[rule]]
//! prefix = ["cargo", "test"]
//! decision = "allow"
//! examples = ["cargo test", "cargo test -p rein-wire"]
//! [[rule]]
//! prefix = ["rm"]
//! decision = "forbid"
//! examples = ["rm -rf target"]
//! ```
//!
//! The first rule whose prefix is the command's first words decides.
//! Every example must be decided by its own rule (not an earlier one): a
//! rule whose examples do not match is a config error
//! (`command_policy_invalid`), so a typo in a prefix cannot silently let
//! commands through. A command is judged by what it executes (`executed`):
//! `/usr/bin/rm` is `rm`, and `env`, `nice`, `timeout`, `xargs`… are seen
//! through. A script is opaque — a shell's `-c`, an interpreter's inline
//! code, `env -S`, an executor's executing option (`find -exec`, `git -c`,
//! inline awk, sed's `e`: `executors`) — refused, or with `shell = true`
//! always asked. What an argv policy cannot see — a Makefile's recipes, a
//! test suite, a script in a file — the sandbox bounds, not the policy.

use rein_wire::permission::PermissionClass;

use crate::executed::{Executed, program_name};
use rein_wire::{AgentError, error::codes};
use serde::Deserialize;

/// What a rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Runs without asking.
    Allow,
    /// Waits for a person.
    Ask,
    /// Never runs.
    Forbid,
}

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The command's first words.
    pub prefix: Vec<String>,
    /// What it decides.
    pub decision: Decision,
    /// Commands it must decide (checked at load).
    #[serde(default)]
    pub examples: Vec<String>,
}

/// The policy.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandPolicy {
    /// Whether a shell's `-c` may run at all (then it always asks).
    #[serde(default)]
    pub shell: bool,
    /// What a command no rule names gets.
    #[serde(default = "ask")]
    pub default: Decision,
    /// The rules, first match wins.
    #[serde(default, rename = "rule")]
    pub rules: Vec<Rule>,
}

fn ask() -> Decision {
    Decision::Ask
}

impl Default for CommandPolicy {
    fn default() -> Self {
        CommandPolicy {
            shell: false,
            default: Decision::Ask,
            rules: Vec::new(),
        }
    }
}

fn invalid(why: impl Into<String>) -> AgentError {
    AgentError::new(codes::COMMAND_POLICY_INVALID, why)
}

impl CommandPolicy {
    /// The policy in `text` (TOML), its examples checked.
    pub fn parse(text: &str) -> Result<CommandPolicy, AgentError> {
        let policy: CommandPolicy = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        policy.check()?;
        Ok(policy)
    }

    /// Check every rule against its examples.
    pub fn check(&self) -> Result<(), AgentError> {
        for (n, rule) in self.rules.iter().enumerate() {
            if rule.prefix.is_empty() || rule.prefix.iter().any(String::is_empty) {
                return Err(invalid(format!("rule {} has an empty prefix", n + 1)));
            }
            for example in &rule.examples {
                let argv: Vec<String> = example.split_whitespace().map(str::to_owned).collect();
                let decided_by = self
                    .rules
                    .iter()
                    .position(|r| starts_with(&argv, &r.prefix));
                if decided_by != Some(n) {
                    let by = match decided_by {
                        Some(other) => format!(
                            "rule {} ({})",
                            other + 1,
                            self.rules[other].prefix.join(" ")
                        ),
                        None => "no rule".into(),
                    };
                    return Err(invalid(format!(
                        "rule {} ({}): its example `{example}` is decided by {by}",
                        n + 1,
                        rule.prefix.join(" ")
                    )));
                }
            }
        }
        Ok(())
    }

    /// What the policy decides for `argv` — judged by what it executes —
    /// and why.
    pub fn decide(&self, argv: &[String]) -> (Decision, String) {
        let command = match crate::executed::executed(argv) {
            Executed::Command(command) => command,
            Executed::Script(what) if self.shell => {
                return (Decision::Ask, format!("{what} (always asked)"));
            }
            Executed::Script(what) => {
                return (
                    Decision::Forbid,
                    format!(
                        "{what} (the policy does not allow a script or an executor it cannot see into; `shell = true` has it asked)"
                    ),
                );
            }
        };
        let argv = command.as_slice();
        match self.rules.iter().find(|r| starts_with(argv, &r.prefix)) {
            Some(rule) => (rule.decision, format!("rule `{}`", rule.prefix.join(" "))),
            None => (self.default, "no rule names it (the default)".into()),
        }
    }

    /// The class of `argv`'s call, or `command_forbidden`.
    pub fn class(&self, argv: &[String]) -> Result<PermissionClass, AgentError> {
        match self.decide(argv) {
            (Decision::Allow, _) => Ok(PermissionClass::Read),
            (Decision::Ask, _) => Ok(PermissionClass::Destructive),
            (Decision::Forbid, why) => Err(AgentError::new(
                codes::COMMAND_FORBIDDEN,
                format!("`{}` is forbidden: {why}", argv.join(" ")),
            )),
        }
    }
}

/// Whether `argv` begins with `prefix`, a program by its file name.
fn starts_with(argv: &[String], prefix: &[String]) -> bool {
    argv.len() >= prefix.len()
        && argv.iter().zip(prefix).enumerate().all(|(i, (a, p))| {
            if i == 0 {
                program_name(a) == program_name(p)
            } else {
                a == p
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    const POLICY: &str = r#"
        default = "ask"
        [[rule]]
        prefix = ["cargo", "test"]
        decision = "allow"
        examples = ["cargo test", "cargo test -p x"]
        [[rule]]
        prefix = ["rm"]
        decision = "forbid"
        examples = ["rm -rf target"]
    "#;

    #[test]
    fn the_first_matching_rule_decides() {
        let policy = CommandPolicy::parse(POLICY).expect("valid");
        assert_eq!(
            policy.class(&argv("cargo test -q")).expect("ok"),
            PermissionClass::Read
        );
        assert_eq!(
            policy.class(&argv("cargo build")).expect("ok"),
            PermissionClass::Destructive
        );
        assert_eq!(
            policy.class(&argv("rm -rf /")).expect_err("forbidden").code,
            codes::COMMAND_FORBIDDEN
        );
        // `cargo testx` is not `cargo test`: words, not characters.
        assert_eq!(policy.decide(&argv("cargo testx")).0, Decision::Ask);
        // What will be executed decides: a path or a wrapper is no way past.
        for line in [
            "/usr/bin/rm -rf x",
            "env rm x",
            "/usr/bin/env rm x",
            "nice -n 5 rm x",
            "timeout 5 rm x",
            "xargs rm",
        ] {
            assert_eq!(policy.decide(&argv(line)).0, Decision::Forbid, "{line}");
        }
        assert_eq!(policy.decide(&argv("nice cargo test")).0, Decision::Allow);
    }

    #[test]
    fn shells_are_refused_unless_allowed_and_then_asked() {
        let policy = CommandPolicy::parse(POLICY).expect("valid");
        for script in [
            "sh -c ls",
            "bash -lc ls",
            "/bin/sh -c ls",
            "/bin/dash -c ls",
            "/usr/bin/env sh -c ls",
            "nice -n 5 bash -c ls",
        ] {
            assert_eq!(policy.decide(&argv(script)).0, Decision::Forbid, "{script}");
        }
        let shell = CommandPolicy {
            shell: true,
            ..policy
        };
        assert_eq!(shell.decide(&argv("sh -c ls")).0, Decision::Ask);
    }

    #[test]
    fn programs_that_run_programs_are_no_way_past_a_forbidden_rm() {
        let policy = CommandPolicy::parse(
            "default = \"allow\"\n[[rule]]\nprefix = [\"rm\"]\ndecision = \"forbid\"\nexamples = [\"rm x\"]\n",
        )
        .expect("valid");
        let words = |s: &str| -> Vec<String> { s.split(' ').map(str::to_owned).collect() };
        for line in [
            "find . -name x -delete",
            "find . -exec rm x ;",
            "find . -execdir sh -c rm ;",
            "git -c alias.x=!rm x",
            "awk BEGIN{system(\"rm\")}",
            "sed 1erm",
        ] {
            assert_eq!(policy.decide(&words(line)).0, Decision::Forbid, "{line}");
        }
        assert_eq!(policy.decide(&words("find . -name x")).0, Decision::Allow);
        let asking = CommandPolicy {
            shell: true,
            ..policy
        };
        assert_eq!(asking.decide(&words("find . -delete")).0, Decision::Ask);
    }

    #[test]
    fn a_rule_whose_examples_do_not_match_is_refused() {
        for (text, why) in [
            (
                "[[rule]]\nprefix = ['cargo', 'tset']\ndecision = 'allow'\nexamples = ['cargo test']\n",
                "decided by no rule",
            ),
            (
                "[[rule]]\nprefix = ['git']\ndecision = 'ask'\n[[rule]]\nprefix = ['git', 'status']\ndecision = 'allow'\nexamples = ['git status']\n",
                "decided by rule 1 (git)",
            ),
            (
                "[[rule]]\nprefix = []\ndecision = 'allow'\n",
                "empty prefix",
            ),
            (
                "[[rule]]\nprefix = ['x']\ndecision = 'maybe'\n",
                "unknown variant",
            ),
        ] {
            let err = CommandPolicy::parse(text).expect_err(text);
            assert_eq!(err.code, codes::COMMAND_POLICY_INVALID);
            assert!(err.message.contains(why), "{text}: {}", err.message);
        }
    }
}
