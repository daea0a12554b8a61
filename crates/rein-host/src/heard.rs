//! Words a person says to a hosted program while it runs, and stops
//! posted to its session.
//!
//! Every surface's words reach the run's session inbox: `rein say` and the
//! page post them there from any process, and a line a viewer types into
//! this process's session (`SessionHost::route_input`) is posted there by
//! `Ears` — one bounded path. They are taken from the inbox into the log
//! (`steer.said`) before the program hears them; where they go then —
//! the running turn, the next one, or nowhere — is the run's turns'
//! rule (`turns`). A program that takes messages on its stdin (Claude
//! Code with `--input-format stream-json`) hears them at its next step;
//! its stdin closes when its last turn ends, so that it finishes. Codex's
//! app server hears them as `turn/steer` into its open turn (`Mouth`), and
//! they are shown as heard only once it accepted them (its refusal is
//! shown with its reason). A stop posted meanwhile ends the run.
//!
//! Not here: permission questions (`asks`), which take their decision from
//! the same inbox with `take`.

use std::time::Instant;

use rein_approvals::Surface;
use rein_sessions::{Event, InboxItem, Posted};
use rein_wire::AgentError;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::mpsc;

use crate::progress::{Progress, ProgressKind};
use crate::record::Recorder;
use crate::session::Said;

/// How a question ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// A person said yes (once).
    Allowed,
    /// A person said no.
    Denied,
    /// A stop was posted: the run ends.
    Stopped,
}

/// What the session's inbox held, taken into the log.
#[derive(Debug, Default)]
pub(crate) struct Taken {
    /// The decision of the question asked, when one came (or a stop).
    pub(crate) decided: Option<Decided>,
    /// A stop was taken: the run ends.
    pub(crate) stopped: bool,
    /// Words said, oldest first, recorded and not yet heard.
    pub(crate) words: Vec<String>,
}

/// Take the session's inbox into the log in one transaction, by the rule
/// every driver of a session uses (`rein_sessions::fold`): decisions of
/// pending approvals, words (`steer.said`), a stop — which wins over any
/// decision queued after it, closes `question` as `stopped` when nobody
/// decided it before, and ends the run.
pub(crate) async fn take(
    recorder: &mut Recorder,
    question: Option<&str>,
) -> Result<Taken, AgentError> {
    let store = recorder.store();
    let session = recorder.session().to_owned();
    let entries = store.inbox(&session).await?;
    let Some(upto) = entries.last().map(|e| e.id) else {
        return Ok(Taken::default());
    };
    let control = store.control(&session).await?;
    let opened = if entries
        .iter()
        .any(|e| matches!(e.item, InboxItem::Stop { .. }))
    {
        rein_sessions::open_turn_started(store.as_ref(), &session).await?
    } else {
        None
    };
    let folded = rein_sessions::fold(entries, &control, opened);
    let mut events = folded.events;
    let mut taken = Taken {
        decided: question.and_then(|q| {
            folded.decided.iter().find(|d| d.approval_id == q).map(|d| {
                if d.decision == rein_approvals::Decision::Approved {
                    Decided::Allowed
                } else {
                    Decided::Denied
                }
            })
        }),
        stopped: folded.stop.is_some(),
        words: folded.said,
    };
    if let Some(by) = folded.stop {
        if let Some(approval) = question {
            if taken.decided.is_none() {
                events.push(Event::ApprovalDecided {
                    approval_id: approval.to_owned(),
                    decision: rein_approvals::Decision::Stopped,
                    by: by.clone(),
                    lease: None,
                });
            }
            // The run ends: a yes taken before the stop runs nothing.
            taken.decided = Some(Decided::Stopped);
        }
        events.push(Event::Stopped { by });
    }
    recorder.take_inbox(upto, events).await?;
    Ok(taken)
}

/// What a run took from its inbox when woken.
pub(crate) enum Woke {
    /// A stop: the run ends.
    Stop,
    /// Words said, oldest first, recorded and not yet delivered.
    Words(Vec<String>),
}

