//! `rein chat`: a conversation in the terminal.
//!
//! Picks a provider from the flags and the environment (an Anthropic key,
//! an OpenAI key, or a `--base-url` for a local OpenAI-compatible server),
//! streams each answer as it arrives, and prints what each call used and
//! cost. With no key it says how to set one and offers the offline
//! scripted model, which needs nothing.
//!
//! Turns run through `rein-runner` with the working directory's files as
//! tools (read, list, search; write and delete ask `approve? [y/N]`), and
//! are recorded in the embedded store (`REIN_HOME/rein.db`). `--session ID`
//! (or `--resume ID`) continues a session: a pending approval is asked
//! again, a turn a crash cut short is resumed. An approval left unanswered
//! (stdin closed) can be decided later with `rein approve`. Ctrl-C during
//! an answer interrupts it at the next step (one turn at the terminal is
//! `turn`).

use std::io::Write;
use std::sync::Arc;

pub use super::chat_options::ChatOptions;
use super::commands::{self, Command, Cost, HELP};
pub use super::input::{Asker, Editor, Lines, Plain};
use super::output::{io_error, say};
use super::preview;
pub use super::provider::{KEY_HELP, ProviderArgs};
use super::session_root;
use super::turn::{View, drive};
use rein::approvals::{Answer, Surface};
use rein::compose;
use rein::compose::provider::{missing_key, resolve, scripted};
use rein::runner::{Conversation, TurnOutcome};
use rein::sessions::Store;
use rein::sessions::recovery::dangling;
use rein::wire::{AgentError, error::codes};
use serde_json::json;

/// The chat's system prompt when the definition sets none.
const CHAT_INSTRUCTIONS: &str = "You are a helpful assistant in a terminal chat, working in the person's project folder. Use the tools to look at files before answering questions about them. Answer concisely.";

/// How an approval prompt ended.
enum Asked {
    /// The person answered here.
    Answer(Answer),
    /// Input ended.
    Closed,
    /// Another surface decided (or stopped the turn) meanwhile.
    Elsewhere,
}

/// What a person answered to `approve? [y/N]` — or what another surface
/// decided meanwhile (told, and the prompt's line is then not an answer).
async fn ask_approval(
    conversation: &mut Conversation,
    input: &mut Asker,
    info: &mut impl Write,
    request: &rein::runner::ApprovalRequest,
) -> Result<Asked, AgentError> {
    let (approval_id, tool) = (&request.approval_id, &request.tool);
    let colour = preview::colour_wanted();
    let mut prompt = if request.permission.leasable() {
        format!("  approve? [y/N/a = always for {tool} this turn")
    } else {
        // Asked each time: no "always" is offered (nor kept, if typed).
        "  approve this one call? [y/N".to_owned()
    };
    match &request.preview {
        // A change is shown as what it does, not as its arguments.
        Some(change) => {
            // One line: a newline in a path would draw lines of its own.
            let subject = rein::wire::visible::one_line(&change.subject, 400);
            say(info, &format!("  {tool} {subject}"))?;
            let (lines, hidden) = preview::render(change, colour, false);
            write!(info, "{lines}").map_err(io_error)?;
            if hidden > 0 {
                say(info, &format!("    … {hidden} more lines"))?;
                prompt.push_str("/d = show all");
            }
        }
        None => {
            let shown: String = request.arguments.to_string().chars().take(300).collect();
            say(info, &format!("  {tool} {shown}"))?;
        }
    }
    prompt.push_str("] ");
    let session = conversation.session_id().to_owned();
    say(
        info,
        &format!("  (or from another terminal: rein approve {session} {approval_id} yes|no)"),
    )?;
    input.ask(&prompt).await;
    loop {
        tokio::select! {
            line = input.answer() => {
                let Some(line) = line? else {
                    return Ok(Asked::Closed);
                };
                let answer = match line.trim().to_ascii_lowercase().as_str() {
                    "d" | "diff" if request.preview.is_some() => {
                        if let Some(change) = &request.preview {
                            write!(info, "{}", preview::render(change, colour, true).0)
                                .map_err(io_error)?;
                        }
                        input.ask(&prompt).await;
                        continue;
                    }
                    typed => Answer::typed(typed),
                };
                return Ok(Asked::Answer(answer));
            }
            () = tokio::time::sleep(rein::runner::INBOX_POLL) => {
                // A stop is taken (and acted on) with the inbox, and wins
                // over any decision that came with it.
                let heard = conversation.take_inbox().await?;
                if let Some(by) = heard.stop {
                    input.stale += 1;
                    say(info, &format!("\n  stopped by {by} (press Enter to go on)"))?;
                    return Ok(Asked::Elsewhere);
                }
                let decided = heard.decided.iter().find(|d| d.approval_id == *approval_id);
                if let Some(taken) = decided {
                    input.stale += 1;
                    let (decision, by) = (taken.decision, &taken.by);
                    say(info, &format!("\n  {decision} by {by} (press Enter to go on)"))?;
                    return Ok(Asked::Elsewhere);
                }
            }
        }
    }
}

