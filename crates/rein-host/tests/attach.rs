//! The attach socket: a viewer gets the snapshot then live output, its
//! keys take the session over, and viewers past the bound are turned away.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::{Arc, Mutex};

use rein_host::attach::{self, MAX_VIEWERS, kind};
use rein_host::session::{InputHolder, OpenRequest, RenderMode, SessionHost, SessionPty};
use tokio::net::UnixStream;
use tokio_util::sync::CancellationToken;

/// A terminal that keeps what was typed into it.
struct Typed(Arc<Mutex<Vec<u8>>>);

impl SessionPty for Typed {
    fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(())
    }
    fn resize(&mut self, _: u16, _: u16) -> std::io::Result<()> {
        Ok(())
    }
    fn close(&mut self) {}
}

async fn next_of(stream: &mut UnixStream, want: u8) -> Vec<u8> {
    loop {
        let (k, payload) = attach::read_frame(stream).await.unwrap().unwrap();
        if k == want {
            return payload;
        }
    }
}

#[tokio::test]
async fn viewers_see_output_take_over_and_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let host = SessionHost::new();
    let typed: Arc<Mutex<Vec<u8>>> = Arc::default();
    host.open(OpenRequest {
        session: "s".into(),
        supports: vec![RenderMode::NativeTui],
        mode: RenderMode::NativeTui,
        pty: Box::new(Typed(typed.clone())),
        protocol: None,
    })
    .unwrap();
    host.output("s", b"before ");
    let socket = dir.path().join("agents").join("s.sock");
    let listener = attach::listen(&socket).unwrap();
    let ended = CancellationToken::new();
    tokio::spawn(attach::serve(
        listener,
        host.clone(),
        "s".into(),
        ended.clone(),
    ));

    let mut first = UnixStream::connect(&socket).await.unwrap();
    attach::write_frame(&mut first, kind::HELLO, b"ann")
        .await
        .unwrap();
    assert_eq!(next_of(&mut first, kind::OUTPUT).await, b"before ");
    host.output("s", b"after");
    assert_eq!(next_of(&mut first, kind::OUTPUT).await, b"after");
    attach::write_frame(&mut first, kind::KEYS, b"ls\n")
        .await
        .unwrap();
    let said = String::from_utf8(next_of(&mut first, kind::STATUS).await).unwrap();
    let said = if said.starts_with("attached") {
        String::from_utf8(next_of(&mut first, kind::STATUS).await).unwrap()
    } else {
        said
    };
    assert!(said.starts_with("you took the session over"), "{said}");
    assert_eq!(typed.lock().unwrap().as_slice(), b"ls\n");
    assert!(
        matches!(host.listed("s").unwrap().holder, InputHolder::Person { viewer, .. } if viewer.starts_with("ann#"))
    );

    // Fill the rest of the places; the next one is turned away.
    let mut others = Vec::new();
    for _ in 1..MAX_VIEWERS {
        let mut s = UnixStream::connect(&socket).await.unwrap();
        attach::write_frame(&mut s, kind::HELLO, b"v")
            .await
            .unwrap();
        next_of(&mut s, kind::OUTPUT).await;
        others.push(s);
    }
    let mut late = UnixStream::connect(&socket).await.unwrap();
    attach::write_frame(&mut late, kind::HELLO, b"late")
        .await
        .unwrap();
    assert_eq!(next_of(&mut late, kind::END).await, b"too many viewers");

    // The session's end reaches every viewer.
    ended.cancel();
    assert_eq!(next_of(&mut first, kind::END).await, b"the session ended");
}

