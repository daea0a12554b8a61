//! What the model is sent, pinned: every request a golden scenario makes,
//! encoded as each wire API's body (Anthropic Messages, OpenAI Chat, OpenAI
//! Responses), each request its canonical JSON printed over lines (keys
//! sorted) after a `# request N` line, in
//! `tests/golden/requests/SCENARIO.API.txt`. The traces themselves hold
//! only a digest of each request; these files make a change to the prompt,
//! a tool's schema or how history is encoded show in review as a diff.
//! `cargo xtask golden --bless` writes them with the traces.

use std::path::Path;

use rein_gateway::encode::{ChatDialect, anthropic_body, openai_chat_body, openai_responses_body};
use rein_wire::Request;
use serde_json::Value;

/// A wire API's encoder: a request to the body it sends.
type Encode = fn(&Request) -> Value;

/// Each wire API's name in the file names, and its encoder.
fn apis() -> [(&'static str, Encode); 3] {
    [
        ("anthropic", anthropic_body),
        ("openai-chat", |r| {
            openai_chat_body(r, ChatDialect::default())
        }),
        ("openai-responses", openai_responses_body),
    ]
}

/// Each request's body, canonical JSON printed over lines, after a
/// `# request N` line: a change shows as the lines it changed.
fn lines(requests: &[Request], encode: Encode) -> String {
    let mut out = String::new();
    for (n, r) in requests.iter().enumerate() {
        let canonical = rein_wire::canonical::to_string(&encode(r)).unwrap();
        let value: Value = serde_json::from_str(&canonical).unwrap();
        out.push_str(&format!("# request {}\n", n + 1));
        out.push_str(&serde_json::to_string_pretty(&value).unwrap());
        out.push('\n');
    }
    out
}

/// Write (`bless`) or check the request files of scenario `name` in `dir`,
/// the run's session id written `<session>` (it is new each run); what
/// differs, one message per file.
pub fn pinned(
    dir: &Path,
    name: &str,
    (requests, session): (&[Request], &str),
    bless: bool,
) -> Vec<String> {
    pinned_named(dir, name, requests, &[(session, "<session>")], bless)
}

/// The same, each session id in `sessions` written as its name (a
/// sub-agent's request may name its parent's session, and the parent's its
/// sub-agents').
pub fn pinned_named(
    dir: &Path,
    name: &str,
    requests: &[Request],
    sessions: &[(&str, &str)],
    bless: bool,
) -> Vec<String> {
    let mut failures = Vec::new();
    for (api, encode) in apis() {
        let path = dir.join(format!("{name}.{api}.txt"));
        let now = sessions
            .iter()
            .fold(lines(requests, encode), |text, (id, named)| {
                text.replace(id, named)
            });
        if bless {
            std::fs::write(&path, &now).unwrap();
            continue;
        }
        let pinned = std::fs::read_to_string(&path).unwrap_or_default();
        if pinned != now {
            let at = pinned
                .lines()
                .zip(now.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(pinned.lines().count().min(now.lines().count()));
            failures.push(format!(
                "{}: line {} differs from what is pinned\n  pinned: {}\n  now:    {}",
                path.display(),
                at + 1,
                pinned.lines().nth(at).unwrap_or("<end>"),
                now.lines().nth(at).unwrap_or("<end>")
            ));
        }
    }
    failures
}