/// Run turns until the turn is done, asking for approvals on the way.
/// `Ok(false)`: an approval was left pending (stdin ended).
async fn settle(
    conversation: &mut Conversation,
    mut outcome: TurnOutcome,
    input: &mut Asker,
    out: &mut impl Write,
    info: &mut impl Write,
    view: &mut View,
) -> Result<bool, AgentError> {
    loop {
        match outcome {
            TurnOutcome::AwaitingApproval(request) => {
                let approval_id = request.approval_id.clone();
                let asked = ask_approval(conversation, input, info, &request).await?;
                match asked {
                    Asked::Answer(answer) => {
                        let decided = conversation
                            .decide(&approval_id, answer, &Surface::terminal())
                            .await;
                        match decided {
                            Ok(()) => {}
                            // Decided or stopped elsewhere first: said, and
                            // the turn goes on only if it is still open.
                            Err(err) if err.code == codes::CONFLICT => {
                                say(info, &format!("  {}", err.message))?;
                                if !conversation.has_open_turn().await? {
                                    say(info, "  [turn ended: interrupted]")?;
                                    break;
                                }
                            }
                            Err(err) => return Err(err),
                        }
                        outcome = drive(conversation, None, input, out, info, view).await?;
                    }
                    Asked::Elsewhere if conversation.has_open_turn().await? => {
                        outcome = drive(conversation, None, input, out, info, view).await?;
                    }
                    Asked::Elsewhere => {
                        say(info, "  [turn ended: interrupted]")?;
                        break;
                    }
                    Asked::Closed => {
                        let id = conversation.session_id().to_owned();
                        say(
                            info,
                            &format!(
                                "  approval {approval_id} is pending. Decide with: rein approve {id} {approval_id} yes|no"
                            ),
                        )?;
                        say(
                            info,
                            &format!("  then continue with: rein chat --resume {id}"),
                        )?;
                        return Ok(false);
                    }
                }
            }
            TurnOutcome::Finished { .. } => break,
            // Told once, by whoever handles the error (the chat loop, or
            // the `rein` command on its way out).
            TurnOutcome::Error { error } => return Err(error),
            TurnOutcome::Budget { which } => {
                say(
                    info,
                    &format!("  [turn ended: the {which} budget is spent]"),
                )?;
                break;
            }
            other => {
                say(info, &format!("  [turn ended: {}]", other.name()))?;
                break;
            }
        }
    }
    // Said after a turn only when it is a number; `/cost` always answers.
    if view.cost.known() {
        say(
            info,
            &format!("  [session cost so far: {}]", view.cost.describe()),
        )?;
    }
    Ok(true)
}

