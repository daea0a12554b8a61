//! A confined command must reach nothing of the host outside its root: no
//! Unix socket (a person's tmux, `rein agents attach`), no signal to a
//! process it did not start, no device, no host name, no interface. Each
//! test has a control: the same act unconfined does reach the host, so
//! the test can fail.

mod common;

use std::io::ErrorKind;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rein_sandbox::LinuxSandbox;

async fn usable(write: &Path) -> Option<LinuxSandbox> {
    common::usable(common::sandbox(write)).await
}

use common::run_argv as run;

/// Perl (always in Debian's base) connecting to a Unix socket: `$ARGV[0]`
/// a path, or `@name` for an abstract one.
const CONNECT: &str = r#"use Socket; my $a = $ARGV[0]; $a =~ s/^@/\0/;
socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n";
connect($s, pack_sockaddr_un($a)) or die "connect: $!\n"; print "connected\n";"#;

fn accepted(listener: &UnixListener) -> bool {
    match listener.accept() {
        Ok(_) => true,
        Err(e) if e.kind() == ErrorKind::WouldBlock => false,
        Err(e) => panic!("accept: {e}"),
    }
}

#[tokio::test]
async fn a_unix_socket_outside_the_root_is_not_reached() {
    let root = tempfile::tempdir().expect("root");
    let outside = tempfile::tempdir().expect("outside");
    let Some(sandbox) = usable(root.path()).await else {
        return;
    };
    let path = outside.path().join("door.sock");
    let listener = UnixListener::bind(&path).expect("a listener outside the root");
    listener.set_nonblocking(true).expect("nonblocking");
    let address = path.display().to_string();

    let confined = run(&sandbox, &["perl", "-e", CONNECT, &address], root.path()).await;
    assert_ne!(confined.code, Some(0), "{confined:?}");
    assert!(!confined.stdout.text.contains("connected"), "{confined:?}");
    assert!(
        confined.stderr.text.contains("not permitted"),
        "{confined:?}"
    );
    assert!(
        !accepted(&listener),
        "the listener outside took a connection"
    );

    // A socket inside the root is refused too: no Unix socket at all.
    let inner = root.path().join("inner.sock");
    let inner_listener = UnixListener::bind(&inner).expect("inner listener");
    inner_listener.set_nonblocking(true).expect("nonblocking");
    let confined = run(
        &sandbox,
        &["perl", "-e", CONNECT, &inner.display().to_string()],
        root.path(),
    )
    .await;
    assert_ne!(confined.code, Some(0), "{confined:?}");
    assert!(!accepted(&inner_listener));

    // The control: unconfined, the same program connects.
    let free = Command::new("perl")
        .args(["-e", CONNECT, &address])
        .output()
        .expect("perl");
    assert!(free.status.success(), "the control failed: {free:?}");
    std::thread::sleep(Duration::from_millis(50));
    assert!(accepted(&listener), "the control's connection");
}

#[tokio::test]
async fn an_abstract_unix_socket_is_not_reached() {
    use std::os::linux::net::SocketAddrExt;
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = usable(root.path()).await else {
        return;
    };
    let name = format!("rein-test-{}", std::process::id());
    let address =
        std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).expect("abstract");
    let listener = UnixListener::bind_addr(&address).expect("an abstract listener");
    listener.set_nonblocking(true).expect("nonblocking");
    let target = format!("@{name}");
    let confined = run(&sandbox, &["perl", "-e", CONNECT, &target], root.path()).await;
    assert_ne!(confined.code, Some(0), "{confined:?}");
    assert!(
        !accepted(&listener),
        "the abstract listener took a connection"
    );
    let free = Command::new("perl")
        .args(["-e", CONNECT, &target])
        .output()
        .expect("perl");
    assert!(free.status.success(), "the control failed: {free:?}");
}

