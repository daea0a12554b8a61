//! One turn at the terminal: the turn driven while its events print as
//! they come (answer text, tool lines with duration and outcome, usage),
//! Ctrl-C (once: interrupt at the next step; twice: leave at once), and
//! at a terminal a line typed meanwhile steering the turn (a `/command`
//! waits for the turn to end).
//!
//! Not here: approvals between turns and the chat loop (`chat`).

use std::io::{IsTerminal, Write};

use rein::approvals::{Answer, LeaseScope, Surface};
use rein::runner::{ApprovalRequest, Conversation, TurnOutcome, UiEvent, UiKind};
use rein::wire::AgentError;
use rein::wire::visible::visible;

use super::commands::{self, Cost};
use super::input::Asker;
use super::markdown::Styler;
use super::output::{io_error, say};

#[expect(clippy::too_many_lines, reason = "one arm per live event")]
fn print_event(
    event: &UiEvent,
    out: &mut impl Write,
    info: &mut impl Write,
    view: &mut View,
    midline: &mut bool,
    styler: &mut Option<Styler>,
) -> Result<(), AgentError> {
    let mut line = |text: String, midline: &mut bool| -> Result<(), AgentError> {
        // Styles close before a status line: the terminal's state is shared.
        if let Some(styler) = styler.as_mut() {
            out.write_all(styler.finish().as_bytes())
                .map_err(io_error)?;
        }
        if *midline {
            writeln!(out).map_err(io_error)?;
            *midline = false;
        }
        say(info, &text)
    };
    // A sub-agent's own words stay in its session; its tool lines show,
    // marked with its path, and what it costs counts.
    let child = !event.agent.is_main();
    let who = if child {
        format!("[{}] ", event.agent)
    } else {
        String::new()
    };
    match &event.kind {
        UiKind::TextDelta { .. } | UiKind::ReasoningDelta { .. } | UiKind::TextReplaced { .. }
            if child => {}
        UiKind::TextDelta { text } => {
            // Model text: its control characters are shown, never sent;
            // at a terminal its Markdown is styled after that.
            let shown = visible(text);
            let styled = match styler.as_mut() {
                Some(styler) => std::borrow::Cow::Owned(styler.push(&shown)),
                None => shown,
            };
            out.write_all(styled.as_bytes()).map_err(io_error)?;
            out.flush().map_err(io_error)?;
            *midline = !text.ends_with('\n');
        }
        // Shown only when asked for (`--show-reasoning`), on the status
        // stream and dimmed at a terminal: never mixed into the answer.
        UiKind::ReasoningDelta { text } if view.show_reasoning => {
            let shown = visible(text);
            if super::preview::colour_wanted() {
                write!(info, "\x1b[2m{shown}\x1b[0m").map_err(io_error)?;
            } else {
                write!(info, "{shown}").map_err(io_error)?;
            }
            info.flush().map_err(io_error)?;
        }
        UiKind::ToolCall {
            tool, arguments, ..
        } => {
            let shown: String = arguments.to_string().chars().take(200).collect();
            line(format!("  {who}-> {tool} {shown}"), midline)?;
        }
        UiKind::ToolResult {
            ok,
            source,
            undo,
            error,
            duration_ms,
            exit_code,
            ..
        } => {
            // A sub-agent's change is undone in its own session.
            let undo = if undo.is_some() && !child {
                " (/undo reverts it)"
            } else {
                ""
            };
            let why = error
                .as_ref()
                .map(|(code, message)| {
                    let short: String = message.chars().take(300).collect();
                    format!(" {code}: {short}")
                })
                .unwrap_or_default();
            // A command that ran and failed is not shown as ok.
            let how = match (ok, exit_code) {
                (true, Some(code)) if *code != 0 => format!("exit {code}"),
                (true, _) => "ok".to_owned(),
                (false, _) => "error".to_owned(),
            };
            line(
                format!("  {who}<- {how} [{source}] {duration_ms} ms{undo}{why}"),
                midline,
            )?;
        }
        UiKind::Usage { cost_micro_usd, .. } => match cost_micro_usd {
            Some(c) => view.cost.add(Some(*c)),
            None => view.cost.add(None),
        },
        UiKind::TextReplaced { text, .. } => {
            line(
                "  [the provider's final text for that part differs from what streamed; it reads:]"
                    .to_owned(),
                midline,
            )?;
            out.write_all(visible(text).as_bytes()).map_err(io_error)?;
            *midline = !text.ends_with('\n');
        }
        // Someone else's words (an MCP server's): bounded here, made
        // visible by `say` like every status line.
        UiKind::ToolProgress {
            done,
            total,
            message,
            ..
        } if total.is_some_and(|t| *done >= t)
            || view
                .progress_said
                .is_none_or(|at| at.elapsed() >= PROGRESS_EVERY) =>
        {
            view.progress_said = Some(std::time::Instant::now());
            let of = total.map(|t| format!(" of {t}")).unwrap_or_default();
            let said = message
                .as_deref()
                .map(|m| format!(" {}", m.chars().take(200).collect::<String>()))
                .unwrap_or_default();
            line(format!("  {who}.. {done}{of}{said}"), midline)?;
        }
        UiKind::CallRepaired { what, .. } => {
            line(format!("  {who}~ repaired: {what}"), midline)?;
        }
        UiKind::CatalogChanged { changes } => {
            for change in changes {
                line(format!("  [{change}]"), midline)?;
            }
        }
        // A failed model call ends the turn with the same error, which is
        // told then; printing it here too would say it twice.
        UiKind::Error { .. } => {}
        _ => {}
    }
    Ok(())
}

