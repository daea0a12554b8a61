//! A throwaway PostgreSQL server for tests: the machine's own PostgreSQL
//! binaries, a cluster made by `initdb` in a temporary folder, listening
//! on a free loopback port, gone when the test process ends.
//!
//! One server per test process, started on first use; each caller gets a
//! database of its own ([`Server::database`]), so tests never see each
//! other's sessions. As root the cluster belongs to `nobody` (PostgreSQL
//! refuses to run as root). The server is started through `setpriv
//! --pdeathsig KILL` from a thread that lives as long as the process, so
//! a test process killed at any point takes its server with it.
//!
//! Where no PostgreSQL is installed, [`server`] says so loudly and returns
//! `None` — unless `REIN_REQUIRE_POSTGRES` is set (CI sets it, and its
//! test command installs the binaries first), where it panics instead.
//! The server runs without fsync: these tests are about semantics, not
//! about surviving power loss. Benchmarks take a server of their own that
//! syncs as PostgreSQL does by default ([`durable_server`]).
//!
//! Not here: the store itself (`rein-sessions`).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// A running throwaway server.
#[derive(Debug)]
pub struct Server {
    bin: PathBuf,
    port: u16,
    next: AtomicU32,
    _dir: tempfile::TempDir,
}

/// The user the cluster runs as when this process is root.
const NOBODY: u32 = 65_534;

/// The process's server, started on first use; `None` (said loudly) where
/// the machine has no PostgreSQL and `REIN_REQUIRE_POSTGRES` is not set.
pub fn server() -> Option<&'static Server> {
    static SERVER: OnceLock<Option<Server>> = OnceLock::new();
    SERVER
        .get_or_init(|| match binaries() {
            Some(bin) => Some(Server::start(&bin, Syncing::Off)),
            None if std::env::var_os("REIN_REQUIRE_POSTGRES").is_some() => panic!(
                "REIN_REQUIRE_POSTGRES is set but no PostgreSQL binaries were found \
                 (initdb on PATH or under /usr/lib/postgresql/*/bin); install Debian's \
                 `postgresql` package"
            ),
            None => {
                eprintln!(
                    "\n*** SKIPPED: the PostgreSQL tests need PostgreSQL's binaries (initdb, \
                     postgres); none were found. `apt-get install postgresql` runs them. ***\n"
                );
                None
            }
        })
        .as_ref()
}

/// The folder holding `initdb` and `postgres`: PATH first, then the newest
/// of Debian's `/usr/lib/postgresql/N/bin`.
fn binaries() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).find(|dir| dir.join("initdb").is_file()));
    let found = on_path.map(|dir| {
        // Debian links initdb into /usr/local/bin; the server binary sits
        // beside the link's target.
        std::fs::canonicalize(dir.join("initdb"))
            .ok()
            .and_then(|real| real.parent().map(Path::to_path_buf))
            .unwrap_or(dir)
    });
    found
        .filter(|dir| dir.join("postgres").is_file())
        .or_else(|| {
            let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
                .ok()?
                .flatten()
                .filter_map(|entry| {
                    let version = entry.file_name().to_str()?.parse().ok()?;
                    let bin = entry.path().join("bin");
                    bin.join("postgres").is_file().then_some((version, bin))
                })
                .collect();
            versions.sort();
            versions.pop().map(|(_, bin)| bin)
        })
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
}

/// `program` run as the cluster's owner (through `setpriv` as root).
fn as_owner(program: &Path) -> Command {
    let mut command = Command::new("setpriv");
    if is_root() {
        command.args([
            "--reuid",
            &NOBODY.to_string(),
            "--regid",
            &NOBODY.to_string(),
            "--clear-groups",
        ]);
    }
    command.arg("--pdeathsig").arg("KILL").arg(program);
    command
}