/// Why the run looks at its inbox now.
pub(crate) enum Heard {
    /// Something may have been posted (or the fallback interval passed).
    Posted,
    /// A viewer of this process's session said a line.
    Viewer(Said),
    /// The program answered words steered into its turn: accepted, or
    /// refused with its reason.
    Answered(Result<(), String>),
}

/// How far words got when said.
enum Delivery {
    /// Written where the program reads them.
    Heard,
    /// Sent; the program's answer arrives as [`Heard::Answered`].
    Sent,
    /// The program hears no words now.
    Unheard,
}

/// How words reach a program that hears them mid-run.
pub enum Mouth {
    /// Claude Code's stream-json input: a user message per line.
    Stdin(ChildStdin),
    /// Codex's app server: `turn/steer` into the open turn.
    Steer {
        /// The connection.
        peer: crate::jsonrpc::Peer,
        /// The thread.
        thread: serde_json::Value,
        /// The open turn (steering names it, so a late word never lands
        /// in another).
        turn: serde_json::Value,
    },
}

impl Mouth {
    /// Send the program a request as a message of its own: its first, or
    /// the one that starts its next turn.
    pub(crate) async fn ask(&mut self, prompt: &str) -> Result<(), AgentError> {
        let Mouth::Stdin(stdin) = self else {
            return Ok(());
        };
        stdin
            .write_all(&user_message(prompt))
            .await
            .and(stdin.flush().await)
            .map_err(|e| {
                AgentError::new(
                    rein_wire::error::codes::HOSTED_AGENT_FAILED,
                    format!("cannot give the program its request: {e}"),
                )
            })
    }

    /// Say `text`; a steered word's answer is sent to `answers`.
    async fn say(
        &mut self,
        text: &str,
        answers: &mpsc::UnboundedSender<Result<(), String>>,
    ) -> Delivery {
        match self {
            Mouth::Stdin(stdin) => {
                if stdin.write_all(&user_message(text)).await.is_ok() && stdin.flush().await.is_ok()
                {
                    Delivery::Heard
                } else {
                    Delivery::Unheard
                }
            }
            Mouth::Steer { peer, thread, turn } => {
                let (peer, params) = (
                    peer.clone(),
                    serde_json::json!({"threadId": thread, "expectedTurnId": turn,
                        "input": [{"type": "text", "text": text}]}),
                );
                // Its answer is awaited here, not in the run's loop: the
                // loop goes on reading the program's messages meanwhile.
                let answers = answers.clone();
                tokio::spawn(async move {
                    let answer = peer.request("turn/steer", params).await;
                    let _ = answers.send(answer.map(drop).map_err(|e| e.message));
                });
                Delivery::Sent
            }
        }
    }
}

/// A hosted run's ears: where words are delivered (the program, while it
/// hears), and what wakes the run to take them.
pub(crate) struct Ears {
    /// How the program hears words; `None` once a turn ended (or for a
    /// program that hears nothing mid-run).
    mouth: Option<Mouth>,
    /// Posts to the session's inbox from this process (`None`: no session).
    posted: Option<Posted>,
    /// Lines viewers type into this process's session.
    viewers: Option<mpsc::Receiver<Said>>,
    /// When the inbox was last looked at (for the fallback interval).
    looked: Instant,
    /// The session's id, for posting viewers' lines.
    session: String,
    /// Where the program's answers to steered words arrive.
    answers: mpsc::UnboundedReceiver<Result<(), String>>,
    /// The sending side, handed to each steered word.
    answer: mpsc::UnboundedSender<Result<(), String>>,
}

impl Ears {
    /// Ears for a run recorded by `recorder` (none: nothing is taken),
    /// delivering through `mouth` (none: the program hears nothing yet, or
    /// at all), hearing this process's viewers through `viewers`.
    pub(crate) fn new(
        mouth: Option<Mouth>,
        recorder: Option<&Recorder>,
        viewers: Option<mpsc::Receiver<Said>>,
    ) -> Ears {
        let (answer, answers) = mpsc::unbounded_channel();
        Ears {
            answers,
            answer,
            mouth,
            posted: recorder.map(|r| r.store().posted(r.session())),
            viewers,
            looked: Instant::now(),
            session: recorder.map(|r| r.session().to_owned()).unwrap_or_default(),
        }
    }