/// What the chat shows besides the answer, and what it has counted.
#[derive(Debug, Default)]
pub struct View {
    /// What the session's calls have cost.
    pub cost: Cost,
    /// Whether the model's reasoning is shown (dimmed, apart from the answer).
    pub show_reasoning: bool,
    /// When a tool's progress was last said: a tool that reports thousands
    /// of times is said at most every [`PROGRESS_EVERY`] (and at its end).
    pub progress_said: Option<std::time::Instant>,
}

/// How often a tool's progress is said at the most.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// How often the spinner is redrawn.
const SPINNER_TICK: std::time::Duration = std::time::Duration::from_millis(100);

/// Quiet this long before the spinner shows: a model streaming or a quick
/// tool never shows it.
const SPINNER_AFTER: std::time::Duration = std::time::Duration::from_millis(400);

/// "Still working" on the status line, with the time since anything last
/// happened: while the model has not started answering and while a tool
/// runs. Drawn on a terminal only, and never in the middle of an answer's
/// line; cleared before anything else is printed.
struct Spinner {
    on: bool,
    since: std::time::Instant,
    shown: bool,
    frame: usize,
}

impl Spinner {
    fn new(on: bool) -> Self {
        Spinner {
            on,
            since: std::time::Instant::now(),
            shown: false,
            frame: 0,
        }
    }

    fn draw(&mut self, info: &mut impl Write, midline: bool) -> Result<(), AgentError> {
        let quiet = self.since.elapsed();
        if midline || quiet < SPINNER_AFTER {
            return Ok(());
        }
        const FRAMES: [char; 4] = ['|', '/', '-', '\\'];
        self.frame = (self.frame + 1) % FRAMES.len();
        // rein's own control bytes: carriage return and erase-line.
        write!(
            info,
            "\r\x1b[K  {} working {:.1}s",
            FRAMES[self.frame],
            quiet.as_secs_f64()
        )
        .map_err(io_error)?;
        info.flush().map_err(io_error)?;
        self.shown = true;
        Ok(())
    }

    /// Something happened: the spinner goes, and its clock starts again.
    fn clear(&mut self, info: &mut impl Write) -> Result<(), AgentError> {
        self.since = std::time::Instant::now();
        if self.shown {
            write!(info, "\r\x1b[K").map_err(io_error)?;
            self.shown = false;
        }
        Ok(())
    }
}