#[tokio::test]
async fn a_list_names_live_sessions_only_and_waits_on_no_silent_socket() {
    let home = tempfile::tempdir().unwrap();
    let host = SessionHost::new();
    host.open(OpenRequest {
        session: "live".into(),
        supports: vec![RenderMode::NativeTui],
        mode: RenderMode::NativeTui,
        pty: Box::new(Typed(Arc::default())),
        protocol: None,
    })
    .unwrap();
    let ended = CancellationToken::new();
    let listener = attach::listen(&attach::socket_path(home.path(), "live")).unwrap();
    tokio::spawn(attach::serve(
        listener,
        host.clone(),
        "live".into(),
        ended.clone(),
    ));
    // A socket that takes the question and never answers, one whose owner
    // is gone, and a plain file: none is a live session.
    let silent = attach::listen(&attach::socket_path(home.path(), "silent")).unwrap();
    let _dead = attach::listen(&attach::socket_path(home.path(), "dead")).map(drop);
    std::fs::write(attach::socket_path(home.path(), "file"), b"not a socket").unwrap();
    let held_open = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            kept.push(stream);
        }
    });

    let live = attach::live_sessions(home.path()).await;
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0].session, "live");
    assert_eq!(live[0].mode, RenderMode::NativeTui);
    assert_eq!(live[0].holder, InputHolder::Agent);
    assert!(live[0].viewers.is_empty(), "asking is not watching");

    ended.cancel();
    held_open.abort();
}

/// A viewer's terminal answering the program's question about it (here
/// where its cursor is) is not the viewer's person typing: the answer
/// reaches the program while nobody holds the session, takes nothing, and
/// is dropped while someone else holds it; a key typed with it still takes
/// the session over, without the answer.
#[tokio::test]
async fn a_viewers_terminal_answering_the_program_takes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let host = SessionHost::new();
    let typed: Arc<Mutex<Vec<u8>>> = Arc::default();
    let taken: Arc<Mutex<u32>> = Arc::default();
    let count = taken.clone();
    host.on_intervention(move |_| *count.lock().unwrap() += 1);
    host.open(OpenRequest {
        session: "s".into(),
        supports: vec![RenderMode::NativeTui],
        mode: RenderMode::NativeTui,
        pty: Box::new(Typed(typed.clone())),
        protocol: None,
    })
    .unwrap();
    let socket = dir.path().join("agents").join("s.sock");
    let listener = attach::listen(&socket).unwrap();
    tokio::spawn(attach::serve(
        listener,
        host.clone(),
        "s".into(),
        CancellationToken::new(),
    ));
    let mut ann = UnixStream::connect(&socket).await.unwrap();
    attach::write_frame(&mut ann, kind::HELLO, b"ann")
        .await
        .unwrap();
    next_of(&mut ann, kind::OUTPUT).await;
    let answer = b"\x1b[12;40R\x1b]11;rgb:0000/0000/0000\x1b\\";
    attach::write_frame(&mut ann, kind::KEYS, answer)
        .await
        .unwrap();
    let wait_for = |want: &'static [u8]| {
        let typed = typed.clone();
        async move {
            for _ in 0..200 {
                if typed.lock().unwrap().ends_with(want) {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            panic!("never written: {want:?}");
        }
    };
    wait_for(answer).await;
    assert_eq!(host.listed("s").unwrap().holder, InputHolder::Agent);
    assert_eq!(*taken.lock().unwrap(), 0);
    // Bob takes it by typing; Ann's terminal answering now reaches nothing
    // and says nothing to her; her key with an answer is refused, naming Bob.
    host.take_over("s", "bob", b"b").unwrap();
    attach::write_frame(&mut ann, kind::KEYS, b"\x1b[3;1R")
        .await
        .unwrap();
    attach::write_frame(&mut ann, kind::KEYS, b"x\x1b[3;1R")
        .await
        .unwrap();
    let said = String::from_utf8(next_of(&mut ann, kind::STATUS).await).unwrap();
    let said = if said.starts_with("attached") {
        String::from_utf8(next_of(&mut ann, kind::STATUS).await).unwrap()
    } else {
        said
    };
    assert_eq!(said, "bob holds the session; your keys were not sent");
    assert_eq!(
        typed.lock().unwrap().as_slice(),
        [&answer[..], b"b"].concat()
    );
    host.release("s", "bob");
    // Her key and an answer together: the key takes it, the answer comes too.
    attach::write_frame(&mut ann, kind::KEYS, b"y\x1b[4;2R")
        .await
        .unwrap();
    wait_for(b"y").await;
    assert!(matches!(host.listed("s").unwrap().holder,
        InputHolder::Person { viewer, .. } if viewer.starts_with("ann#")));
}
