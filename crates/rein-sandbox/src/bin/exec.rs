//! `rein-sandbox-exec`: confine this process as `REIN_SANDBOX_SPEC` says,
//! then become the command (see `rein_sandbox::helper`).

fn main() {
    rein_sandbox::helper::main()
}
