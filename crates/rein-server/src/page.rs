//! The page: static HTML, CSS and JavaScript embedded in the binary — no
//! build step, no CDN — served behind the same guards as the API, with a
//! content security policy that allows only this origin's script and
//! style (a model's text can never become script: the page inserts text,
//! never markup).
//!
//! Not here: the API the page calls (`routes`).

use axum::http::header;
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/app.css");

/// Only this origin's files; no inline script or style; no framing.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

fn file(body: &'static str, kind: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

pub(crate) async fn index() -> Response {
    file(INDEX, "text/html; charset=utf-8")
}

pub(crate) async fn script() -> Response {
    file(SCRIPT, "text/javascript; charset=utf-8")
}

pub(crate) async fn style() -> Response {
    file(STYLE, "text/css; charset=utf-8")
}
