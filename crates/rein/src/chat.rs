//! `rein chat`: a conversation in the terminal.
//!
//! Picks a provider from the flags and the environment (an Anthropic key,
//! an OpenAI key, or a `--base-url` for a local OpenAI-compatible server),
//! streams each answer as it arrives, and prints what each call used and
//! cost. With no key it says how to set one and offers the offline
//! scripted model, which needs nothing.
//!
//! This first version keeps the conversation in memory; the durable store,
//! tools and approvals come with `rein-sessions` and `rein-runner`.

use std::io::{BufRead, Write};
use std::sync::Arc;

use futures::StreamExt;
use rein_gateway::{HttpProvider, Provider, ProviderConfig, WireApi};
use rein_testing::ScriptedBrain;
use rein_wire::{
    AgentError, Assembler, Message, PriceTable, Request, StreamEvent, SystemBlock, error::codes,
};

/// What the person asked for on the command line.
#[derive(Debug, Clone, Default)]
pub struct ChatOptions {
    /// `anthropic`, `openai-chat`, `openai-responses` or `scripted`.
    pub provider: Option<String>,
    /// The model name.
    pub model: Option<String>,
    /// A base URL (an OpenAI-compatible server, a proxy).
    pub base_url: Option<String>,
    /// Use the offline scripted model.
    pub scripted: bool,
    /// Ask one question, print the answer and exit.
    pub prompt: Option<String>,
    /// The system prompt.
    pub system: Option<String>,
}

/// The provider and model a chat runs with.
pub struct Resolved {
    /// The provider.
    pub provider: Arc<dyn Provider>,
    /// The model name.
    pub model: String,
}

fn default_model(api: WireApi) -> &'static str {
    match api {
        WireApi::AnthropicMessages => "claude-sonnet-4-5",
        WireApi::OpenAiChat | WireApi::OpenAiResponses => "gpt-4.1-mini",
    }
}

fn scripted() -> Resolved {
    Resolved {
        provider: Arc::new(ScriptedBrain::demo()),
        model: "rein-scripted".into(),
    }
}

fn http(api: WireApi, options: &ChatOptions) -> Result<Resolved, AgentError> {
    let mut config = ProviderConfig::from_env(api);
    if let Some(url) = &options.base_url {
        config = config.with_base_url(url.clone());
        // Compatible servers rarely know the newer field name.
        config.legacy_max_tokens = api == WireApi::OpenAiChat;
    } else if config.api_key.is_none() {
        return Err(missing_key());
    }
    Ok(Resolved {
        provider: Arc::new(HttpProvider::new(config)?),
        model: options
            .model
            .clone()
            .unwrap_or_else(|| default_model(api).to_owned()),
    })
}

fn missing_key() -> AgentError {
    AgentError::new(
        codes::MISSING_API_KEY,
        "no API key is set for a model provider",
    )
}

/// How to set a key, for a person.
pub const KEY_HELP: &str = "\
No API key found. To talk to a real model, set one of:
  export ANTHROPIC_API_KEY=sk-ant-...   (Anthropic; add --model to choose one)
  export OPENAI_API_KEY=sk-...          (OpenAI)
or point rein at a local OpenAI-compatible server:
  rein chat --base-url http://127.0.0.1:8080/v1 --model NAME
To try rein without any of these: rein chat --scripted";

/// Pick the provider from the options and the environment. `Ok(None)`:
/// nothing is configured (the caller offers the scripted model).
pub fn resolve(options: &ChatOptions) -> Result<Option<Resolved>, AgentError> {
    if options.scripted {
        return Ok(Some(scripted()));
    }
    if let Some(name) = &options.provider {
        if name == "scripted" {
            return Ok(Some(scripted()));
        }
        return http(name.parse()?, options).map(Some);
    }
    if options.base_url.is_some() {
        return http(WireApi::OpenAiChat, options).map(Some);
    }
    for api in [WireApi::AnthropicMessages, WireApi::OpenAiChat] {
        let set = std::env::var(api.key_variable()).is_ok_and(|k| !k.trim().is_empty());
        if set {
            return http(api, options).map(Some);
        }
    }
    Ok(None)
}

