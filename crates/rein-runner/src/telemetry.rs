//! The runner's spans and metrics, named after OpenTelemetry's `gen_ai.*`
//! semantic conventions: `invoke_agent` for a turn, `chat {model}` for a
//! model call (provider, model, token usage, finish reason), and
//! `execute_tool {name}` for a call (tool, call id, outcome code). Metrics
//! are events a metrics layer turns into instruments:
//! `gen_ai.client.token.usage` (by token type) and
//! `gen_ai.client.operation.duration`.
//!
//! They carry no prompt, no model text, no arguments, no result and no
//! key: names, ids, counts, codes and durations only. A product that wants
//! the prompt on its turn spans opts in (`Conversation::telemetry_content`).
//!
//! Not here: exporting (`tracing-opentelemetry`, `rein-telemetry`'s sink).

use rein_tools::Outcome;
use rein_wire::Usage;
use tracing::{Span, field::Empty};

pub(crate) fn agent_span(agent: &str, session: &str, path: &str, prompt: Option<&str>) -> Span {
    tracing::info_span!(
        "invoke_agent",
        otel.name = format!("invoke_agent {agent}"),
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = agent,
        gen_ai.conversation.id = session,
        rein.agent.path = path,
        rein.prompt = prompt,
        rein.outcome = Empty,
    )
}

pub(crate) fn chat_span(provider: &str, model: &str) -> Span {
    tracing::info_span!(
        "chat",
        otel.name = format!("chat {model}"),
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.response.finish_reasons = Empty,
        error.type = Empty,
    )
}

/// What a model call used, on its span and as metric events.
pub(crate) fn model_called(
    span: &Span,
    provider: &str,
    model: &str,
    usage: Option<&Usage>,
    finish: Option<&str>,
    seconds: f64,
) {
    span.record("gen_ai.response.model", model);
    if let Some(finish) = finish {
        span.record("gen_ai.response.finish_reasons", finish);
    }
    if let Some(usage) = usage {
        let input = usage.prompt_total();
        span.record("gen_ai.usage.input_tokens", input);
        span.record("gen_ai.usage.output_tokens", usage.output);
        tracing::info!(
            histogram.gen_ai.client.token.usage = input,
            gen_ai.token.type = "input",
            gen_ai.provider.name = provider,
            gen_ai.request.model = model,
        );
        tracing::info!(
            histogram.gen_ai.client.token.usage = usage.output,
            gen_ai.token.type = "output",
            gen_ai.provider.name = provider,
            gen_ai.request.model = model,
        );
    }
    tracing::info!(
        histogram.gen_ai.client.operation.duration = seconds,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
    );
}

/// A model call that failed.
pub(crate) fn model_failed(span: &Span, code: &rein_wire::ErrorCode) {
    span.record("error.type", code.as_str());
}

/// Run `call` (a backend's invoke of `tool`) inside its `execute_tool`
/// span, and note how it ended.
pub(crate) async fn traced_call(
    tool: &str,
    call_id: &str,
    call: impl std::future::Future<Output = Outcome>,
) -> Outcome {
    let span = tool_span(tool, call_id);
    let outcome = tracing::Instrument::instrument(call, span.clone()).await;
    tool_done(&span, &outcome);
    outcome
}

fn tool_span(tool: &str, call_id: &str) -> Span {
    tracing::info_span!(
        "execute_tool",
        otel.name = format!("execute_tool {tool}"),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.call.id = call_id,
        error.type = Empty,
    )
}

/// How a call ended, on its span (the code only, never the result).
fn tool_done(span: &Span, outcome: &Outcome) {
    if let Outcome::Failed { code, .. } = outcome {
        span.record("error.type", code.as_str());
    }
}

/// Make a model call (`call`, the window's) inside its `chat` span, and
/// note how it ended.
pub(crate) async fn traced_model_call(
    agent: &crate::Agent,
    call: impl std::future::Future<
        Output = Result<Option<rein_wire::AssembledMessage>, rein_wire::AgentError>,
    >,
) -> Result<Option<rein_wire::AssembledMessage>, rein_wire::AgentError> {
    let provider = agent.provider.name();
    let chat = chat_span(provider, &agent.profile.model);
    let asked = std::time::Instant::now();
    let called = tracing::Instrument::instrument(call, chat.clone()).await;
    match &called {
        Ok(Some(message)) => model_called(
            &chat,
            provider,
            message.model.as_deref().unwrap_or(&agent.profile.model),
            message.usage.as_ref(),
            message.stop_reason.as_ref().map(|r| r.as_str()),
            asked.elapsed().as_secs_f64(),
        ),
        Ok(None) => {}
        Err(err) => model_failed(&chat, &err.code),
    }
    called
}
