//! The `rein` command.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rein::chat::{ChatOptions, run};
use rein::decode_cmd::decode_to;
use rein::gateway::WireApi;
use rein::wire::{AgentError, error::codes};

/// rein, an agent harness runtime.
#[derive(Debug, Parser)]
#[command(name = "rein", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Chat with a model in the terminal.
    Chat {
        /// The wire API: anthropic, openai-chat, openai-responses or scripted.
        #[arg(long)]
        provider: Option<String>,
        /// The model name.
        #[arg(long)]
        model: Option<String>,
        /// A base URL (an OpenAI-compatible server such as vLLM, llama.cpp or Ollama).
        #[arg(long)]
        base_url: Option<String>,
        /// Use the offline scripted model (no key, no network).
        #[arg(long)]
        scripted: bool,
        /// Ask one question, print the answer and exit.
        #[arg(short, long)]
        prompt: Option<String>,
        /// The system prompt.
        #[arg(long)]
        system: Option<String>,
    },
    /// Tools for the wire formats.
    Wire {
        #[command(subcommand)]
        command: WireCommand,
    },
}

#[derive(Debug, Subcommand)]
enum WireCommand {
    /// Decode a captured SSE body and print each normalised event as JSON.
    Decode {
        /// The wire API: anthropic, openai-chat or openai-responses.
        #[arg(long)]
        api: String,
        /// The capture file, or `-` for stdin.
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("REIN_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error[internal]: could not start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error[{}]: {}", err.code, err.message);
            if let Some(info) = rein::wire::error::lookup(&err.code) {
                eprintln!("  {}", info.hint);
            }
            ExitCode::FAILURE
        }
    }
}

async fn dispatch(command: Command) -> Result<(), AgentError> {
    match command {
        Command::Chat {
            provider,
            model,
            base_url,
            scripted,
            prompt,
            system,
        } => {
            let options = ChatOptions {
                provider,
                model,
                base_url,
                scripted,
                prompt,
                system,
            };
            let stdin = std::io::stdin();
            run(
                options,
                stdin.lock(),
                &mut std::io::stdout(),
                &mut std::io::stderr(),
            )
            .await
        }
        Command::Wire {
            command: WireCommand::Decode { api, file },
        } => {
            let api: WireApi = api.parse()?;
            let body = read_input(&file)?;
            decode_to(api, body, &mut std::io::stdout().lock()).await
        }
    }
}

fn read_input(file: &PathBuf) -> Result<Vec<u8>, AgentError> {
    let mut body = Vec::new();
    let result = if file.as_os_str() == "-" {
        std::io::stdin().read_to_end(&mut body).map(|_| ())
    } else {
        std::fs::File::open(file).and_then(|mut f| f.read_to_end(&mut body).map(|_| ()))
    };
    result.map_err(|err| {
        AgentError::new(
            codes::INVALID_INPUT,
            format!("cannot read {}: {err}", file.display()),
        )
    })?;
    Ok(body)
}