/// tmux (installed when missing; CI requires it with the sandbox): a
/// person's tmux server outside the root is not driven from inside.
#[tokio::test]
async fn a_persons_tmux_is_not_driven() {
    let root = tempfile::tempdir().expect("root");
    let outside = tempfile::tempdir().expect("outside");
    if !common::installed("tmux", "tmux") {
        assert!(
            std::env::var_os("REIN_REQUIRE_SANDBOX").is_none(),
            "tmux is required here (apt-get install tmux)"
        );
        eprintln!("SKIPPED: tmux is not installed");
        return;
    }
    let Some(sandbox) = usable(root.path()).await else {
        return;
    };
    let socket = outside.path().join("tmux.sock");
    let socket_text = socket.display().to_string();
    let started = Command::new("tmux")
        .args([
            "-S",
            &socket_text,
            "new-session",
            "-d",
            "-s",
            "victim",
            "sh",
        ])
        .env_remove("TMUX")
        // tmux runs the window's command through `$SHELL -c`, or the
        // user's login shell when SHELL is unset — `nobody`'s is
        // `nologin`, which would end the server at once.
        .env("SHELL", "/bin/sh")
        .status()
        .expect("tmux");
    assert!(started.success(), "a tmux server outside the root");
    let planted = outside.path().join("planted");
    let keys = format!("touch {}", planted.display());
    let argv = [
        "tmux",
        "-S",
        &socket_text,
        "send-keys",
        "-t",
        "victim",
        &keys,
        "Enter",
    ];
    let confined = run(&sandbox, &argv, root.path()).await;
    std::thread::sleep(Duration::from_millis(500));
    let escaped = planted.exists();

    // The control: the same keys sent unconfined do plant the file.
    let free = Command::new(argv[0])
        .args(&argv[1..])
        .env_remove("TMUX")
        .status()
        .expect("tmux");
    let mut planted_freely = false;
    for _ in 0..50 {
        if planted.exists() {
            planted_freely = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = Command::new("tmux")
        .args(["-S", &socket_text, "kill-server"])
        .status();
    assert!(
        !escaped,
        "a confined tmux drove a shell outside: {confined:?}"
    );
    assert_ne!(confined.code, Some(0), "{confined:?}");
    assert!(free.success() && planted_freely, "the control failed");
}

#[tokio::test]
async fn no_signal_reaches_a_process_outside() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = usable(root.path()).await else {
        return;
    };
    let mut victim = Command::new("sleep").arg("600").spawn().expect("a victim");
    let pid = victim.id().to_string();
    let confined = run(&sandbox, &["kill", "-9", &pid], root.path()).await;
    std::thread::sleep(Duration::from_millis(100));
    let alive = victim.try_wait().expect("wait").is_none();
    let _ = victim.kill();
    let _ = victim.wait();
    assert!(
        alive,
        "a confined command killed a process outside: {confined:?}"
    );
    assert_ne!(confined.code, Some(0), "{confined:?}");

    // Its own children it may still signal.
    let own = run(
        &sandbox,
        &[
            "sh",
            "-c",
            "sleep 30 & kill -9 $! && wait $!; echo ended $?",
        ],
        root.path(),
    )
    .await;
    assert!(own.stdout.text.contains("ended 137"), "{own:?}");
}

#[tokio::test]
async fn no_device_no_host_name_no_interface_no_capability() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = usable(root.path()).await else {
        return;
    };
    let host_before = hostname();
    for (why, script) in [
        ("a character device", "mknod kmsg c 1 11"),
        ("a block device", "mknod disk b 7 0"),
        ("the host's name", "hostname rein-escaped"),
        ("an interface's address", "ip addr add 127.0.0.9/8 dev lo"),
        ("the kernel log", "cat /dev/kmsg"),
        ("a file's owner", "touch mine && chown 4242 mine"),
    ] {
        let ran = run(&sandbox, &["sh", "-c", script], root.path()).await;
        assert_ne!(ran.code, Some(0), "{why}: {ran:?}");
    }
    assert!(!root.path().join("kmsg").exists(), "a device node was made");
    assert!(!root.path().join("disk").exists(), "a device node was made");
    assert_eq!(hostname(), host_before, "the host name changed");
    let addresses = Command::new("ip")
        .args(["addr", "show", "dev", "lo"])
        .output()
        .expect("ip");
    assert!(
        !String::from_utf8_lossy(&addresses.stdout).contains("127.0.0.9"),
        "lo gained an address"
    );
    // A FIFO is no device: still made.
    let fifo = run(&sandbox, &["mkfifo", "pipe"], root.path()).await;
    assert_eq!(fifo.code, Some(0), "{fifo:?}");
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname")
}

/// As root without CAP_SETPCAP (some containers) the bounding set cannot be
/// emptied, and `exec` would hand the command root's capabilities back:
/// the helper refuses to run it at all.
#[test]
fn root_that_cannot_drop_its_bounding_set_is_refused() {
    if !nix::unistd::geteuid().is_root() || !std::path::Path::new("/usr/bin/setpriv").exists() {
        eprintln!("SKIPPED: needs root and setpriv");
        return;
    }
    let root = tempfile::tempdir().expect("root");
    let spec = rein_sandbox::spec::Spec {
        read: ["/usr", "/bin", "/lib", "/lib64", "/etc/ld.so.cache"]
            .map(std::path::PathBuf::from)
            .to_vec(),
        write: vec![root.path().to_path_buf()],
        protect: Vec::new(),
        protect_by: rein_sandbox::spec::ProtectBy::Mounts,
        network: false,
        limits: rein_sandbox::Limits::default(),
        pids_cgroup: None,
        // Outside bubblewrap: the helper's parent is named (here, the
        // test; under setpriv, the exec keeps the pid).
        parent: Some(std::process::id()),
        argv: vec!["/bin/true".into()],
    };
    let run = |wrapped: bool| {
        let mut command = if wrapped {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args(["--bounding-set=-setpcap", "--"])
                .arg(env!("CARGO_BIN_EXE_rein-sandbox-exec"));
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_rein-sandbox-exec"))
        };
        command
            .env(
                rein_sandbox::spec::SPEC_VAR,
                serde_json::to_string(&spec).expect("spec"),
            )
            .output()
            .expect("helper")
    };
    let refused = run(true);
    assert_eq!(refused.status.code(), Some(125), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("CAP_SETPCAP"));
    // The control: with the capability, the same spec runs.
    assert_eq!(run(false).status.code(), Some(0));
}

/// A Ctrl-C at rein's terminal is for rein, never a command's, not even
/// one starting (`common::reins_ctrl_c_spares`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_to_reins_group_never_reaches_a_starting_command() {
    let root = tempfile::tempdir().expect("root");
    let Some(sandbox) = usable(root.path()).await else {
        return;
    };
    common::reins_ctrl_c_spares(&sandbox, root.path()).await;
}
