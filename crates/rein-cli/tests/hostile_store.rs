//! A hostile store and disk under the real `rein` binary: a database of
//! garbage (and garbage behind a valid header), an empty file, a store on
//! a read-only mount, and a full disk (a small tmpfs). Each gives a clear
//! coded error, leaves the database's bytes as they were, and — once the
//! disk has room again — loses nothing.
//!
//! The mounts are made in a private mount namespace (`unshare`), as root or,
//! elsewhere, as the root of a new user namespace: nothing outside the test
//! sees them, and they go with the namespace.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{rein_at, stderr, stdout};

/// The `rein` binary's path, for scripts run in a namespace.
const REIN: &str = env!("CARGO_BIN_EXE_rein");

/// Run `script` (sh, `-e`) in a private mount namespace with `$REIN`,
/// `$HOME_DIR` and `$WORK` (a scratch folder of its own) set.
fn in_namespace(home: &Path, script: &str) -> Output {
    let work = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("unshare");
    // Root may make mounts in a mount namespace of its own; anyone else
    // needs a user namespace of their own too.
    let root =
        std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0);
    if !root {
        cmd.args(["--user", "--map-root-user"]);
    }
    cmd.args(["--mount", "--propagation", "private", "sh", "-ec", script])
        .env("REIN", REIN)
        .env("REIN_HOME", home)
        .env("HOME_DIR", home)
        .env("WORK", work.path())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("REIN_STORE");
    cmd.output().unwrap()
}

/// A session with one finished turn in `home`; its id.
fn one_turn(home: &Path) -> String {
    let out = rein_at(home)
        .args(["chat", "--scripted", "-p", "hello"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = rein_at(home).args(["sessions", "list"]).output().unwrap();
    stdout(&listed)
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

/// Pseudo-random bytes (xorshift), the same every run.
fn garbage(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn a_database_of_garbage_is_refused_with_a_code_and_left_as_it_was() {
    let mut valid_header = b"SQLite format 3\0".to_vec();
    valid_header.extend(garbage(64 * 1024));
    for bytes in [garbage(64 * 1024), valid_header] {
        let home = tempfile::tempdir().unwrap();
        let db = home.path().join("rein.db");
        std::fs::write(&db, &bytes).unwrap();
        for args in [
            vec!["sessions", "list"],
            vec!["chat", "--scripted", "-p", "hello"],
        ] {
            let out = rein_at(home.path()).args(&args).output().unwrap();
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            assert!(err.contains("error[store_unavailable]"), "{args:?}: {err}");
            assert!(!err.contains("panicked"), "{err}");
            assert_eq!(
                std::fs::read(&db).unwrap(),
                bytes,
                "{args:?} changed the file"
            );
        }
    }
}

#[test]
fn an_empty_file_is_a_new_store() {
    // What rein itself creates before SQLite writes the first page.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("rein.db"), b"").unwrap();
    let id = one_turn(home.path());
    let out = rein_at(home.path())
        .args(["sessions", "show", &id])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("hello"), "{}", stdout(&out));
}

#[test]
fn a_store_on_a_read_only_mount_is_refused_and_left_as_it_was() {
    let home = tempfile::tempdir().unwrap();
    let id = one_turn(home.path());
    let db = home.path().join("rein.db");
    let before = std::fs::read(&db).unwrap();
    let out = in_namespace(
        home.path(),
        r#"mount --bind -o ro "$HOME_DIR" "$HOME_DIR"
           mount -o remount,bind,ro "$HOME_DIR"
           if "$REIN" chat --scripted --resume "$SESSION" -p "again" 2>err.txt; then
             echo "CHAT RAN"; fi
           cat err.txt >&2"#
            .replace("$SESSION", &id)
            .replace("err.txt", "$WORK/err.txt")
            .as_str(),
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        !stdout(&out).contains("CHAT RAN"),
        "a turn ran on a read-only store"
    );
    assert!(err.contains("error[store_unavailable]"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(std::fs::read(&db).unwrap(), before, "the database changed");
    // Writable again, the session goes on from where it was.
    let out = rein_at(home.path())
        .args(["chat", "--scripted", "--resume", &id, "-p", "again"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_full_disk_fails_the_turn_with_a_code_and_loses_nothing() {
    let home = tempfile::tempdir().unwrap();
    let script = r#"
        mount -t tmpfs -o size=4m tmpfs "$HOME_DIR"
        "$REIN" chat --scripted -p "hello" >/dev/null
        id=$("$REIN" sessions list | awk '{print $1; exit}')
        echo "SESSION $id"
        "$REIN" sessions export "$id" > "$WORK/full-before.jsonl"
        # Fill the disk to its last byte.
        dd if=/dev/zero of="$HOME_DIR/fill" bs=4k 2>/dev/null || true
        dd if=/dev/zero of="$HOME_DIR/fill2" bs=1 2>/dev/null || true
        if "$REIN" chat --scripted --resume "$id" -p "a second turn on a full disk" 2>&1 >/dev/null \
             | tee "$WORK/full-err.txt" >&2; then :; fi
        if grep -q "error\[" "$WORK/full-err.txt"; then echo "CODED"; fi
        rm -f "$HOME_DIR/fill" "$HOME_DIR/fill2"
        # Room again: the first turn is whole, and the session goes on.
        "$REIN" sessions export "$id" > "$WORK/full-after.jsonl"
        cmp -s "$WORK/full-before.jsonl" "$WORK/full-after.jsonl" && echo "LOG AS BEFORE"
        "$REIN" chat --scripted --resume "$id" -p "a third turn, with room" >/dev/null && echo "WENT ON"
        "$REIN" sessions show "$id"
    "#;
    let out = in_namespace(home.path(), script);
    let (said, err) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "{said}\n{err}");
    assert!(
        said.contains("CODED"),
        "the full disk gave no coded error: {said}\n{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // The failed turn left no trace: the log exports as it did before.
    assert!(said.contains("LOG AS BEFORE"), "{said}\n{err}");
    assert!(said.contains("WENT ON"), "{said}\n{err}");
    // The first turn and the third are both there.
    assert!(said.contains("a third turn, with room"), "{said}");
    assert!(said.contains("hello"), "{said}");
}
