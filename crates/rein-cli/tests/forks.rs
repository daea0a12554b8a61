//! `rein sessions fork`: a new session from a session's history up to a
//! finished turn, the first untouched, and a coded error for a turn that
//! is not there.

use rein::sessions::{SqliteStore, Store};

use crate::common::{rein_at, run_with_stdin, stderr, stdout};

fn show(home: &std::path::Path, id: &str) -> String {
    let out = rein_at(home)
        .args(["sessions", "show", id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

#[tokio::test]
async fn a_session_forks_after_a_turn_and_the_first_stays_whole() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--scripted"]);
    let out = run_with_stdin(cmd, b"hello\nwhat is two plus two\n/exit\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let store = SqliteStore::open(home.path().join("rein.db"))
        .await
        .unwrap();
    let id = store.list_sessions(1).await.unwrap().remove(0).id;
    let first_turn = store.turns(&id).await.unwrap().remove(0).id;

    let out = rein_at(home.path())
        .args(["sessions", "fork", &id, "--turn", &first_turn])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let forked = stdout(&out).trim().to_owned();
    assert_ne!(forked, id);
    let copy = show(home.path(), &forked);
    assert!(copy.contains("you> hello"), "{copy}");
    assert!(
        !copy.contains("two plus two"),
        "only up to the turn: {copy}"
    );
    assert!(
        show(home.path(), &id).contains("two plus two"),
        "the first is whole"
    );
    let info = store.session(&forked).await.unwrap();
    assert_eq!(info.metadata["forked_from"]["session"], id.as_str());
    assert_eq!(info.metadata["surface"], "terminal", "its metadata travels");

    let out = rein_at(home.path())
        .args(["sessions", "fork", &id])
        .output()
        .unwrap();
    let whole = stdout(&out).trim().to_owned();
    assert!(
        show(home.path(), &whole).contains("two plus two"),
        "to the last turn"
    );

    let out = rein_at(home.path())
        .args(["sessions", "fork", &id, "--turn", "no-such-turn"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("error[turn_not_found]"),
        "{}",
        stderr(&out)
    );
}
