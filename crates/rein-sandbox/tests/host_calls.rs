//! The calls that act on the host past files and sockets: a process's
//! limits and priority, a descriptor rein inherited, the host's SysV
//! shared memory, a namespace made by `clone`. Each test has a control —
//! the same act unconfined does reach the host — so it can fail.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

mod common;

use std::process::Command;

use common::run_argv as run;

/// A process outside the sandbox, of this user, killed when dropped.
struct Outside(std::process::Child);

impl Outside {
    fn start() -> Outside {
        Outside(Command::new("sleep").arg("60").spawn().expect("sleep"))
    }
    fn pid(&self) -> String {
        self.0.id().to_string()
    }
    fn cpu_limit(&self) -> String {
        let limits = std::fs::read_to_string(format!("/proc/{}/limits", self.0.id())).unwrap();
        limits
            .lines()
            .find(|l| l.starts_with("Max cpu time"))
            .unwrap()
            .to_owned()
    }
    fn nice(&self) -> String {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.0.id())).unwrap();
        let after = stat.rsplit(')').next().unwrap();
        after.split_whitespace().nth(16).unwrap().to_owned()
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_limits_and_priority_of_a_process_outside_stay_as_they_are() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = common::usable(common::sandbox(root.path())).await else {
        return;
    };
    let victim = Outside::start();
    let (limit, nice) = (victim.cpu_limit(), victim.nice());
    let pid = victim.pid();
    let limited = run(
        &sandbox,
        &["prlimit", "--pid", &pid, "--cpu=1:1"],
        root.path(),
    )
    .await;
    assert_ne!(limited.code, Some(0), "{limited:?}");
    let reniced = run(&sandbox, &["renice", "-n", "15", "-p", &pid], root.path()).await;
    assert_ne!(reniced.code, Some(0), "{reniced:?}");
    assert_eq!(victim.cpu_limit(), limit);
    assert_eq!(victim.nice(), nice);
    // Its own limits stay the command's to lower.
    let own = run(
        &sandbox,
        &["sh", "-c", "ulimit -t 5 && ulimit -t"],
        root.path(),
    )
    .await;
    assert_eq!(own.code, Some(0), "{own:?}");
    // The control: unconfined, the same call reaches it.
    let control = Command::new("prlimit")
        .args(["--pid", &pid, "--cpu=30:30"])
        .status()
        .unwrap();
    assert!(control.success());
    assert_ne!(victim.cpu_limit(), limit, "the control did not reach it");
}

#[tokio::test]
async fn a_descriptor_rein_inherited_does_not_reach_the_command() {
    use std::os::fd::AsRawFd as _;
    let root = tempfile::tempdir().expect("root");
    let outside = tempfile::tempdir().expect("outside");
    let Some(sandbox) = common::usable(common::sandbox(root.path())).await else {
        return;
    };
    let secret = outside.path().join("shadow");
    std::fs::write(&secret, "HOST-SECRET-7f3\n").unwrap();
    let file = std::fs::File::open(&secret).unwrap();
    let fd = file.as_raw_fd();
    // As a shell's `7</etc/shadow` hands it to rein: inherited at exec.
    nix::fcntl::fcntl(
        &file,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
    )
    .unwrap();
    let script = format!("cat <&{fd}");
    let ran = run(&sandbox, &["sh", "-c", &script], root.path()).await;
    assert!(!ran.stdout.text.contains("HOST-SECRET"), "{ran:?}");
    assert_ne!(ran.code, Some(0), "{ran:?}");
    // The control: a plain child reads it.
    let control = Command::new("sh").args(["-c", &script]).output().unwrap();
    assert!(String::from_utf8_lossy(&control.stdout).contains("HOST-SECRET"));
    drop(file);
}

/// Perl's SysV shared memory: `make` creates the key's segment and writes
/// into it; otherwise the segment is read and overwritten.
const SHM: &str = r#"use IPC::SysV qw(IPC_CREAT);
my ($key, $make) = @ARGV;
if ($make) { my $id = shmget(hex($key), 64, IPC_CREAT | 0600) // die "shmget: $!\n";
  shmwrite($id, "HOST-SECRET", 0, 11) or die "write: $!\n"; print "$id\n"; exit 0; }
my $id = shmget(hex($key), 64, 0) // die "shmget: $!\n";
shmread($id, my $v, 0, 11) or die "read: $!\n"; print "$v\n";
shmwrite($id, "OVERWRITTEN", 0, 11) or die "write: $!\n";"#;

#[tokio::test]
async fn the_hosts_shared_memory_is_not_reached() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = common::usable(common::sandbox(root.path())).await else {
        return;
    };
    let key = format!("{:x}", 0x5245_0000 + (std::process::id() & 0xffff));
    let made = Command::new("perl")
        .args(["-e", SHM, &key, "1"])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let id = String::from_utf8_lossy(&made.stdout).trim().to_owned();
    let ran = run(&sandbox, &["perl", "-e", SHM, &key], root.path()).await;
    // The control: unconfined, the segment still holds what was written.
    let control = Command::new("perl")
        .args(["-e", SHM, &key])
        .output()
        .unwrap();
    let _ = Command::new("ipcrm").args(["-m", &id]).status();
    assert!(!ran.stdout.text.contains("HOST-SECRET"), "{ran:?}");
    assert!(
        String::from_utf8_lossy(&control.stdout).contains("HOST-SECRET"),
        "{control:?}"
    );
}

#[tokio::test]
async fn clone_makes_no_namespace() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = common::usable(common::sandbox(root.path())).await else {
        return;
    };
    // clone(CLONE_NEWUSER | SIGCHLD) made raw: the child leaves at once.
    let script = format!(
        "import ctypes, os\n\
         r = ctypes.CDLL(None, use_errno=True).syscall({}, 0x10000000 | 17, 0, 0, 0, 0)\n\
         if r == 0: os._exit(0)\n\
         print('CLONED' if r > 0 else 'REFUSED')\n",
        libc::SYS_clone
    );
    let ran = run(&sandbox, &["python3", "-c", &script], root.path()).await;
    assert!(ran.stdout.text.contains("REFUSED"), "{ran:?}");
    // Threads and plain forks still work (glibc's clone3 falls back).
    let threads = run(
        &sandbox,
        &["python3", "-c", "import threading, subprocess; t = threading.Thread(target=lambda: None); t.start(); t.join(); subprocess.run(['true'], check=True); print('ok')"],
        root.path(),
    )
    .await;
    assert!(threads.stdout.text.contains("ok"), "{threads:?}");
}
