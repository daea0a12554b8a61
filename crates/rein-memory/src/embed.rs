//! Embeddings for memory search (feature `embeddings`): an [`Embedder`]
//! turns texts into vectors; [`HttpEmbedder`] asks an OpenAI-compatible
//! `POST {base}/embeddings` (OpenAI, llama.cpp's server, vLLM, Ollama's
//! compatible route). A `SqliteMemory` given one keeps each item's vector
//! and blends the nearest items into a search's full-text results.
//!
//! Bounded: at most [`MAX_DIMENSIONS`] numbers a vector, a response of at
//! most [`MAX_RESPONSE_BYTES`], 30 seconds a request. The key is sent as a
//! bearer token and never appears in an error.
//!
//! Not here: where vectors are kept and how results blend (`vectors.rs`).

use std::time::Duration;

use async_trait::async_trait;
use rein_wire::AgentError;
use rein_wire::error::codes;
use serde_json::{Value, json};

/// The most numbers one vector may have.
pub const MAX_DIMENSIONS: usize = 8_192;

/// The largest embeddings response read, in bytes.
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// Texts in, one vector each out (same order).
#[async_trait]
pub trait Embedder: Send + Sync {
    /// The model's name: vectors of different models are never compared.
    fn model(&self) -> &str;

    /// One vector per text.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, AgentError>;
}

/// An OpenAI-compatible embeddings endpoint.
pub struct HttpEmbedder {
    client: reqwest::Client,
    url: String,
    model: String,
    key: Option<String>,
}

fn unavailable(message: String) -> AgentError {
    AgentError::new(codes::PROVIDER_UNAVAILABLE, message)
}

impl HttpEmbedder {
    /// `model` at `base_url` (`…/v1`; `/embeddings` is added), with `key`
    /// as the bearer token when there is one.
    pub fn new(
        base_url: &str,
        model: &str,
        key: Option<String>,
    ) -> Result<HttpEmbedder, AgentError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .tls_backend_rustls()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| {
                unavailable(format!(
                    "no HTTP client for embeddings: {}",
                    e.without_url()
                ))
            })?;
        Ok(HttpEmbedder {
            client,
            url: format!("{}/embeddings", base_url.trim_end_matches('/')),
            model: model.to_owned(),
            key,
        })
    }
}

#[async_trait]
impl Embedder for HttpEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, AgentError> {
        let mut request = self
            .client
            .post(&self.url)
            .json(&json!({"model": self.model, "input": texts}));
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| unavailable(format!("the embeddings server: {}", e.without_url())))?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| unavailable(format!("the embeddings answer: {}", e.without_url())))?
        {
            if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(unavailable(format!(
                    "the embeddings answer is over {MAX_RESPONSE_BYTES} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            return Err(unavailable(format!(
                "the embeddings server answered {}",
                status.as_u16()
            )));
        }
        let answer: Value = serde_json::from_slice(&body)
            .map_err(|e| unavailable(format!("the embeddings answer is not JSON: {e}")))?;
        vectors_of(&answer, texts.len())
    }
}

/// The vectors of an OpenAI-shaped answer (`data[].embedding`, placed by
/// `index`), `want` of them, each finite and within the bound.
fn vectors_of(answer: &Value, want: usize) -> Result<Vec<Vec<f32>>, AgentError> {
    let bad = |why: &str| unavailable(format!("the embeddings answer {why}"));
    let data = answer["data"]
        .as_array()
        .ok_or_else(|| bad("has no data"))?;
    let mut vectors = vec![Vec::new(); want];
    for (at, entry) in data.iter().enumerate() {
        let index = entry["index"].as_u64().map_or(at, |i| i as usize);
        let numbers = entry["embedding"]
            .as_array()
            .ok_or_else(|| bad("has an entry without an embedding"))?;
        if numbers.is_empty() || numbers.len() > MAX_DIMENSIONS {
            return Err(bad("has a vector of no or too many numbers"));
        }
        let vector: Vec<f32> = numbers
            .iter()
            .map(|n| n.as_f64().map(|f| f as f32).filter(|f| f.is_finite()))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("has a number that is not one"))?;
        let slot = vectors
            .get_mut(index)
            .ok_or_else(|| bad("has an index out of range"))?;
        *slot = vector;
    }
    if vectors.iter().any(Vec::is_empty) {
        return Err(bad(&format!("does not hold {want} vectors")));
    }
    Ok(vectors)
}
