//! `rein serve` under schemathesis (from PyPI, pinned, installed into a
//! virtualenv under the target folder on first use): property tests
//! generated from the server's own OpenAPI document, every response
//! checked — no server error, each status and content type documented,
//! each body as its schema says (every error problem+json), bad input
//! refused, and no route answering without the token — first operation by
//! operation, then in sequences that follow the document's links.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use crate::common::serve::served;

/// The pinned tools: schemathesis, and the hypothesis it works with.
const PINNED: &[&str] = &["schemathesis==3.39.16", "hypothesis==6.115.0"];

/// The virtualenv's `schemathesis`, installed when missing.
fn schemathesis() -> PathBuf {
    common::python::venv("schemathesis-3.39.16", PINNED, "schemathesis")
}

#[test]
fn the_api_holds_to_its_own_openapi_document_under_schemathesis() {
    let tool = schemathesis();
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let token = "schemathesis-token-0123456789abcdef0123";
    let (mut server, base) = served(home.path(), root.path(), token, &[]);
    let out = Command::new(&tool)
        .args(["run", &format!("{base}/api/openapi.json")])
        .args(["--base-url", &base])
        .args(["-H", &format!("Authorization: Bearer {token}")])
        .args(["--checks", "all", "--experimental=openapi-3.1"])
        .args(["--hypothesis-max-examples", "25", "--hypothesis-seed", "1"])
        .output()
        .unwrap();
    // Then stateful: sequences that follow the document's links — a new
    // conversation's id into every route under it (a turn posted, steered,
    // stopped, compacted, branched…), listed approvals into a decision.
    let stateful = Command::new(&tool)
        .args(["run", &format!("{base}/api/openapi.json")])
        .args(["--base-url", &base])
        .args(["-H", &format!("Authorization: Bearer {token}")])
        .args(["--checks", "all", "--experimental=openapi-3.1"])
        .args(["--hypothesis-max-examples", "15", "--hypothesis-seed", "1"])
        .args(["--stateful=links", "--experimental=stateful-only"])
        .arg("--experimental=stateful-test-runner")
        .env("PYTHONWARNINGS", "ignore")
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    for out in [out, stateful] {
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{said}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("not_a_server_error"), "{said}");
        assert!(!said.contains("FAILED"), "{said}");
        assert!(!said.contains("errored"), "{said}");
    }
}