/// Run the chat, reading lines from `input` and writing answers to `out`
/// and status lines to `info`. Turns are recorded in `store`.
pub async fn run(
    options: ChatOptions,
    store: Arc<dyn Store>,
    input: impl Lines + Send + 'static,
    out: &mut impl Write,
    info: &mut impl Write,
) -> Result<(), AgentError> {
    let mut input = Asker::new(input);
    let Opened {
        mut conversation,
        servers,
        banner,
    } = open_chat(&options, &store, &mut input, info).await?;
    let id = conversation.session_id().to_owned();
    let mut view = View {
        cost: Cost::default(),
        show_reasoning: options.show_reasoning,
        progress_said: None,
    };
    let result = async {
        // A continued session may have a turn waiting: an approval, or a
        // turn a crash cut short.
        if !go_on(&mut conversation, &mut input, out, info, &mut view).await? {
            return Ok(());
        }
        if let Some(prompt) = options.prompt.clone() {
            let outcome = drive(
                &mut conversation,
                Some(&prompt),
                &mut input,
                out,
                info,
                &mut view,
            )
            .await?;
            settle(&mut conversation, outcome, &mut input, out, info, &mut view).await?;
            return Ok(());
        }
        say(info, &format!("{banner} · session {id} · /help, /exit"))?;
        loop {
            let Some(line) = input.line("you> ").await? else {
                return Ok(());
            };
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            if let Some(command) = commands::parse(line) {
                if command == Command::Exit {
                    return Ok(());
                }
                slash(command, &mut conversation, store.as_ref(), &view, info).await?;
                continue;
            }
            let outcome = drive(
                &mut conversation,
                Some(line),
                &mut input,
                out,
                info,
                &mut view,
            )
            .await?;
            match settle(&mut conversation, outcome, &mut input, out, info, &mut view).await {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(err) if err.code == codes::LOCK_LOST || err.code == codes::SESSION_LOCKED => {
                    return Err(err);
                }
                Err(err) if err.code == codes::OUTPUT_CLOSED => return Err(err),
                Err(err) => {
                    say(info, &format!("error[{}]: {}", err.code, err.message))?;
                    if let Some(hint) = rein::wire::error::lookup(&err.code) {
                        say(info, &format!("  {}", hint.hint))?;
                    }
                }
            }
        }
    }
    .await;
    say(
        info,
        &format!("session {id} (continue with: rein chat --resume {id})"),
    )?;
    for clients in &servers {
        clients.shutdown();
    }
    conversation.close().await?;
    result
}

/// A chat's conversation, opened from its definition, and what the chat
/// keeps beside it.
struct Opened {
    conversation: Conversation,
    /// The MCP servers started for it and its helpers (stopped at the end).
    servers: Vec<rein::mcp::McpClients>,
    /// "rein chat · MODEL via PROVIDER · root ROOT".
    banner: String,
}

/// The root, the definition loaded and composed (its helpers too), the
/// model's notes said, and the session opened (or continued).
async fn open_chat(
    options: &ChatOptions,
    store: &Arc<dyn Store>,
    input: &mut Asker,
    info: &mut impl Write,
) -> Result<Opened, AgentError> {
    let root_dir = session_root::root_of(options, store.as_ref(), input, info).await?;
    // One absolute path for every part: a relative one means another
    // folder to a sandboxed command that runs somewhere else.
    let root_dir = root_dir.canonicalize().map_err(|e| {
        AgentError::new(
            codes::INVALID_INPUT,
            format!("the root {}: {e}", root_dir.display()),
        )
    })?;
    let (_, loaded) = compose::load(options.home.clone(), &root_dir)?;
    for note in &loaded.notes {
        say(info, &format!("  ({note})"))?;
    }
    let effective = loaded.agent(options.agent.as_deref(), &options.flags())?;
    let resolved = provider(&effective.spec, options, input, info).await?;
    let wanted = compose::Wanted {
        root: &root_dir,
        effective: &effective,
        commands_file: options.commands.as_deref(),
        default_instructions: CHAT_INSTRUCTIONS,
    };
    let compose::Composed {
        mut agent,
        root: _,
        mcp,
        memory: _,
        notes: _,
    } = compose::compose(&wanted, &loaded, &resolved, store, info).await?;
    // The agents a delegate call may name (each with its own MCP servers).
    let mut helper_servers = Vec::new();
    if agent.delegation.is_some() {
        let (named, servers) =
            compose::named_agents(&wanted, &loaded, store, &options.flags(), info).await?;
        compose::add_helpers(&mut agent, &named, &loaded, &root_dir)?;
        helper_servers = servers;
    }
    if let Some(level) = agent.profile.reasoning
        && rein::wire::model_reasoning(&resolved.model) == rein::wire::ModelReasoning::DoesNot
    {
        say(
            info,
            &format!(
                "  ({} does not reason: reasoning `{level}` is not sent to it)",
                resolved.model
            ),
        )?;
    }
    let metadata = json!({"surface": "terminal", "provider": resolved.provider.name(), "model": resolved.model, "root": root_dir.display().to_string(), "agent": options.agent});
    let conversation = agent
        .open_session(store.clone(), options.session.as_deref(), metadata)
        .await?;
    let banner = format!(
        "rein chat · {} via {} · root {}",
        resolved.model,
        resolved.provider.name(),
        root_dir.display()
    );
    let servers = mcp.into_iter().chain(helper_servers).collect();
    Ok(Opened {
        conversation,
        servers,
        banner,
    })
}

