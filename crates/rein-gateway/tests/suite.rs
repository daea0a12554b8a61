//! The gateway's tests, one test binary: each file below was its own binary once, and
//! each linked the whole stack. One binary builds and links once.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

mod captures;
mod decoder_properties;
mod http_stream;
mod kept;
mod reasoning;
mod secrets_and_offline;
mod sse_edge_cases;
