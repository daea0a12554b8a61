//! A write killed at any point leaves the old file or the new one: a child
//! process (this test binary, re-run on an `#[ignore]`d helper) rewrites a
//! large file through [`Root::write`] in a loop, alternating two contents,
//! and is killed with SIGKILL at random moments; after each kill the file
//! is checked whole.

use std::process::{Command, Stdio};
use std::time::Duration;

use super::Root;

/// Two contents of one large size, told apart by every byte.
const SIZE: usize = 3 * 1024 * 1024;

fn content(which: u8) -> Vec<u8> {
    vec![which; SIZE]
}

#[test]
#[ignore = "helper run as a child process by a_killed_write_leaves_the_old_file_or_the_new_one"]
fn helper_write_loop() {
    let Ok(dir) = std::env::var("REIN_HELPER_ROOT") else {
        return;
    };
    let root = Root::new(std::path::Path::new(&dir)).unwrap();
    let (a, b) = (content(b'a'), content(b'b'));
    println!("writing");
    for n in 0u64.. {
        let bytes = if n % 2 == 0 { &b } else { &a };
        root.write("big.txt", bytes, None, false).unwrap();
    }
}

#[test]
fn a_killed_write_leaves_the_old_file_or_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.txt");
    std::fs::write(&path, content(b'a')).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
    let (a, b) = (content(b'a'), content(b'b'));
    // A small seeded source: the kill lands at a different point each trial.
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15 ^ u64::from(std::process::id());
    let (mut saw_a, mut saw_b) = (0, 0);
    for trial in 0..200 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "crash_tests::helper_write_loop",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("REIN_HELPER_ROOT", dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        // Past the helper's start (a few ms), then anywhere in its writes.
        let wait = 5 + (seed >> 33) % 60;
        std::thread::sleep(Duration::from_millis(wait));
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        child.wait().unwrap();
        let now = std::fs::read(&path).unwrap();
        assert!(
            now == a || now == b,
            "trial {trial} (killed after {wait} ms): the file is {} bytes and neither the old content nor the new",
            now.len()
        );
        if now == a {
            saw_a += 1;
        } else {
            saw_b += 1;
        }
        let mode = std::fs::metadata(&path).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o640,
            "trial {trial}: the write did not keep the file's mode"
        );
    }
    // The kills landed on both sides of a rename, so writes did happen.
    assert!(saw_b > 0 && saw_a > 0, "old {saw_a}, new {saw_b}");
    // Left-over temporary files are hidden, never taken for the file.
    let listed = Root::new(dir.path()).unwrap().walk(None).unwrap();
    assert_eq!(listed, vec!["big.txt".to_owned()]);
}

#[test]
fn what_a_killed_writer_left_is_swept_by_the_next_write_once_stale() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(dir.path()).unwrap();
    let stale = dir.path().join(".a.txt.rein-0001.tmp");
    let live = dir.path().join(".a.txt.rein-0002.tmp");
    std::fs::write(&stale, "half").unwrap();
    std::fs::write(&live, "in progress").unwrap();
    let long_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
    root.write("a.txt", b"new", None, false).unwrap();
    assert!(!stale.exists(), "a killed writer's leftover stayed");
    assert!(live.exists(), "a live writer's file was taken");
    assert_eq!(std::fs::read(dir.path().join("a.txt")).unwrap(), b"new");
}
