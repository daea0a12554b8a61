//! `rein-sandbox-exec`: confine this process as `REIN_SANDBOX_SPEC` says,
//! then become the command. Run only by `rein-sandbox`'s Linux backend;
//! prints `rein-sandbox: refused: …` and exits 125 when it cannot confine.

use std::os::unix::process::CommandExt;

use rein_sandbox::spec::{REFUSED_EXIT, REFUSED_MARK, SPEC_VAR, Spec};

fn refuse(why: &str) -> ! {
    eprintln!("{REFUSED_MARK}{why}");
    std::process::exit(REFUSED_EXIT);
}

fn main() {
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
    if let Err(why) = rein_sandbox::confine::confine(&spec) {
        refuse(&why);
    }
    let err = std::process::Command::new(program)
        .args(args)
        .env_remove(SPEC_VAR)
        .exec();
    eprintln!("rein-sandbox: `{program}` could not be run: {err}");
    std::process::exit(127);
}
