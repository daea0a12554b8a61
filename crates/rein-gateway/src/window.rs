//! The window an OpenAI-compatible server really has, asked of the server:
//! llama.cpp's `GET /props` (`default_generation_settings.n_ctx`), vLLM's
//! `GET /v1/models` (`max_model_len`), LM Studio's `GET /api/v0/models`
//! (`loaded_context_length`, else `max_context_length`) and Ollama's
//! `GET /api/ps` (the loaded model's `context_length`) — each asked once per
//! base URL and model in a process, each given two seconds, the first that
//! answers taken.
//!
//! Not here: where the window is used (the runner's context), or what a
//! server without an answer is given (`ProviderConfig::openai_compatible`'s
//! conservative default).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use serde_json::Value;

/// A window a server stated, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Learned {
    /// Tokens.
    pub tokens: u32,
    /// Where it was read (`llama.cpp GET /props`).
    pub from: &'static str,
}

/// What asking a server for its window came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// The server stated it.
    Stated(Learned),
    /// Nothing answered: the provider works in `assumed` tokens.
    Unanswered {
        /// The conservative default it works in.
        assumed: u32,
    },
}

/// How long each question may take.
const ASK_TIMEOUT: Duration = Duration::from_secs(2);

/// The answers of this process, per base URL and model (`None`: nothing
/// answered).
type Answers = HashMap<(String, String), Option<Learned>>;
static ASKED: LazyLock<Mutex<Answers>> = LazyLock::new(Mutex::default);

/// The window of `model` at the OpenAI-compatible `base_url` (`…/v1`), as
/// the server states it; `None` when no known endpoint answers.
pub async fn ask(client: &reqwest::Client, base_url: &str, model: &str) -> Option<Learned> {
    let key = (base_url.to_owned(), model.to_owned());
    if let Some(known) = ASKED.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return known.clone();
    }
    let learned = asked(client, base_url, model).await;
    ASKED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, learned.clone());
    learned
}

async fn asked(client: &reqwest::Client, base_url: &str, model: &str) -> Option<Learned> {
    let base = base_url.trim_end_matches('/');
    let origin = base.strip_suffix("/v1").unwrap_or(base);
    let tries: [(String, &'static str, Reader); 4] = [
        (format!("{origin}/props"), "llama.cpp GET /props", llama_cpp),
        (
            format!("{base}/models"),
            "GET /v1/models (max_model_len)",
            vllm,
        ),
        (
            format!("{origin}/api/v0/models"),
            "LM Studio GET /api/v0/models",
            lm_studio,
        ),
        (format!("{origin}/api/ps"), "Ollama GET /api/ps", ollama),
    ];
    for (url, from, read) in tries {
        let Some(body) = get(client, &url).await else {
            continue;
        };
        if let Some(tokens) = read(&body, model)
            .and_then(|t| u32::try_from(t).ok())
            .filter(|t| *t > 0)
        {
            return Some(Learned { tokens, from });
        }
    }
    None
}

type Reader = fn(&Value, &str) -> Option<u64>;

async fn get(client: &reqwest::Client, url: &str) -> Option<Value> {
    let answer = tokio::time::timeout(ASK_TIMEOUT, client.get(url).send())
        .await
        .ok()?
        .ok()?;
    if !answer.status().is_success() {
        return None;
    }
    // A body past 1 MiB is no window's answer.
    let bytes = tokio::time::timeout(ASK_TIMEOUT, answer.bytes())
        .await
        .ok()?
        .ok()?;
    if bytes.len() > 1 << 20 {
        return None;
    }
    serde_json::from_slice(&bytes).ok()
}

fn llama_cpp(body: &Value, _model: &str) -> Option<u64> {
    body.pointer("/default_generation_settings/n_ctx")
        .or_else(|| body.get("n_ctx"))
        .and_then(Value::as_u64)
}

/// The entry of `model` in a list under `data` (or `models`), else the only one.
fn entry<'a>(list: Option<&'a Value>, model: &str, name: &str) -> Option<&'a Value> {
    let items = list?.as_array()?;
    items
        .iter()
        .find(|m| m.get(name).and_then(Value::as_str) == Some(model))
        .or_else(|| (items.len() == 1).then(|| &items[0]))
}

fn vllm(body: &Value, model: &str) -> Option<u64> {
    entry(body.get("data"), model, "id")?
        .get("max_model_len")
        .and_then(Value::as_u64)
}

fn lm_studio(body: &Value, model: &str) -> Option<u64> {
    let entry = entry(body.get("data"), model, "id")?;
    entry
        .get("loaded_context_length")
        .or_else(|| entry.get("max_context_length"))
        .and_then(Value::as_u64)
}

fn ollama(body: &Value, model: &str) -> Option<u64> {
    entry(body.get("models"), model, "name")
        .or_else(|| entry(body.get("models"), model, "model"))?
        .get("context_length")
        .and_then(Value::as_u64)
}

/// What a provider learned, shared by its clones.
pub(crate) type Shared = Arc<Mutex<Option<Learned>>>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_servers_answer_is_read() {
        assert_eq!(
            llama_cpp(
                &json!({"default_generation_settings": {"n_ctx": 8192}}),
                "m"
            ),
            Some(8192)
        );
        assert_eq!(
            vllm(
                &json!({"data": [{"id": "a", "max_model_len": 4096}, {"id": "m", "max_model_len": 32768}]}),
                "m"
            ),
            Some(32768)
        );
        assert_eq!(
            lm_studio(
                &json!({"data": [{"id": "m", "max_context_length": 32768, "loaded_context_length": 4096}]}),
                "m"
            ),
            Some(4096)
        );
        assert_eq!(
            ollama(
                &json!({"models": [{"name": "qwen:1.5b", "context_length": 2048}]}),
                "qwen:1.5b"
            ),
            Some(2048)
        );
        assert_eq!(
            vllm(&json!({"data": [{"id": "a"}, {"id": "b"}]}), "m"),
            None
        );
    }
}
