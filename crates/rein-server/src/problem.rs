//! Errors as HTTP answers: `application/problem+json` (RFC 9457) with the
//! registry's code, status and hint — the same words a terminal prints.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use rein_wire::AgentError;

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
