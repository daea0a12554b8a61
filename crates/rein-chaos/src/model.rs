//! The campaign's model: a stateless script, like a real API.
//!
//! Each answer is decided from the request alone — which turn it is (the
//! last user message naming one of [`TURNS`]) and how many steps that turn
//! has taken (assistant messages since) — so a process killed mid-turn and
//! started again is answered exactly where the log left it. Summaries are
//! written when asked, saying nothing the log does not show.
//!
//! Not here: driving the turns or deciding approvals (`child`), checking
//! the outcome (`check`).

use rein_gateway::{CachingStyle, Capabilities, EventStream, Provider};
use rein_testing::{ScriptedCall, ScriptedMessage};
use rein_wire::{ContentBlock, Request, Role, StreamEvent};

/// One step of a scripted turn.
pub enum Step {
    /// Call these tools (name, arguments), in one message.
    Calls(&'static [(&'static str, &'static str)]),
    /// Answer with this text; the turn ends.
    Answer(&'static str),
}

/// A scripted turn: what the person says, and the model's steps.
pub struct Turn {
    /// The person's words (each names its turn, so the model can tell).
    pub says: &'static str,
    /// The model's steps, in order.
    pub steps: &'static [Step],
}

/// The conversation every trial runs: reads, an approved change to a file
/// it read, a denied delete, a batch of reads, a new file, — between the
/// second and third turns — a compaction (`child`), an approved command
/// in rein's sandbox, and a task handed to a sub-agent ([`HELPER`]).
pub const TURNS: &[Turn] = &[
    Turn {
        says: "chaos turn 1: tidy the notes",
        steps: &[
            Step::Calls(&[
                ("read_file", r#"{"path":"notes.txt"}"#),
                ("read_file", r#"{"path":"old.txt"}"#),
            ]),
            Step::Calls(&[("write_file", r#"{"path":"notes.txt","content":"tidied\n"}"#)]),
            Step::Calls(&[("delete_file", r#"{"path":"old.txt"}"#)]),
            Step::Calls(&[
                ("read_file", r#"{"path":"notes.txt"}"#),
                ("read_file", r#"{"path":"old.txt"}"#),
                ("list_files", r#"{"path":"."}"#),
            ]),
            Step::Answer("Tidied the notes; old.txt stays."),
        ],
    },
    Turn {
        says: "chaos turn 2: start a log",
        steps: &[
            Step::Calls(&[("write_file", r#"{"path":"log.txt","content":"one\n"}"#)]),
            Step::Calls(&[("read_file", r#"{"path":"log.txt"}"#)]),
            Step::Answer("The log is started."),
        ],
    },
    Turn {
        says: "chaos turn 3: after the compaction, look again",
        steps: &[
            Step::Calls(&[
                ("read_file", r#"{"path":"notes.txt"}"#),
                ("read_file", r#"{"path":"log.txt"}"#),
            ]),
            Step::Answer("Both files are as left."),
        ],
    },
    Turn {
        says: "chaos turn 4: run the stamp command",
        steps: &[
            Step::Calls(&[("run_command", STAMP)]),
            Step::Answer("The stamp ran."),
        ],
    },
    Turn {
        says: "chaos turn 5: ask a helper",
        steps: &[
            Step::Calls(&[("delegate", r#"{"task":"chaos helper: look at the notes"}"#)]),
            Step::Answer("The helper looked."),
        ],
    },
];

/// The sub-agent's one turn (its task names it): a read, then its answer.
pub static HELPER: Turn = Turn {
    says: "chaos helper: look at the notes",
    steps: &[
        Step::Calls(&[("read_file", r#"{"path":"notes.txt"}"#)]),
        Step::Answer("The notes are read."),
    ],
};

/// The turn index the helper's call ids carry (`t9…`), apart from the
/// main conversation's.
const HELPER_INDEX: usize = 9;

/// The sandboxed command of turn 4: it marks its start and its end in
/// `stamp.txt`, with a pause between so that kills land mid-command too.
/// Run once, the file holds [`STAMPED`]; a command killed with rein holds
/// only its first line, and a command run twice would hold two. It starts
/// a long sleeper in the background and leaves it running: killed with
/// rein mid-command or in the instant after the command ended, the sleeper
/// must die all the same (the sandbox's keeper sees to both).
pub const STAMP: &str = r#"{"command":["sh","-c","sleep 30 >/dev/null 2>&1 & echo began >> stamp.txt; sleep 0.3; echo ended >> stamp.txt"]}"#;

/// What `stamp.txt` holds after the command ran once, whole.
pub const STAMPED: &str = "began\nended\n";

/// The scripted model.
pub struct Script;

impl Provider for Script {
    fn name(&self) -> &str {
        "chaos-script"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            caching: CachingStyle::None,
            max_cache_breakpoints: 0,
            context_window: 200_000,
            structured_output: false,
            token_counting: false,
        }
    }

    fn stream(&self, request: Request) -> EventStream {
        let events = answer(&request);
        Box::pin(futures::stream::iter(events.into_iter().map(Ok)))
    }
}

/// The whole answer to `request`.
fn answer(request: &Request) -> Vec<StreamEvent> {
    let summarising = request
        .system
        .first()
        .is_some_and(|b| b.text.starts_with("Summarise"));
    let step = if summarising {
        Some((
            0,
            0,
            &Step::Answer("Earlier turns read files and were answered."),
        ))
    } else {
        where_we_are(request)
    };
    let message = match step {
        Some((turn, step, Step::Calls(calls))) => (0..).zip(calls.iter()).fold(
            ScriptedMessage::text(&[]),
            |message, (index, (tool, args))| {
                // Unique in the session and the same however often the
                // step is asked again.
                message.with_call(ScriptedCall {
                    id: format!("t{turn}s{step}c{index}"),
                    name: (*tool).to_owned(),
                    arguments: (*args).to_owned(),
                    fragments: 1,
                })
            },
        ),
        Some((_, _, Step::Answer(text))) => ScriptedMessage::text(&[text]),
        None => ScriptedMessage::text(&["The script has nothing more to say."]),
    };
    message.events()
}

/// The step the request is at: the turn named by the last user message
/// that names one, and the number of assistant messages after it (with
/// the turn's and the step's indexes).
fn where_we_are(request: &Request) -> Option<(usize, usize, &'static Step)> {
    let (at, (index, turn)) = request
        .messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, m)| m.role == Role::User)
        .find_map(|(i, m)| {
            m.content.iter().find_map(|b| match b {
                ContentBlock::Text { text } => TURNS
                    .iter()
                    .enumerate()
                    .chain([(HELPER_INDEX, &HELPER)])
                    .find(|(_, t)| text.contains(t.says))
                    .map(|t| (i, t)),
                _ => None,
            })
        })?;
    let taken = request.messages[at..]
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    turn.steps.get(taken).map(|step| (index, taken, step))
}
