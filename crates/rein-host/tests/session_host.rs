//! The session host with a real `bash` in a real PTY: two viewers see the
//! same output, a person takes over by typing, the agent's input is gated
//! meanwhile (its output never is), a second person's takeover is refused
//! and recorded, the holder releases.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rein_host::pty;
use rein_host::session::{
    Delivery, InputHolder, InputResult, Intervention, InterventionKind, OpenRefusal, OpenRequest,
    ProtocolChannel, RenderMode, SNAPSHOT_BYTES, SessionEvent, SessionHost, SessionPty,
};

type Screen = Arc<Mutex<Vec<u8>>>;

fn viewer(host: &SessionHost, session: &str, name: &str) -> Screen {
    let screen: Screen = Arc::default();
    let sink = screen.clone();
    let snapshot = host
        .attach(session, name, move |chunk| {
            sink.lock().unwrap().extend_from_slice(chunk)
        })
        .unwrap();
    screen.lock().unwrap().extend_from_slice(&snapshot.output);
    screen
}

fn wait_for(screen: &Screen, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = String::from_utf8_lossy(&screen.lock().unwrap()).into_owned();
        if text.contains(needle) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "never saw {needle:?} in {text:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn seen(screen: &Screen, needle: &str) -> bool {
    String::from_utf8_lossy(&screen.lock().unwrap()).contains(needle)
}

