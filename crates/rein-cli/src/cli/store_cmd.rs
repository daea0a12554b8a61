//! `rein store copy --from URL --to URL`: every session and artifact of
//! one store moved into another — the home's SQLite file into PostgreSQL
//! when a product outgrows one machine, or back — each session's events
//! with the numbers and times they have, so an export from either is the
//! same bytes. Run it while nothing drives the sessions; run it again
//! after it was cut short: what arrived is skipped.
//!
//! Not here: how a store takes a session (`rein::sessions::copy`).

use std::io::Write;

use rein::wire::AgentError;

/// `rein store`'s commands.
#[derive(Debug, clap::Subcommand)]
pub enum StoreCommand {
    /// Copy every session and artifact of one store into another.
    Copy {
        /// The store copied: postgres://… or sqlite:PATH.
        #[arg(long, value_name = "URL")]
        from: String,
        /// The store copied into (made when it is a new SQLite file).
        #[arg(long, value_name = "URL")]
        to: String,
    },
}

/// Run `command`, saying what was done on `out`.
pub async fn run(command: StoreCommand, out: &mut impl Write) -> Result<(), AgentError> {
    match command {
        StoreCommand::Copy { from, to } => {
            // A source named wrong is said, never made as an empty store.
            if let Some(path) = rein::sessions::sqlite_path(&from)
                && !std::path::Path::new(path).exists()
            {
                return Err(AgentError::new(
                    rein::wire::error::codes::INVALID_INPUT,
                    format!("there is no store at {path} to copy from"),
                ));
            }
            let source = rein::sessions::open_url(&from).await?;
            let target = rein::sessions::open_url(&to).await?;
            let copied = rein::sessions::copy(source.as_ref(), target.as_ref()).await?;
            writeln!(
                out,
                "copied {} sessions ({} events) and {} artifacts; {} were there already",
                copied.sessions, copied.events, copied.artifacts, copied.skipped
            )
            .map_err(super::output::output_error)
        }
    }
}
