//! `cargo xtask sandbox`: the sandbox escape suite as one run. Every test of
//! `rein-sandbox`'s escape files (`escape`, `keeper`, `host_reach`, `bubblewrap`) is
//! run each way it must hold — without and inside bubblewrap, as root and
//! (when run as root) as `nobody` — and the container backend's (`container`)
//! through the machine's Docker, each test in a process of its own, the
//! sandbox required (`REIN_REQUIRE_SANDBOX=1`: a kernel that cannot confine
//! fails instead of skipping). The table goes to `target/sandbox/summary.md`.
//!
//! Not here: the tests themselves (`crates/rein-sandbox/tests/`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The test files that try to escape.
const SUITES: &[&str] = &[
    "escape",
    "keeper",
    "host_reach",
    "host_calls",
    "bubblewrap",
    "protected",
];

/// The container backend's escape file: one way (the runtime decides the
/// rest; `nobody` has no runtime to ask).
const CONTAINER: &str = "container";

/// One way of running the suite.
struct Way {
    name: &'static str,
    nobody: bool,
    bwrap: bool,
    /// The files run this way.
    suites: &'static [&'static str],
}

/// Run the suite every way; fail on any failure.
pub fn run(root: &Path) -> Result<()> {
    let binaries = build()?;
    let root_user = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let mut ways = vec![
        Way {
            name: "this user, landlock",
            nobody: false,
            bwrap: false,
            suites: SUITES,
        },
        Way {
            name: "this user, bubblewrap",
            nobody: false,
            bwrap: true,
            suites: SUITES,
        },
    ];
    if root_user {
        ways.extend([
            Way {
                name: "nobody, landlock",
                nobody: true,
                bwrap: false,
                suites: SUITES,
            },
            Way {
                name: "nobody, bubblewrap",
                nobody: true,
                bwrap: true,
                suites: SUITES,
            },
        ]);
    }
    ways.push(Way {
        name: "this user, container",
        nobody: false,
        bwrap: false,
        suites: &[CONTAINER],
    });
    let scratch = root.join("target/sandbox/tmp");
    std::fs::create_dir_all(&scratch)?;
    // `nobody` makes its temporary folders here.
    Command::new("chmod").arg("1777").arg(&scratch).status()?;
    let mut table =
        String::from("| way | passed | of them skipped | failed |\n|---|---:|---:|---:|\n");
    let mut failures = Vec::new();
    for way in &ways {
        let (mut passed, mut skipped, mut failed) = (0, 0, 0);
        for (suite, binary) in binaries
            .iter()
            .filter(|(s, _)| way.suites.contains(&s.as_str()))
        {
            for test in list(binary)? {
                let ran = run_one(way, binary, &test, &scratch)?;
                if ran.skipped {
                    skipped += 1;
                    eprintln!("xtask: sandbox, {}: {suite}::{test} skipped", way.name);
                }
                if ran.passed {
                    passed += 1;
                } else {
                    failed += 1;
                    failures.push(format!("{}: {suite}::{test}", way.name));
                }
            }
        }
        eprintln!(
            "xtask: sandbox, {}: {passed} passed ({skipped} skipped), {failed} failed",
            way.name
        );
        table.push_str(&format!(
            "| {} | {passed} | {skipped} | {failed} |\n",
            way.name
        ));
    }
    let summary = format!(
        "# The sandbox escape suite\n\n`cargo xtask sandbox`\n\n{table}\n{}",
        failures
            .iter()
            .map(|f| format!("- failed: {f}\n"))
            .collect::<String>()
    );
    std::fs::write(root.join("target/sandbox/summary.md"), &summary)?;
    println!("{summary}");
    if !failures.is_empty() {
        bail!("{} sandbox escape tests failed", failures.len());
    }
    Ok(())
}

/// Build the escape suites' test binaries; (suite, executable) each.
fn build() -> Result<Vec<(String, PathBuf)>> {
    let out = crate::cargo_command()
        .args([
            "test",
            "--locked",
            "-p",
            "rein-sandbox",
            "--no-run",
            "--message-format=json",
        ])
        .output()
        .context("cannot build rein-sandbox's tests")?;
    if !out.status.success() {
        bail!(
            "building rein-sandbox's tests failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut found = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let name = message["target"]["name"].as_str().unwrap_or_default();
        let is_test = message["target"]["kind"]
            .as_array()
            .is_some_and(|k| k.iter().any(|k| k == "test"));
        if let (true, true, Some(exe)) = (
            is_test,
            SUITES.contains(&name) || name == CONTAINER,
            message["executable"].as_str(),
        ) {
            found.push((name.to_owned(), PathBuf::from(exe)));
        }
    }
    if found.len() != SUITES.len() + 1 {
        bail!(
            "found {} of the {} escape suites' binaries",
            found.len(),
            SUITES.len() + 1
        );
    }
    Ok(found)
}

/// The tests in `binary` (helpers that only run as children are ignored
/// and left out).
fn list(binary: &Path) -> Result<Vec<String>> {
    let out = Command::new(binary)
        .args(["--list", "--format", "terse"])
        .output()
        .with_context(|| format!("cannot list {}", binary.display()))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_owned)
        .collect())
}

/// How one test ran.
struct Ran {
    passed: bool,
    /// It passed by saying it could not run here (`SKIPPED:`).
    skipped: bool,
}

/// Run one test one way, in a process of its own.
fn run_one(way: &Way, binary: &Path, test: &str, scratch: &Path) -> Result<Ran> {
    let mut cmd = if way.nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(binary);
        c
    } else {
        Command::new(binary)
    };
    cmd.args(["--exact", test, "--test-threads", "1", "--nocapture"])
        .env("REIN_REQUIRE_SANDBOX", "1")
        .env("TMPDIR", scratch)
        .current_dir(scratch);
    if way.bwrap {
        cmd.env("REIN_SANDBOX_BWRAP", "1");
    } else {
        cmd.env_remove("REIN_SANDBOX_BWRAP");
    }
    let out = cmd
        .output()
        .with_context(|| format!("cannot run {}", binary.display()))?;
    let passed = out.status.success()
        && String::from_utf8_lossy(&out.stdout).contains("test result: ok. 1 passed");
    if !passed {
        eprintln!(
            "xtask: sandbox, {}: {test} FAILED\n{}{}",
            way.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let skipped = String::from_utf8_lossy(&out.stderr).contains("SKIPPED");
    Ok(Ran { passed, skipped })
}