/// Run the chat, reading lines from `input` and writing to `out` (answers)
/// and `info` (status lines).
pub async fn run(
    options: ChatOptions,
    mut input: impl BufRead,
    out: &mut impl Write,
    info: &mut impl Write,
) -> Result<(), AgentError> {
    let resolved = match resolve(&options)? {
        Some(resolved) => resolved,
        None => {
            say(info, KEY_HELP)?;
            if options.prompt.is_some() {
                return Err(missing_key());
            }
            say_inline(info, "Start the offline scripted model now? [Y/n] ")?;
            let mut answer = String::new();
            let read = input.read_line(&mut answer).map_err(io_error)?;
            let answer = answer.trim().to_ascii_lowercase();
            if read == 0 || !(answer.is_empty() || answer == "y" || answer == "yes") {
                return Err(missing_key());
            }
            scripted()
        }
    };
    let prices = PriceTable::builtin();
    let system = options.system.clone().unwrap_or_else(|| {
        "You are a helpful assistant in a terminal chat. Answer concisely.".to_owned()
    });
    let mut history: Vec<Message> = Vec::new();
    if let Some(prompt) = options.prompt {
        history.push(Message::user(prompt));
        return turn(&resolved, &system, &mut history, &prices, out, info).await;
    }
    say(
        info,
        &format!(
            "rein chat · {} via {} · /exit or Ctrl-D to leave",
            resolved.model,
            resolved.provider.name()
        ),
    )?;
    loop {
        say_inline(info, "you> ")?;
        let mut line = String::new();
        if input.read_line(&mut line).map_err(io_error)? == 0 {
            say(info, "")?;
            return Ok(());
        }
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line == "/exit" || line == "/quit" {
            return Ok(());
        }
        history.push(Message::user(line));
        if let Err(err) = turn(&resolved, &system, &mut history, &prices, out, info).await {
            // The failed question is taken back so the history stays a
            // valid alternation; the person can ask again.
            history.pop();
            say(info, &format!("error[{}]: {}", err.code, err.message))?;
            if let Some(hint) = rein_wire::error::lookup(&err.code) {
                say(info, &format!("  {}", hint.hint))?;
            }
        }
    }
}

async fn turn(
    resolved: &Resolved,
    system: &str,
    history: &mut Vec<Message>,
    prices: &PriceTable,
    out: &mut impl Write,
    info: &mut impl Write,
) -> Result<(), AgentError> {
    let mut request = Request::new(resolved.model.clone(), history.clone());
    request.system = vec![SystemBlock {
        text: system.to_owned(),
    }];
    let mut stream = resolved.provider.stream(request);
    let mut assembler = Assembler::new();
    while let Some(item) = stream.next().await {
        let event = item?;
        if let StreamEvent::TextDelta { text } = &event {
            out.write_all(text.as_bytes()).map_err(io_error)?;
            out.flush().map_err(io_error)?;
        }
        assembler.push(&event);
    }
    writeln!(out).map_err(io_error)?;
    let message = assembler.finish();
    if let Some(err) = message.first_error() {
        return Err(err.clone());
    }
    if let Some(usage) = message.usage {
        let model = message.model.as_deref().unwrap_or(&resolved.model);
        let cost = prices.cost_micro_usd(model, &usage).map_or_else(
            || "cost unknown".to_owned(),
            |c| format!("${:.6}", c as f64 / 1e6),
        );
        say(
            info,
            &format!(
                "  [{} in · {} out · cache {} read / {} written · {cost}]",
                usage.input, usage.output, usage.cache_read, usage.cache_write
            ),
        )?;
    }
    history.push(message.to_message());
    Ok(())
}

fn io_error(err: std::io::Error) -> AgentError {
    AgentError::new(codes::INTERNAL, format!("terminal I/O failed: {err}"))
}

fn say(info: &mut impl Write, text: &str) -> Result<(), AgentError> {
    writeln!(info, "{text}").map_err(io_error)
}

fn say_inline(info: &mut impl Write, text: &str) -> Result<(), AgentError> {
    write!(info, "{text}").map_err(io_error)?;
    info.flush().map_err(io_error)
}