/// Run one turn (or resume one) while printing what happens.
pub(super) async fn drive(
    conversation: &mut Conversation,
    prompt: Option<&str>,
    input: &mut Asker,
    out: &mut impl Write,
    info: &mut impl Write,
    view: &mut View,
) -> Result<TurnOutcome, AgentError> {
    let mut events = conversation.subscribe();
    let interactive = std::io::stdin().is_terminal();
    let mut typing = Typing {
        input,
        waiting: Vec::new(),
        interactive,
        steering: conversation.steering(),
        store: conversation.store(),
        session: conversation.session_id().to_owned(),
    };
    let mut interrupts = 0u32;
    let mut midline = false;
    // Markdown is styled only on a terminal that takes it; piped, the
    // answer stays the model's plain text.
    let mut styler = super::preview::styled(&std::io::stdout()).then(Styler::default);
    let result = {
        let work = async {
            match prompt {
                Some(text) => conversation.turn(text).await,
                None => conversation.resume().await,
            }
        };
        tokio::pin!(work);
        // At a terminal, a line typed while the turn runs steers it: heard
        // at the next step boundary, like `rein say` from elsewhere.
        if interactive {
            typing.input.listen_while_running();
        }
        let mut spinner = Spinner::new(interactive && std::io::stderr().is_terminal());
        let mut tick = tokio::time::interval(SPINNER_TICK);
        loop {
            tokio::select! {
                biased;
                event = events.recv() => {
                    spinner.clear(info)?;
                    let Ok(event) = event else { continue };
                    match &event.kind {
                        UiKind::AgentAwaiting { session: child, request } => {
                            end_line(out, &mut midline, &mut styler)?;
                            typing.child_asks(info, event.agent.as_str(), child, request)?;
                        }
                        UiKind::ApprovalDecided { approval_id, decision } => {
                            typing.decided_elsewhere(info, approval_id, decision)?;
                        }
                        _ => print_event(&event, out, info, view, &mut midline, &mut styler)?,
                    }
                }
                _ = tick.tick(), if spinner.on => spinner.draw(info, midline)?,
                line = typing.input.typed(), if typing.wanted() => {
                    spinner.clear(info)?;
                    typing.heard(line?, info).await?;
                }
                _ = tokio::signal::ctrl_c() => {
                    spinner.clear(info)?;
                    // At a terminal the first interrupts and the second
                    // leaves; with no terminal to press it twice at, the
                    // first leaves (it was once ignored there).
                    interrupts += if interactive { 1 } else { 2 };
                    interrupt(interrupts, &typing, info)?;
                }
                result = &mut work => {
                    spinner.clear(info)?;
                    break result;
                }
            }
        }
    };
    while let Ok(event) = events.try_recv() {
        print_event(&event, out, info, view, &mut midline, &mut styler)?;
    }
    if let Some(styler) = styler.as_mut() {
        out.write_all(styler.finish().as_bytes())
            .map_err(io_error)?;
    }
    if midline {
        writeln!(out).map_err(io_error)?;
    }
    result
}

/// Ctrl-C during a turn: the first interrupts at the next step, the
/// second leaves at once.
fn interrupt(count: u32, typing: &Typing<'_>, info: &mut impl Write) -> Result<(), AgentError> {
    if count == 1 {
        typing.steering.interrupt();
        return say(
            info,
            "\n  (interrupting: an open answer is cut, a running tool finishes first; Ctrl-C again leaves now)",
        );
    }
    // Leaving like a crash, on purpose: a call running now is recorded
    // `interrupted` when the session is next opened, never claimed to have
    // not run.
    say(
        info,
        &format!(
            "\n  (leaving now: `rein chat --resume {}` continues the turn)",
            typing.session
        ),
    )?;
    let _ = info.flush();
    std::process::exit(130);
}

/// What a line typed while a turn runs is for: the oldest sub-agent
/// question waiting, else a `/command` for after the turn, else steering.
struct Typing<'a> {
    input: &'a mut Asker,
    /// Sub-agents' approvals asked while the turn runs, oldest first: the
    /// next line typed answers the oldest.
    waiting: Vec<ChildAsk>,
    interactive: bool,
    steering: rein::runner::Steering,
    store: std::sync::Arc<dyn rein::sessions::Store>,
    session: String,
}

