//! The command policy (`[commands]`): a policy text is refused or read,
//! and a read policy decides any command line without a panic.
//!
//! Input: the policy, then a line of NUL, then the command's words, one
//! per line.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some(text) = rein_fuzz::text(data) else {
        return;
    };
    let (policy, command) = text.split_once("\n\0\n").unwrap_or((text, "ls"));
    let Ok(policy) = rein_sandbox::policy::CommandPolicy::parse(policy) else {
        return;
    };
    let argv: Vec<String> = command.lines().map(str::to_owned).collect();
    let _ = policy.decide(&argv);
    let _ = policy.class(&argv);
});