impl Server {
    fn start(bin: &Path, sync: Syncing) -> Server {
        sweep_stale();
        let mut dir = tempfile::Builder::new()
            .prefix("rein-pg-")
            .tempdir()
            .expect("a temporary folder for PostgreSQL");
        if is_root() {
            std::os::unix::fs::chown(dir.path(), Some(NOBODY), Some(NOBODY))
                .expect("the cluster's folder given to nobody");
        }
        let data = dir.path().join("data");
        let made = as_owner(&bin.join("initdb"))
            .args(["-D"])
            .arg(&data)
            .args(["-U", "rein", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .args(["--locale=C"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("initdb runs");
        assert!(
            made.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&made.stderr)
        );
        for _ in 0..5 {
            let port = free_port();
            if let Some(exited) = Server::spawn(bin, dir.path(), port, sync) {
                let server = Server {
                    bin: bin.to_path_buf(),
                    port,
                    next: AtomicU32::new(0),
                    _dir: dir,
                };
                if server.ready(&exited) {
                    return server;
                }
                let log = std::fs::read_to_string(server._dir.path().join("server.log"))
                    .unwrap_or_default();
                if !exited.load(Ordering::SeqCst) {
                    panic!("PostgreSQL did not become ready within 30 s:\n{log}");
                }
                // Another process took the port first: try another.
                eprintln!("PostgreSQL did not start on port {port}; trying another:\n{log}");
                dir = server._dir;
            }
        }
        panic!("PostgreSQL did not start on any of five ports");
    }

    /// Start `postgres` on `port` from a thread that lives as long as the
    /// process (the parent-death signal follows the thread that started
    /// the child, not the process). Returns the flag set when it exits.
    fn spawn(bin: &Path, dir: &Path, port: u16, sync: Syncing) -> Option<Arc<AtomicBool>> {
        let program = bin.join("postgres");
        let sockets = dir.to_path_buf();
        let data = dir.join("data");
        let log = std::fs::File::create(dir.join("server.log")).ok()?;
        let exited = Arc::new(AtomicBool::new(false));
        let flag = exited.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let unsynced: &[&str] = match sync {
            Syncing::Full => &[],
            Syncing::Off => &[
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ],
        };
        std::thread::spawn(move || {
            let child = as_owner(&program)
                .arg("-D")
                .arg(&data)
                .args(["-p", &port.to_string(), "-k"])
                .arg(&sockets)
                .args(["-c", "listen_addresses=127.0.0.1"])
                .args(unsynced)
                .args(["-c", "max_connections=300"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn();
            let _ = tx.send(child.is_ok());
            if let Ok(mut child) = child {
                let _ = child.wait();
            }
            flag.store(true, Ordering::SeqCst);
            loop {
                std::thread::park();
            }
        });
        rx.recv().unwrap_or(false).then_some(exited)
    }

    /// Wait until the server answers, or its process ended.
    fn ready(&self, exited: &AtomicBool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && !exited.load(Ordering::SeqCst) {
            let status = Command::new(self.bin.join("pg_isready"))
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-q"])
                .status();
            if status.is_ok_and(|s| s.success()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// The URL of a new, empty database of this server.
    pub fn database(&self) -> String {
        let name = format!("t{}", self.next.fetch_add(1, Ordering::Relaxed));
        let made = Command::new(self.bin.join("createdb"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "rein",
            ])
            .arg(&name)
            .output()
            .expect("createdb runs");
        assert!(
            made.status.success(),
            "createdb failed: {}",
            String::from_utf8_lossy(&made.stderr)
        );
        self.url(&name)
    }

    /// The URL of database `name` on this server.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://rein@127.0.0.1:{}/{name}", self.port)
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

/// A server of its own that syncs every commit to disk as PostgreSQL
/// does by default (`fsync`, `synchronous_commit`, `full_page_writes`
/// on), for benchmarks whose figures must mean "durable"; `None` where the
/// machine has no PostgreSQL. Like [`server`]'s, it ends with the process.
pub fn durable_server() -> Option<Server> {
    binaries().map(|bin| Server::start(&bin, Syncing::Full))
}

/// Whether the server syncs commits to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syncing {
    /// PostgreSQL's defaults: every commit on disk before it returns.
    Full,
    /// No fsync at all: for tests about semantics.
    Off,
}

/// Remove the clusters of test processes that ended: a process's server
/// lives in a static, so its folder is never dropped. A folder is stale
/// when it is over a minute old and no live server holds it.
fn sweep_stale() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with("rein-pg-"));
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(60));
        let live = std::fs::read_to_string(path.join("data/postmaster.pid"))
            .ok()
            .and_then(|pid| pid.lines().next().map(str::to_owned))
            .is_some_and(|pid| Path::new("/proc").join(pid.trim()).exists());
        if ours && old && !live {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