impl Typing<'_> {
    /// Whether a typed line is awaited now.
    fn wanted(&self) -> bool {
        (self.interactive || !self.waiting.is_empty()) && self.input.listening()
    }

    /// A sub-agent asks: the question is shown and the next line answers it.
    fn child_asks(
        &mut self,
        info: &mut impl Write,
        agent: &str,
        child: &str,
        request: &ApprovalRequest,
    ) -> Result<(), AgentError> {
        ask_for_child(info, agent, request, &self.session)?;
        self.waiting.push(ChildAsk {
            session: child.to_owned(),
            agent: agent.to_owned(),
            approval_id: request.approval_id.clone(),
        });
        // Piped too: the next line is the answer.
        self.input.listen_while_running();
        Ok(())
    }

    /// A question this terminal showed was decided on another surface.
    fn decided_elsewhere(
        &mut self,
        info: &mut impl Write,
        approval_id: &str,
        decision: &impl std::fmt::Display,
    ) -> Result<(), AgentError> {
        if let Some(at) = self
            .waiting
            .iter()
            .position(|w| w.approval_id == approval_id)
        {
            let asked = self.waiting.remove(at);
            say(info, &format!("  {decision} for {} elsewhere", asked.agent))?;
        }
        Ok(())
    }

    /// A line typed (or the input's end) while the turn runs.
    async fn heard(
        &mut self,
        line: Option<String>,
        info: &mut impl Write,
    ) -> Result<(), AgentError> {
        let Some(text) = line else {
            if let Some(oldest) = self.waiting.first() {
                say(
                    info,
                    &format!(
                        "  (input ended: the sub-agent waits; decide with rein approve {} {} yes|no)",
                        self.session, oldest.approval_id
                    ),
                )?;
            }
            return Ok(());
        };
        let text = text.trim();
        if !self.waiting.is_empty() {
            self.answer(text, info).await?;
            if self.interactive || !self.waiting.is_empty() {
                self.input.listen_while_running();
            }
        } else if commands::parse(text).is_some() {
            // A command is the person's, not the model's: it runs when the
            // turn ends.
            say(info, &format!("  ({text} runs when this turn ends)"))?;
            self.input.queue(text.to_owned());
        } else if !text.is_empty() {
            self.steering.say(text.to_owned());
            say(info, "  (heard: the model reads it at its next step)")?;
        }
        if self.interactive {
            self.input.listen_while_running();
        }
        Ok(())
    }

    /// The oldest sub-agent question answered by the line typed.
    async fn answer(&mut self, text: &str, info: &mut impl Write) -> Result<(), AgentError> {
        let asked = self.waiting.remove(0);
        let yes = Answer::is_yes(text);
        let decided = rein::approvals::decide(
            self.store.as_ref(),
            &asked.session,
            &asked.approval_id,
            if yes {
                Answer::Approve(LeaseScope::Once)
            } else {
                Answer::Deny
            },
            &Surface::terminal(),
        )
        .await;
        match decided {
            Ok(_) => say(
                info,
                &format!(
                    "  {} for {}",
                    if yes { "approved" } else { "denied" },
                    asked.agent
                ),
            ),
            // Decided elsewhere first: that decision stands.
            Err(err) => say(info, &format!("  not recorded here: {}", err.message)),
        }
    }
}

/// A sub-agent's approval the terminal asked about while the turn runs.
struct ChildAsk {
    /// The sub-agent's session, where the decision goes.
    session: String,
    /// Its agent path.
    agent: String,
    approval_id: String,
}

/// Close an answer's line (and its styles) before a question.
fn end_line(
    out: &mut impl Write,
    midline: &mut bool,
    styler: &mut Option<Styler>,
) -> Result<(), AgentError> {
    if let Some(styler) = styler.as_mut() {
        out.write_all(styler.finish().as_bytes())
            .map_err(io_error)?;
    }
    if *midline {
        writeln!(out).map_err(io_error)?;
        *midline = false;
    }
    out.flush().map_err(io_error)
}

/// Ask about a sub-agent's call: what it would change, and where else it
/// can be decided (the parent's session finds it).
fn ask_for_child(
    info: &mut impl Write,
    agent: &str,
    request: &ApprovalRequest,
    parent: &str,
) -> Result<(), AgentError> {
    let tool = &request.tool;
    match &request.preview {
        Some(change) => {
            let subject = rein::wire::visible::one_line(&change.subject, 400);
            say(info, &format!("  {agent} asks: {tool} {subject}"))?;
            let (lines, hidden) =
                super::preview::render(change, super::preview::colour_wanted(), false);
            write!(info, "{lines}").map_err(io_error)?;
            if hidden > 0 {
                say(info, &format!("    … {hidden} more lines"))?;
            }
        }
        None => {
            let shown: String = request.arguments.to_string().chars().take(300).collect();
            say(info, &format!("  {agent} asks: {tool} {shown}"))?;
        }
    }
    say(
        info,
        &format!(
            "  approve? [y/N] (or from another terminal: rein approve {parent} {} yes|no)",
            request.approval_id
        ),
    )
}
