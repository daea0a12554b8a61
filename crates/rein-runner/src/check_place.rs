//! Where a turn's check runs when it is not run straight on the host: the
//! seam between the runner and a sandbox.
//!
//! The runner asks a [`CheckPlace`] three things: run this command, do
//! you confine what you run, and does the person's policy let this
//! command run unasked. `rein`'s facade gives one over `rein-sandbox`
//! (`rein::SandboxChecks`: landlock, seccomp, the command policy), so a
//! product that runs no sandboxed checks never compiles a sandbox.
//!
//! Not here: a check run on the host (`conversation::verify`), or what
//! the model is told of a failed one.

use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use rein_wire::AgentError;

/// One check's command, as its place runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckCommand {
    /// The program and its arguments (no shell).
    pub argv: Vec<String>,
    /// Where it runs.
    pub cwd: PathBuf,
    /// The wall-clock limit; whatever it started is stopped at it.
    pub timeout: Duration,
}

/// How a check's command ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckRan {
    /// Its exit code (`None`: ended by a signal).
    pub code: Option<i32>,
    /// Whether the wall-clock limit ended it.
    pub timed_out: bool,
    /// What it printed on stdout (bounded by the place).
    pub stdout: String,
    /// What it printed on stderr (bounded by the place).
    pub stderr: String,
}

/// Somewhere a check's command runs, other than straight on the host with
/// rein's environment.
pub trait CheckPlace: Send + Sync + std::fmt::Debug {
    /// Run `command` with the place's own environment. An `Err` means it
    /// did not run (the place refused it); a command that failed is an
    /// `Ok` with its exit.
    fn run<'a>(&'a self, command: &'a CheckCommand) -> BoxFuture<'a, Result<CheckRan, AgentError>>;

    /// Whether it confines what it runs: a command someone other than the
    /// person sent (a client's turn, a stored graph's task) runs only
    /// where it does.
    fn confines(&self) -> bool;

    /// `Ok` when the person's policy runs `command` without asking; else
    /// why not, in a few words (`rule …: forbidden`, `…: it would ask`).
    fn runs_unasked(&self, command: &[String]) -> Result<(), String>;
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures::future::BoxFuture;
    use rein_wire::AgentError;

    use super::{CheckCommand, CheckPlace, CheckRan};
    use crate::Verification;

    /// A place that runs nothing: it says whether it confines, and allows
    /// only `make test`.
    #[derive(Debug)]
    struct Place {
        confines: bool,
    }

    impl CheckPlace for Place {
        fn run<'a>(&'a self, _: &'a CheckCommand) -> BoxFuture<'a, Result<CheckRan, AgentError>> {
            Box::pin(async { Ok(CheckRan::default()) })
        }
        fn confines(&self) -> bool {
            self.confines
        }
        fn runs_unasked(&self, command: &[String]) -> Result<(), String> {
            if command == ["make", "test"] {
                Ok(())
            } else {
                Err("no rule allows it: it would ask".into())
            }
        }
    }

    fn base(place: Option<Place>) -> Verification {
        let check = Verification::new(&["true"]);
        match place {
            Some(place) => check.in_place(Arc::new(place)),
            None => check,
        }
    }

    fn sent(command: &[&str]) -> Vec<String> {
        command.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_check_someone_else_sends_runs_only_where_it_is_confined_and_allowed() {
        let host = base(None).for_command(sent(&["make", "test"]), 0);
        let err = host.expect_err("no place: the host");
        assert_eq!(err.code, rein_wire::error::codes::COMMAND_FORBIDDEN);
        assert!(err.message.contains("confines"), "{}", err.message);

        let open = base(Some(Place { confines: false })).for_command(sent(&["make", "test"]), 0);
        assert!(open.expect_err("not confined").message.contains("confines"));

        let confined = base(Some(Place { confines: true }));
        let asked = confined.for_command(sent(&["sh", "-c", "curl x | sh"]), 0);
        let err = asked.expect_err("the policy would ask");
        assert!(
            err.message.contains("`sh -c curl x | sh`") && err.message.contains("it would ask"),
            "{}",
            err.message
        );

        let check = confined
            .for_command(sent(&["make", "test"]), 3)
            .expect("confined and allowed");
        assert_eq!(check.command, ["make", "test"]);
        assert_eq!(check.expected, 3);
        assert!(check.place.is_some(), "it keeps its place");
    }
}
