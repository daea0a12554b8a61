//! Structured answers: `ask::<T>` and `ask_with_schema`, a turn whose
//! reply must be JSON following a schema (native structured output where
//! the provider has it), with one repair turn.
//!
//! Not here: the turn itself (the loop).

use super::*;

impl Conversation {
    /// Ask for a structured answer: the reply must be JSON following `T`'s
    /// schema. The provider's native structured output is used where it has
    /// one; otherwise the schema is given in the prompt. An answer that does
    /// not validate gets one repair turn; then `structured_answer_invalid`.
    pub async fn ask<T: schemars::JsonSchema + serde::de::DeserializeOwned>(
        &mut self,
        text: &str,
    ) -> Result<T, AgentError> {
        let value = self
            .ask_with_schema(text, rein_tools::schema_for::<T>())
            .await?;
        serde_json::from_value::<T>(value).map_err(|e| {
            AgentError::new(
                codes::STRUCTURED_ANSWER_INVALID,
                format!("the answer does not fit: {e}"),
            )
        })
    }

    /// [`Conversation::ask`] with the schema given as JSON (a product or an
    /// eval that has no Rust type for it): the validated answer.
    pub async fn ask_with_schema(
        &mut self,
        text: &str,
        schema: Value,
    ) -> Result<Value, AgentError> {
        let validator = jsonschema::validator_for(&schema).map_err(|e| {
            AgentError::new(
                codes::INVALID_INPUT,
                format!("the answer schema does not compile: {e}"),
            )
        })?;
        let native = self.agent.provider.capabilities().structured_output;
        self.window.answer_schema = native.then(|| rein_wire::OutputSchema {
            name: "answer".into(),
            schema: schema.clone(),
        });
        let mut prompt = text.to_owned();
        if !native {
            prompt.push_str(&format!("\n\nAnswer with only a JSON value that follows this JSON schema, and nothing else:\n{schema}"));
        }
        let result = async {
            let mut problem = String::new();
            for attempt in 0..2 {
                let outcome = if attempt == 0 {
                    self.turn(&prompt).await?
                } else {
                    self.turn(&format!(
                        "Your answer did not follow the schema: {problem}. Answer again with only the JSON value."
                    ))
                    .await?
                };
                let reply = match outcome {
                    TurnOutcome::Finished { reply } => reply,
                    TurnOutcome::Error { error } => return Err(error),
                    other => {
                        return Err(AgentError::new(
                            codes::STRUCTURED_ANSWER_INVALID,
                            format!("the turn ended without an answer ({})", other.name()),
                        ));
                    }
                };
                match parse_answer(&reply) {
                    Ok(value) => {
                        let errors: Vec<String> = validator.iter_errors(&value).take(5).map(|e| e.to_string()).collect();
                        if errors.is_empty() {
                            return Ok(value);
                        }
                        problem = errors.join("; ");
                    }
                    Err(e) => problem = e,
                }
            }
            Err(AgentError::new(
                codes::STRUCTURED_ANSWER_INVALID,
                format!("the answer did not follow the schema after one repair: {problem}"),
            ))
        }
        .await;
        self.window.answer_schema = None;
        result
    }
}

/// The JSON in a reply: the whole text, or the inside of a ``` fence.
pub(crate) fn parse_answer(reply: &str) -> Result<Value, String> {
    let text = reply.trim();
    let whole = serde_json::from_str::<Value>(text);
    let whole_error = match whole {
        Ok(value) => return Ok(value),
        Err(e) => e.to_string(),
    };
    // A fenced block anywhere in the reply (models often add a sentence).
    if let Some(start) = text.find("```") {
        let body = &text[start + 3..];
        let body = body.strip_prefix("json").unwrap_or(body);
        if let Some(end) = body.find("```")
            && let Ok(value) = serde_json::from_str::<Value>(body[..end].trim())
        {
            return Ok(value);
        }
    }
    // The first object or array that parses, with prose around it (a bounded
    // number of tries).
    for (at, _) in text
        .char_indices()
        .filter(|(_, c)| *c == '{' || *c == '[')
        .take(32)
    {
        let mut values = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>();
        if let Some(Ok(value)) = values.next() {
            return Ok(value);
        }
    }
    Err(format!("the answer is not JSON ({whole_error})"))
}