fn bash(host: &SessionHost, session: &str) -> pty::PtyProcess {
    let env: BTreeMap<String, String> = [
        ("PATH", "/usr/bin:/bin"),
        ("TERM", "dumb"),
        ("PS1", "$ "),
        ("HOME", "/tmp"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let argv = ["/bin/bash", "--norc", "--noprofile", "-i"].map(String::from);
    let (terminal, process) = pty::spawn(
        &argv,
        std::path::Path::new("/tmp"),
        &env,
        (120, 40),
        host.clone(),
        session,
    )
    .unwrap();
    host.open(OpenRequest {
        session: session.into(),
        supports: vec![RenderMode::NativeTui],
        mode: RenderMode::NativeTui,
        pty: Box::new(terminal),
        protocol: None,
    })
    .unwrap();
    process
}

#[test]
fn two_viewers_a_takeover_by_typing_gated_agent_input_and_release() {
    let host = SessionHost::new();
    let events: Arc<Mutex<Vec<SessionEvent>>> = Arc::default();
    let records: Arc<Mutex<Vec<Intervention>>> = Arc::default();
    let (e, r) = (events.clone(), records.clone());
    host.on_event(move |ev| e.lock().unwrap().push(ev));
    host.on_intervention(move |x| r.lock().unwrap().push(x));
    let process = bash(&host, "s1");

    let alice = viewer(&host, "s1", "alice");
    let bob = viewer(&host, "s1", "bob");
    host.agent_input("s1", b"echo agent-$((1+1))\n").unwrap();
    wait_for(&alice, "agent-2");
    wait_for(&bob, "agent-2");

    // Alice types: the input is hers at once, her keystrokes reach bash.
    let (input, delivery) = host
        .take_over("s1", "alice", b"echo person-$((2+3))\n")
        .unwrap();
    assert_eq!(
        input,
        InputHolder::Person {
            viewer: "alice".into(),
            interventions: 1
        }
    );
    assert_eq!(delivery, Delivery::Pty);
    wait_for(&bob, "person-5");

    // The agent's input is gated while she holds it…
    assert!(!host.agent_may_write("s1"));
    assert_eq!(
        host.agent_input("s1", b"echo gated-$((3+4))\n"),
        Err(InputResult::Held {
            holder: "alice".into()
        })
    );
    // …its output is not (bash's own output keeps flowing to both).
    host.take_over("s1", "alice", b"echo still-$((4+4))\n")
        .unwrap();
    wait_for(&alice, "still-8");
    wait_for(&bob, "still-8");

    // Bob's takeover is refused, naming Alice, and recorded.
    assert_eq!(
        host.take_over("s1", "bob", b"echo bob-$((5+5))\n"),
        Err(InputResult::Held {
            holder: "alice".into()
        })
    );
    assert_eq!(
        host.route_input("s1", "bob", "hello"),
        InputResult::Held {
            holder: "alice".into()
        }
    );
    assert!(!host.release("s1", "bob"), "only the holder releases");
    assert!(host.release("s1", "alice"));
    host.agent_input("s1", b"echo back-$((6+6))\n").unwrap();
    wait_for(&alice, "back-12");
    assert!(
        !seen(&alice, "gated-7") && !seen(&alice, "bob-10"),
        "gated input reached bash"
    );

    // A late viewer gets the retained screen; detach counts down.
    let carol = viewer(&host, "s1", "carol");
    assert!(seen(&carol, "agent-2") && seen(&carol, "back-12"));
    assert!(host.detach("s1", "carol"));

    let records = records.lock().unwrap().clone();
    let kinds: Vec<InterventionKind> = records.iter().map(|x| x.kind).collect();
    assert_eq!(
        kinds,
        [
            InterventionKind::Takeover,
            InterventionKind::Refused,
            InterventionKind::Released
        ]
    );
    assert_eq!(records[0].data.as_deref(), Some("echo person-$((2+3))\n"));
    assert_eq!(records[1].holder.as_deref(), Some("alice"));
    let events = events.lock().unwrap().clone();
    let feed = serde_json::to_string(&events).unwrap();
    assert!(
        !feed.contains("person-"),
        "the live feed carries no content: {feed}"
    );
    assert!(events.contains(&SessionEvent::Attached {
        session: "s1".into(),
        viewer: "bob".into(),
        viewers: 2
    }));
    assert!(events.contains(&SessionEvent::Detached {
        session: "s1".into(),
        viewer: "carol".into(),
        viewers: 2
    }));
    assert!(events.contains(&SessionEvent::TakeoverRefused {
        session: "s1".into(),
        viewer: "bob".into(),
        holder: "alice".into()
    }));

    assert!(host.close("s1"));
    assert!(process.wait().is_some());
    assert_eq!(
        host.take_over("s1", "alice", b"x"),
        Err(InputResult::NoSuchSession)
    );
}

#[test]
fn the_snapshot_is_bounded_and_says_so() {
    let host = SessionHost::new();
    let process = bash(&host, "big");
    let watcher = viewer(&host, "big", "w");
    host.agent_input(
        "big",
        b"head -c 300000 /dev/zero | tr '\\0' x; echo; echo end-$((9*9))\n",
    )
    .unwrap();
    wait_for(&watcher, "end-81");
    let snapshot = host.snapshot("big").unwrap();
    assert!(snapshot.truncated);
    assert!(snapshot.output.len() <= SNAPSHOT_BYTES);
    assert!(String::from_utf8_lossy(&snapshot.output).contains("end-81"));
    host.close("big");
    process.wait();
}

struct NoPty;
impl SessionPty for NoPty {
    fn write(&mut self, _: &[u8]) -> std::io::Result<()> {
        Ok(())
    }
    fn resize(&mut self, _: u16, _: u16) -> std::io::Result<()> {
        Ok(())
    }
    fn close(&mut self) {}
}
struct Channel;
impl ProtocolChannel for Channel {
    fn close(&mut self) {}
}

#[test]
fn render_modes_are_exclusive_and_refusals_are_named() {
    let host = SessionHost::new();
    let open = |id: &str, supports: Vec<RenderMode>, mode, protocol: bool| {
        host.open(OpenRequest {
            session: id.into(),
            supports,
            mode,
            pty: Box::new(NoPty),
            protocol: protocol.then(|| Box::new(Channel) as Box<dyn ProtocolChannel>),
        })
    };
    let both = vec![RenderMode::NativeTui, RenderMode::Acp];
    assert_eq!(
        open("a", both.clone(), RenderMode::NativeTui, true),
        Err(OpenRefusal::ProtocolChannelForbidden)
    );
    assert_eq!(
        open("a", both.clone(), RenderMode::Acp, false),
        Err(OpenRefusal::ProtocolChannelRequired)
    );
    assert_eq!(
        open("a", vec![RenderMode::NativeTui], RenderMode::Acp, true),
        Err(OpenRefusal::ModeUnavailable)
    );
    assert_eq!(open("a", both.clone(), RenderMode::Acp, true), Ok(()));
    assert_eq!(
        open("a", both, RenderMode::NativeTui, false),
        Err(OpenRefusal::SessionExists)
    );
    // In acp a keystroke is not heard and takes nothing; a line is heard
    // only while the session's driver listens, and never takes the input.
    assert_eq!(
        host.take_over("a", "p", b"stop that"),
        Err(InputResult::NotHeard)
    );
    assert_eq!(
        host.route_input("a", "p", "stop that"),
        InputResult::NotHeard
    );
    let mut words = host.listen("a").unwrap();
    assert_eq!(
        host.route_input("a", "p", "stop that"),
        InputResult::Routed {
            routing: rein_host::session::Routing::Steer,
            delivery: Delivery::Protocol
        }
    );
    assert_eq!(words.try_recv().unwrap().text, "stop that");
    assert_eq!(
        host.listed("a").unwrap().holder,
        rein_host::session::InputHolder::Agent
    );
    // Words pile up only so far: past the bound they are not heard.
    for _ in 0..rein_host::session::MAX_WAITING_WORDS {
        host.route_input("a", "p", "again");
    }
    assert_eq!(
        host.route_input("a", "p", "one more"),
        InputResult::NotHeard
    );
    drop(words);
    assert_eq!(host.route_input("a", "p", "gone"), InputResult::NotHeard);
    assert!(host.listen("s-none").is_none());
    assert_eq!(
        host.route_input("zzz", "p", "x"),
        InputResult::NoSuchSession
    );
}

/// A line said to a protocol session is routed by where its program is in
/// its turns, as its driver says: it steers a turn that hears words, is
/// queued by one that hears none, starts the next turn when none runs, and
/// is not heard (nothing sent) by a program that takes no more words. The
/// live feed says how each was routed.
#[test]
fn a_line_is_routed_by_where_the_program_is_in_its_turns() {
    use rein_host::session::{Routing, Turning};
    let host = SessionHost::new();
    let routed: Arc<Mutex<Vec<Routing>>> = Arc::default();
    let feed = routed.clone();
    host.on_event(move |event| {
        if let SessionEvent::Input { routing, .. } = event {
            feed.lock().unwrap().push(routing);
        }
    });
    host.open(OpenRequest {
        session: "t".into(),
        supports: vec![RenderMode::Stream],
        mode: RenderMode::Stream,
        pty: Box::new(NoPty),
        protocol: Some(Box::new(Channel)),
    })
    .unwrap();
    let mut words = host.listen("t").unwrap();
    let routed_as = |routing| InputResult::Routed {
        routing,
        delivery: Delivery::Protocol,
    };
    for (turning, said, result) in [
        (Turning::Steers, "steer", routed_as(Routing::Steer)),
        (Turning::Queues, "queue", routed_as(Routing::Queued)),
        (Turning::Waits, "start", routed_as(Routing::StartTurn)),
        (Turning::Deaf, "unheard", InputResult::NotHeard),
    ] {
        host.turning("t", turning);
        assert_eq!(host.route_input("t", "p", said), result, "{turning:?}");
    }
    let mut heard = Vec::new();
    while let Ok(said) = words.try_recv() {
        heard.push(said.text);
    }
    assert_eq!(heard, ["steer", "queue", "start"]);
    assert_eq!(
        *routed.lock().unwrap(),
        [Routing::Steer, Routing::Queued, Routing::StartTurn]
    );
}

/// A host whose live events and interventions are kept.
type Kept<T> = Arc<Mutex<Vec<T>>>;

fn watched() -> (SessionHost, Kept<SessionEvent>, Kept<Intervention>) {
    let host = SessionHost::new();
    let events: Kept<SessionEvent> = Arc::default();
    let feed = events.clone();
    host.on_event(move |e| feed.lock().unwrap().push(e));
    let records: Kept<Intervention> = Arc::default();
    let sink = records.clone();
    host.on_intervention(move |x| sink.lock().unwrap().push(x));
    (host, events, records)
}

/// The interventions recorded: (kind, data).
fn kinds(records: &Mutex<Vec<Intervention>>) -> Vec<(InterventionKind, Option<String>)> {
    records
        .lock()
        .unwrap()
        .iter()
        .map(|x| (x.kind, x.data.clone()))
        .collect()
}

/// The modes the live feed said a session switched to.
fn switched(events: &Mutex<Vec<SessionEvent>>) -> Vec<RenderMode> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            SessionEvent::Switched { mode, .. } => Some(*mode),
            _ => None,
        })
        .collect()
}

