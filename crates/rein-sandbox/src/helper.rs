//! The helper's whole life: read the spec, confine this process, become
//! the command. Shared by the `rein-sandbox-exec` binary and the `rein`
//! binary (`rein __sandbox-exec`), so a product's own binary can be its
//! helper too.

use std::os::unix::process::CommandExt;

use crate::spec::{REFUSED_EXIT, REFUSED_MARK, SPEC_VAR, Spec};

/// The hidden argument that makes a binary act as the helper.
pub const HELPER_ARG: &str = "__sandbox-exec";

fn refuse(why: &str) -> ! {
    eprintln!("{REFUSED_MARK}{why}");
    std::process::exit(REFUSED_EXIT);
}

/// Confine this process as `REIN_SANDBOX_SPEC` says, then exec the
/// command. Never returns: exits 125 (with `rein-sandbox: refused: …`)
/// when it cannot confine, 127 when the command cannot be run.
pub fn main() -> ! {
    let Ok(raw) = std::env::var(SPEC_VAR) else {
        refuse("no spec: this helper is run by rein's sandbox, not by hand");
    };
    let spec: Spec = match serde_json::from_str(&raw) {
        Ok(spec) => spec,
        Err(e) => refuse(&format!("a spec that does not parse: {e}")),
    };
    let Some((program, args)) = spec.argv.split_first() else {
        refuse("an empty command");
    };
    // The command dies with the rein that started it (the signal survives
    // the exec); started after rein is gone, it does not run at all.
    if let Some(parent) = spec.parent {
        if let Err(e) = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL) {
            refuse(&format!("a parent-death signal: {e}"));
        }
        if nix::unistd::getppid().as_raw().cast_unsigned() != parent {
            refuse("the process that started this command has ended");
        }
    }
    if let Err(why) = crate::confine::confine(&spec) {
        refuse(&why);
    }
    let err = std::process::Command::new(program)
        .args(args)
        .env_remove(SPEC_VAR)
        .exec();
    eprintln!("rein-sandbox: `{program}` could not be run: {err}");
    std::process::exit(127);
}
