//! A turn's check run in the sandbox `run_command` uses: the runner's
//! [`CheckPlace`] over `rein-sandbox`.
//!
//! The runner does not depend on the sandbox (a product that runs no
//! sandboxed checks never compiles landlock or seccomp); this is where the
//! two meet, for `compose` and for a product that composes by hand.
//!
//! Not here: the sandbox itself (`rein::sandbox`), or when a check runs
//! (the runner's verification gate).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rein_runner::{CheckCommand, CheckPlace, CheckRan};
use rein_sandbox::policy::{CommandPolicy, Decision};
use rein_sandbox::{Request, Sandbox};
use rein_wire::AgentError;

/// A check's place in a sandbox: its exact environment, and the person's
/// command policy that decides what a check someone else sent may run.
///
/// ```no_run
/// # async fn demo(sandbox: std::sync::Arc<dyn rein::sandbox::Sandbox>) {
/// use rein::runner::Verification;
/// use rein::sandbox::policy::CommandPolicy;
///
/// let place = rein::SandboxChecks::new(sandbox, Default::default(), CommandPolicy::default());
/// let check = Verification::new(&["cargo", "test"]).in_place(std::sync::Arc::new(place));
/// # let _ = check;
/// # }
/// ```
#[derive(Clone)]
pub struct SandboxChecks {
    sandbox: Arc<dyn Sandbox>,
    env: BTreeMap<String, String>,
    policy: CommandPolicy,
}

impl SandboxChecks {
    /// Checks run in `sandbox` with exactly `env`, under `policy`.
    pub fn new(
        sandbox: Arc<dyn Sandbox>,
        env: BTreeMap<String, String>,
        policy: CommandPolicy,
    ) -> Self {
        SandboxChecks {
            sandbox,
            env,
            policy,
        }
    }
}

impl std::fmt::Debug for SandboxChecks {
    /// The environment's names only: a value may be a secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxChecks")
            .field("sandbox", &self.sandbox)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("policy", &self.policy)
            .finish()
    }
}

impl CheckPlace for SandboxChecks {
    fn run<'a>(
        &'a self,
        command: &'a CheckCommand,
    ) -> Pin<Box<dyn Future<Output = Result<CheckRan, AgentError>> + Send + 'a>> {
        Box::pin(async move {
            let request = Request {
                argv: command.argv.clone(),
                cwd: command.cwd.clone(),
                env: self.env.clone(),
                timeout: command.timeout,
            };
            let ran = self.sandbox.run(&request).await?;
            Ok(CheckRan {
                code: ran.code,
                timed_out: ran.timed_out,
                stdout: ran.stdout.text,
                stderr: ran.stderr.text,
            })
        })
    }

    fn confines(&self) -> bool {
        self.sandbox.confines()
    }

    fn runs_unasked(&self, command: &[String]) -> Result<(), String> {
        match self.policy.decide(command) {
            (Decision::Allow, _) => Ok(()),
            (Decision::Forbid, why) => Err(format!("{why}: forbidden")),
            (_, why) => Err(format!("{why}: it would ask")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn its_debug_names_the_environment_and_never_shows_a_value() {
        let sandbox: Arc<dyn Sandbox> =
            Arc::new(rein_sandbox::HostSandbox::new(true).expect("acknowledged"));
        let env = BTreeMap::from([("API_TOKEN".to_owned(), "tok-9f3c2a7b".to_owned())]);
        let place = SandboxChecks::new(sandbox, env, CommandPolicy::default());
        let shown = format!("{place:?}");
        assert!(shown.contains("API_TOKEN"), "{shown}");
        assert!(!shown.contains("tok-9f3c2a7b"), "{shown}");
        assert!(!place.confines(), "the host backend does not confine");
    }
}
