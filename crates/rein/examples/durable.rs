//! A durable conversation: a turn pauses at an approval, the process ends,
//! and a new process picks the session up from the SQLite file — what was
//! asked is read back from the log, decided, and the turn goes on.
//!
//! `cargo run -p rein-harness --example durable` does both halves: it runs the
//! first, then starts itself again as the second process.
use std::path::Path;

use rein::prelude::*;

/// A note to keep.
#[derive(Deserialize, JsonSchema)]
struct Note {
    /// What to remember.
    text: String,
}

#[tokio::main]
async fn main() -> Result<(), AgentError> {
    let args: Vec<String> = std::env::args().collect();
    match args.as_slice() {
        [_, step, folder, session] if step == "resume" => resume(Path::new(folder), session).await,
        _ => start().await,
    }
}

/// The first process: the turn asks before it writes, and the process ends.
async fn start() -> Result<(), AgentError> {
    let folder = std::env::temp_dir().join(format!("rein-durable-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("a temporary folder");
    let mut chat = open(&folder, None).await?;
    let outcome = chat.turn("note milk").await?;
    assert!(
        matches!(outcome, TurnOutcome::AwaitingApproval(_)),
        "{outcome:?}"
    );
    let session = chat.session_id().to_owned();
    chat.close().await?;
    println!("first process: the turn waits for a person; ending");

    let me = std::env::current_exe().expect("this program's path");
    let status = std::process::Command::new(me)
        .args(["resume", &folder.to_string_lossy(), &session])
        .status()
        .expect("the second process starts");
    let notes = std::fs::read_to_string(folder.join("notes.txt")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&folder);
    assert!(status.success(), "the second process failed");
    assert_eq!(
        notes, "milk\n",
        "the approved write ran once, in the second process"
    );
    Ok(())
}

/// The second process: what waits is read from the log, decided, and the
/// turn finishes.
async fn resume(folder: &Path, session: &str) -> Result<(), AgentError> {
    let mut chat = open(folder, Some(session)).await?;
    let asked = chat.pending_approvals().await?.remove(0);
    println!(
        "second process: {} asks to run {} {}",
        asked.agent_path, asked.tool, asked.arguments
    );
    let person = Surface::product("notes app", "sam");
    let outcome = chat
        .decide_and_resume(
            &asked.approval_id,
            Answer::Approve(LeaseScope::Once),
            &person,
        )
        .await?;
    let TurnOutcome::Finished { reply } = outcome else {
        panic!("the turn did not finish: {outcome:?}");
    };
    println!("second process: {reply}");
    chat.close().await
}

/// The conversation over the SQLite file in `folder`: both processes open
/// it from the same [`Agent`] value, so nothing is passed twice (its prices
/// travel with it). Were the second one's definition different (another
/// model, other tools), its yes would be refused as `authority_changed`
/// until a person accepts the change: `chat.accept_authority(&person)`.
async fn open(folder: &Path, session: Option<&str>) -> Result<Conversation, AgentError> {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(folder.join("rein.db")).await?);
    let agent = agent(folder)?;
    match session {
        Some(id) => agent.reopen(store, id).await,
        None => agent.open(store).await,
    }
}

/// The agent: a `note` tool that appends to `notes.txt` in `folder` and
/// waits for a person first.
fn agent(folder: &Path) -> Result<Agent, AgentError> {
    let notes = folder.join("notes.txt");
    let note = tool_fn(
        "note",
        "Keep a note.",
        PermissionClass::Write,
        move |note: Note| {
            let notes = notes.clone();
            async move {
                use std::io::Write as _;
                let kept = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&notes)
                    .and_then(|mut file| writeln!(file, "{}", note.text));
                match kept {
                    Ok(()) => Outcome::ok(json!({"kept": note.text})),
                    Err(err) => {
                        Outcome::failed(rein::wire::error::codes::WRITE_FAILED, err.to_string())
                    }
                }
            }
        },
    );
    // "note milk": the word after "note" goes into the call's `text`.
    let rule = Rule::reply("note", "Noting it.")
        .and_call("note", json!({}))
        .word_into("text");
    let model = ScriptedBrain::new(vec![rule]);
    let tools = Arc::new(Registry::new().with(note)?);
    let profile = Profile::new("notes", "rein-scripted");
    Ok(Agent::new(Arc::new(model), tools, profile))
}