/// The provider the definition names, else the offline scripted model if
/// the person at the terminal wants it (never for a one-shot `-p`).
async fn provider(
    spec: &rein::config::AgentSpec,
    options: &ChatOptions,
    input: &mut Asker,
    info: &mut impl Write,
) -> Result<rein::compose::Resolved, AgentError> {
    if let Some(resolved) = resolve(spec)? {
        return Ok(resolved);
    }
    say(info, KEY_HELP)?;
    if options.prompt.is_some() {
        return Err(missing_key());
    }
    let Some(answer) = input
        .line("Start the offline scripted model now? [Y/n] ")
        .await?
    else {
        return Err(missing_key());
    };
    let answer = answer.trim().to_ascii_lowercase();
    if !(answer.is_empty() || answer == "y" || answer == "yes") {
        return Err(missing_key());
    }
    Ok(scripted())
}

/// Go on with a continued session's open turn, if it has one (after the
/// person accepts changed authority): `false` when the chat ends there.
async fn go_on(
    conversation: &mut Conversation,
    input: &mut Asker,
    out: &mut impl Write,
    info: &mut impl Write,
    view: &mut View,
) -> Result<bool, AgentError> {
    let events = conversation.log_events().await?;
    if dangling(&events).turns.is_empty() {
        return Ok(true);
    }
    if let Some(change) = conversation.authority_change(None).await? {
        say(info, &format!("  {}", change.message))?;
        let answer = input
            .line("  go on with the open turn under what this chat allows now? [y/N] ")
            .await?
            .unwrap_or_default();
        if !Answer::is_yes(&answer) {
            return Err(change);
        }
        conversation.accept_authority(&Surface::terminal()).await?;
    }
    let pending = conversation.pending_approvals().await?.into_iter().next();
    let outcome = match pending {
        Some(asked) => TurnOutcome::AwaitingApproval(asked),
        None => {
            say(info, "(resuming the unfinished turn)")?;
            drive(conversation, None, input, out, info, view).await?
        }
    };
    settle(conversation, outcome, input, out, info, view).await
}

/// Carry out a slash command other than `/exit`.
async fn slash(
    command: Command,
    conversation: &mut Conversation,
    store: &dyn Store,
    view: &View,
    info: &mut impl Write,
) -> Result<(), AgentError> {
    match command {
        Command::Exit => Ok(()),
        Command::Help => say(info, HELP),
        Command::Undo => match conversation
            .undo(None, &rein::approvals::Surface::terminal())
            .await
        {
            Ok(path) => say(info, &format!("  undone: {path} is back as it was")),
            Err(err) => say(
                info,
                &format!("  cannot undo: error[{}]: {}", err.code, err.message),
            ),
        },
        Command::Branch(turn) => {
            let branched = super::branch::branch(conversation, store, turn.as_deref(), info).await;
            match branched {
                Ok(()) => Ok(()),
                Err(err) => say(info, &format!("  error[{}]: {}", err.code, err.message)),
            }
        }
        Command::Compact => match conversation.compact_now().await {
            Ok(()) => say(
                info,
                "  compacted: older turns are a summary now (the log keeps them)",
            ),
            Err(err) => say(
                info,
                &format!("  cannot compact: error[{}]: {}", err.code, err.message),
            ),
        },
        Command::Cost => say(
            info,
            &format!("  session cost so far: {}", view.cost.describe()),
        ),
        Command::Unknown(word) => say(info, &format!("  no command /{word} (/help lists them)")),
    }
}
