//! A short campaign end to end: the real binary kills its own trials with
//! SIGKILL, resumes them and checks them, and writes its summary.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

#[test]
fn a_short_campaign_kills_resumes_and_passes() {
    let out = tempfile::tempdir().unwrap();
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_rein-chaos"))
        .args(["--trials", "10", "--seed", "11", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{said}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let summary = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    assert!(summary.contains("| trials | 10 |"), "{summary}");
    assert!(summary.contains("| failed trials | 0 |"), "{summary}");
    // The five surfaces take turns: two trials each.
    for row in [
        "| of which through `rein serve`'s API | 2 |",
        "| of which as a task graph | 2 |",
        "| of which as calls to `rein mcp serve` | 2 |",
        "| of which hosting Claude Code | 2 |",
    ] {
        assert!(summary.contains(row), "{summary}");
    }
    let kills: u32 = summary
        .lines()
        .find_map(|l| l.strip_prefix("| SIGKILLs landed | "))
        .and_then(|rest| rest.trim_end_matches(" |").parse().ok())
        .unwrap();
    assert!(kills > 0, "no kill landed: {summary}");
}
