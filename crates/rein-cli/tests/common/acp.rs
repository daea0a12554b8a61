//! `rein acp --scripted` spoken to line by line, as an editor would: the
//! process, started with its handshake sent (`initialize`, then
//! `session/new` in a folder, as request 2).

use std::io::{BufRead, BufReader, Lines, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

/// A `rein acp --scripted` and the lines it writes.
pub struct Editor {
    /// The process.
    pub child: Child,
    to: ChildStdin,
    /// Its stdout, a JSON-RPC message a line.
    pub from: Lines<BufReader<ChildStdout>>,
}

impl Editor {
    /// Start it on the store in `home`, and ask for a session in `work`
    /// (answered as request 2).
    pub fn start(home: &Path, work: &Path) -> Editor {
        let mut child = super::rein_at(home)
            .args(["acp", "--scripted"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let to = child.stdin.take().unwrap();
        let from = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut editor = Editor { child, to, from };
        editor.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        );
        editor.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
            "params": {"cwd": work, "mcpServers": []}}),
        );
        editor
    }

    /// Send one message.
    pub fn send(&mut self, message: &serde_json::Value) {
        writeln!(self.to, "{message}").unwrap();
        self.to.flush().unwrap();
    }

    /// The next message it writes.
    pub fn next(&mut self) -> serde_json::Value {
        let line = self.from.next().unwrap().unwrap();
        serde_json::from_str(&line).unwrap()
    }

    /// Ask `text` in `session` (request 3).
    pub fn prompt(&mut self, session: &serde_json::Value, text: &str) {
        self.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}}),
        );
    }

    /// Close its stdin and wait for it to end.
    pub fn close(self) {
        let Editor { mut child, to, .. } = self;
        drop(to);
        let _ = child.wait();
    }
}