    /// From now on the program hears words through `mouth`.
    pub(crate) fn speak(&mut self, mouth: Mouth) {
        self.mouth = Some(mouth);
    }

    /// Wait until there may be something to take — a post from this
    /// process at once, another process's at the runner's fallback
    /// interval, a viewer's line — or the program answered steered words.
    pub(crate) async fn wake(&mut self) -> Heard {
        let looked = self.looked;
        let posted = async {
            match self.posted.as_mut() {
                Some(posted) => {
                    if posted.fresh() {
                        return;
                    }
                    let fallback =
                        tokio::time::sleep_until((looked + rein_runner::INBOX_POLL).into());
                    tokio::select! {
                        () = posted.wait() => {}
                        () = fallback => {}
                    }
                }
                None => std::future::pending().await,
            }
        };
        let viewers = async {
            match self.viewers.as_mut() {
                Some(viewers) => viewers.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = posted => Heard::Posted,
            Some(said) = viewers => Heard::Viewer(said),
            Some(answer) = self.answers.recv() => Heard::Answered(answer),
        }
    }

    /// Act on what woke the run: a viewer's line is posted to the inbox
    /// (bounded like every surface's words); the inbox is taken. What was
    /// taken: a stop, or the words said (recorded, not yet delivered).
    pub(crate) async fn take(
        &mut self,
        heard: Heard,
        recorder: Option<&mut Recorder>,
        show: &mut (dyn FnMut(&Progress) + Send),
    ) -> Result<Woke, AgentError> {
        if let Heard::Answered(answer) = heard {
            show(&Progress::detail(
                ProgressKind::Said,
                &match answer {
                    Ok(()) => "heard at the program's next step".to_owned(),
                    Err(why) => format!("recorded; the program did not take it: {why}"),
                },
            ));
            return Ok(Woke::Words(Vec::new()));
        }
        let Some(recorder) = recorder else {
            // Nowhere to record them: a viewer's words are taken as said.
            return Ok(Woke::Words(match heard {
                Heard::Viewer(said) => vec![said.text],
                _ => Vec::new(),
            }));
        };
        if let Heard::Viewer(said) = heard {
            let surface = Surface::product("attach", &said.viewer);
            if let Err(e) = rein_approvals::say(
                recorder.store().as_ref(),
                &self.session,
                &said.text,
                &surface,
            )
            .await
            {
                show(&Progress::detail(
                    ProgressKind::Said,
                    &format!("not said: {}", e.message),
                ));
            }
        }
        self.looked = Instant::now();
        let taken = take(recorder, None).await?;
        Ok(if taken.stopped {
            Woke::Stop
        } else {
            Woke::Words(taken.words)
        })
    }

    /// Whether the program hears words in its running turn now.
    pub(crate) fn steers(&self) -> bool {
        self.mouth.is_some()
    }

    /// How words reach the program now, for starting its next turn.
    pub(crate) fn mouth(&mut self) -> &mut Option<Mouth> {
        &mut self.mouth
    }

    /// Words recorded: the program hears them at its next step, or they
    /// are shown as unheard.
    pub(crate) async fn deliver(
        &mut self,
        words: Vec<String>,
        show: &mut (dyn FnMut(&Progress) + Send),
    ) {
        for text in words {
            let delivery = match self.mouth.as_mut() {
                Some(mouth) => mouth.say(&text, &self.answer).await,
                None => Delivery::Unheard,
            };
            show(&Progress::detail(
                ProgressKind::Said,
                match delivery {
                    Delivery::Heard => "heard at the program's next step",
                    Delivery::Sent => "sent into the program's open turn",
                    Delivery::Unheard => "recorded; the program hears no words now",
                },
            ));
        }
    }

    /// A turn ended: the program's stdin closes so that it finishes once
    /// the words it has are answered.
    pub(crate) fn turn_closed(&mut self) {
        self.mouth = None;
    }
}

/// One user message in Claude Code's stream-json input.
fn user_message(text: &str) -> Vec<u8> {
    let mut line = serde_json::json!({
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": text}]},
    })
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}
