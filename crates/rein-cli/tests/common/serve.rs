//! `rein serve` driven from a test: started with a token, its event
//! stream watched, a conversation created.

use std::time::{Duration, Instant};

use super::{rein_at, spawn_with_lines};

/// Runs `rein serve --scripted` with `REIN_SERVE_TOKEN` (its home holds
/// its config), with `global` options first; the process and the API's
/// base address.
pub fn served(
    home: &std::path::Path,
    root: &std::path::Path,
    token: &str,
    global: &[&str],
) -> (std::process::Child, String) {
    let mut cmd = rein_at(home);
    cmd.args(global)
        .args(["serve", "--scripted", "--root"])
        .arg(root)
        .env("REIN_SERVE_TOKEN", token);
    let (child, lines) = spawn_with_lines(cmd);
    // A stream that never shows what a test waits for ends with the
    // server, killed here after two minutes: a failure, never a hang.
    let pid = child.id().to_string();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(120));
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid])
            .status();
    });
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let line = lines
            .recv_timeout(until.saturating_duration_since(Instant::now()))
            .expect("no address");
        if let Some(at) = line.find("http://") {
            let link = line[at..].trim();
            return (child, link.split("/api/").next().unwrap().to_owned());
        }
    }
}

/// The conversation's event stream, open (its live events from now on).
pub fn watch(
    http: &reqwest::blocking::Client,
    url: &str,
    token: &str,
) -> reqwest::blocking::Response {
    http.get(url).bearer_auth(token).send().unwrap()
}

/// The stream's data lines up to the first holding `needle` (that one's
/// data, parsed).
pub fn until(stream: reqwest::blocking::Response, needle: &str) -> serde_json::Value {
    until_all(stream, &[needle])
}

/// The first event whose data holds every one of `needles`.
pub fn until_all(stream: reqwest::blocking::Response, needles: &[&str]) -> serde_json::Value {
    use std::io::BufRead;
    let mut seen = Vec::new();
    for line in std::io::BufReader::new(stream).lines() {
        let line = line.unwrap();
        if let Some(data) = line.strip_prefix("data:") {
            if needles.iter().all(|n| data.contains(n)) {
                return serde_json::from_str(data.trim()).unwrap();
            }
            seen.push(line);
        }
    }
    panic!("the stream ended without {needles:?}:\n{}", seen.join("\n"))
}

/// A new conversation on the server at `base`: its id.
pub fn created(http: &reqwest::blocking::Client, base: &str, token: &str) -> String {
    let created: serde_json::Value = http
        .post(format!("{base}/api/conversations"))
        .bearer_auth(token)
        .json(&serde_json::json!({}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    created["id"].as_str().unwrap().to_owned()
}
