//! The MCP reference server (`@modelcontextprotocol/server-everything`)
//! for tests: installed from npm on first use, pinned to the version the
//! recordings in `shared/fixtures/wire/mcp/` were made with.

use std::path::PathBuf;

/// The package, at the recordings' version.
pub const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// The server's entry point (`node ENTRY stdio` runs it), installed with
/// npm under the system's temporary directory on first use (one install
/// per machine, under a file lock, so parallel tests share it).
///
/// # Panics
///
/// When npm is missing or the install fails: a test cannot run without it.
pub fn everything_server() -> PathBuf {
    let dir = std::env::temp_dir().join("rein-mcp-everything-2026.8.31");
    let entry = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    npm_install(&dir, EVERYTHING, &entry);
    entry
}

/// Install `package` with npm into `dir` unless `installed` is there yet:
/// once per machine, under a file lock in `dir`, so parallel tests share
/// it; install scripts are not run.
///
/// # Panics
///
/// When npm is missing, the install fails, or `installed` is still not
/// there: a test cannot run without it, and is never skipped.
pub fn npm_install(dir: &std::path::Path, package: &str, installed: &std::path::Path) {
    std::fs::create_dir_all(dir).expect("a directory for the package");
    let lock = std::fs::File::create(dir.join(".lock")).expect("its lock file");
    lock.lock().expect("the lock");
    if !installed.is_file() {
        let status = std::process::Command::new("npm")
            .args([
                "install",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--prefix",
            ])
            .arg(dir)
            .arg(package)
            .status()
            .expect("npm runs (Node.js is on the machine)");
        assert!(status.success(), "npm install {package} failed: {status}");
    }
    assert!(
        installed.is_file(),
        "{package} has no {}",
        installed.display()
    );
}
