//! Errors as HTTP answers: `application/problem+json` (RFC 9457) with the
//! registry's code, status and hint — the same words a terminal prints.

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rein_wire::{AgentError, error::codes};

/// What a route answers: its response, or a problem document.
pub(crate) type Answered = Result<Response, Problem>;

/// An [`AgentError`] answered as problem details.
#[derive(Debug)]
pub(crate) struct Problem(pub(crate) AgentError);

impl From<AgentError> for Problem {
    fn from(err: AgentError) -> Self {
        Problem(err)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let body = self.0.to_problem();
        let status = body["status"]
            .as_u64()
            .and_then(|s| u16::try_from(s).ok())
            .and_then(|s| StatusCode::from_u16(s).ok())
            // A code outside HTTP's range (499 is nginx's) is still an error.
            .filter(|s| s.is_client_error() || s.is_server_error())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (
            status,
            [(header::CONTENT_TYPE, "application/problem+json")],
            body.to_string(),
        )
            .into_response()
    }
}

/// Every error answered as problem+json, whoever made it: axum's own
/// answers (a query or path that does not parse, a method a route does not
/// take) come as plain text, and are replaced by a problem with the
/// registry's code for their status and their words as the detail.
pub(crate) async fn problems_only(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/problem+json"));
    if is_problem || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let code = match status.as_u16() {
        401 => codes::UNAUTHENTICATED,
        404 => codes::ROUTE_NOT_FOUND,
        405 => codes::METHOD_NOT_ALLOWED,
        413 => codes::BODY_TOO_LARGE,
        _ if status.is_client_error() => codes::INVALID_INPUT,
        _ => codes::INTERNAL,
    };
    let said = axum::body::to_bytes(response.into_body(), 4096)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let message = if said.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        said
    };
    let mut answer = Problem(AgentError::new(code, message)).into_response();
    *answer.status_mut() = status;
    answer
}

/// The OpenAPI document with every operation's errors said: any 4xx or
/// 5xx is problem+json of this shape (`problems_only` makes it so), so a
/// client generated from the document — or a property test such as
/// schemathesis — expects what the server answers.
pub(crate) fn documented(mut doc: serde_json::Value) -> serde_json::Value {
    let problem = serde_json::json!({
        "description": "An error as problem details (RFC 9457) with rein's stable code",
        "content": {"application/problem+json": {"schema": {
            "type": "object",
            "required": ["type", "title", "status", "code"],
            "properties": {
                "type": {"type": "string"},
                "title": {"type": "string"},
                "status": {"type": "integer"},
                "detail": {"type": "string"},
                "code": {"type": "string"},
                "hint": {"type": "string"},
                "retryable": {"type": "boolean"}
            }
        }}}
    });
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else {
        return doc;
    };
    for operations in paths.values_mut().filter_map(|p| p.as_object_mut()) {
        for operation in operations.values_mut() {
            let Some(responses) = operation
                .get_mut("responses")
                .and_then(|r| r.as_object_mut())
            else {
                continue;
            };
            for range in ["4XX", "5XX"] {
                responses.entry(range).or_insert_with(|| problem.clone());
            }
        }
    }
    doc
}

/// A JSON body, or `invalid_input` naming what is wrong.
pub(crate) fn body<T: serde::de::DeserializeOwned>(
    payload: Result<axum::Json<T>, axum::extract::rejection::JsonRejection>,
) -> Result<T, Problem> {
    match payload {
        Ok(axum::Json(value)) => Ok(value),
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(Problem(
            AgentError::new(codes::BODY_TOO_LARGE, rejection.body_text()),
        )),
        Err(rejection) => Err(Problem(AgentError::new(
            codes::INVALID_INPUT,
            rejection.body_text(),
        ))),
    }
}