/// Switching a session's mode: only a session whose program has two, only
/// when its owner hears requests, from a stream only between turns, and
/// only by the holder when someone holds it; the switch keeps the mode's
/// rules (a terminal UI has no protocol channel), keeps the viewers
/// (told), releases a holder (recorded) and is a live event.
#[tokio::test]
async fn a_session_switches_its_mode_only_between_turns_and_by_its_holder() {
    use rein_host::session::{SwitchResult, Turning};
    let (host, events, records) = watched();
    let open = |id: &str, supports: Vec<RenderMode>| {
        host.open(OpenRequest {
            session: id.into(),
            supports,
            mode: RenderMode::Stream,
            pty: Box::new(NoPty),
            protocol: Some(Box::new(Channel)),
        })
    };
    open("one", vec![RenderMode::Stream]).unwrap();
    assert!(host.on_switch("one").is_none());
    assert_eq!(host.ask_switch("one", "p"), SwitchResult::NotSwitchable);
    open("two", vec![RenderMode::Stream, RenderMode::NativeTui]).unwrap();
    // Nobody hears requests yet: nothing switches.
    host.turning("two", Turning::Waits);
    assert_eq!(host.ask_switch("two", "p"), SwitchResult::NotSwitchable);
    assert!(!host.listed("two").unwrap().switchable);
    let mut asked = host.on_switch("two").unwrap();
    assert!(host.listed("two").unwrap().switchable);
    for turning in [Turning::Steers, Turning::Queues] {
        host.turning("two", turning);
        assert_eq!(host.ask_switch("two", "p"), SwitchResult::TurnRunning);
    }
    host.turning("two", Turning::Waits);
    assert_eq!(
        host.ask_switch("two", "p"),
        SwitchResult::Asked {
            to: RenderMode::NativeTui
        }
    );
    assert_eq!(asked.try_recv().unwrap(), RenderMode::NativeTui);
    // The owner switches: a terminal UI takes no protocol channel.
    let screen = viewer(&host, "two", "v");
    assert_eq!(
        host.switch(
            "two",
            RenderMode::NativeTui,
            Box::new(NoPty),
            Some(Box::new(Channel))
        ),
        Err(OpenRefusal::ProtocolChannelForbidden)
    );
    assert_eq!(
        host.switch("one", RenderMode::NativeTui, Box::new(NoPty), None),
        Err(OpenRefusal::ModeUnavailable)
    );
    host.switch("two", RenderMode::NativeTui, Box::new(NoPty), None)
        .unwrap();
    assert!(seen(&screen, "now in native-tui"));
    assert_eq!(host.listed("two").unwrap().mode, RenderMode::NativeTui);
    // In the UI a keystroke takes it over; only the holder may switch back.
    host.take_over("two", "p", b"x").unwrap();
    assert_eq!(
        host.ask_switch("two", "q"),
        SwitchResult::Held { holder: "p".into() }
    );
    assert_eq!(
        host.ask_switch("two", "p"),
        SwitchResult::Asked {
            to: RenderMode::Stream
        }
    );
    assert_eq!(
        host.switch("two", RenderMode::Stream, Box::new(NoPty), None),
        Err(OpenRefusal::ProtocolChannelRequired)
    );
    host.switch(
        "two",
        RenderMode::Stream,
        Box::new(NoPty),
        Some(Box::new(Channel)),
    )
    .unwrap();
    assert_eq!(host.listed("two").unwrap().holder, InputHolder::Agent);
    assert!(seen(&screen, "now in stream"));
    assert_eq!(
        kinds(&records),
        [
            (InterventionKind::Switched, Some("native-tui".into())),
            (InterventionKind::Takeover, Some("x".into())),
            (InterventionKind::Switched, Some("stream".into())),
            (InterventionKind::Released, None),
        ]
    );
    assert_eq!(
        switched(&events),
        [RenderMode::NativeTui, RenderMode::Stream]
    );
    assert_eq!(
        host.switch(
            "gone",
            RenderMode::Stream,
            Box::new(NoPty),
            Some(Box::new(Channel))
        ),
        Err(OpenRefusal::NoSuchSession)
    );
}

#[test]
fn a_modes_name_is_the_one_on_the_wire() {
    for mode in [RenderMode::NativeTui, RenderMode::Acp, RenderMode::Stream] {
        assert_eq!(serde_json::to_value(mode).unwrap(), mode.as_str());
    }
}
