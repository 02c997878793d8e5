//! agentd-provider's integration tests, one binary (STYLE.md): recorded transcripts replayed
//! through the parser, the SSE layer it relies on, hand-written edge cases, and the provider
//! against a real local HTTP server.

// Test helpers outside `#[test]` functions panic on purpose (clippy.toml only covers tests).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cases;
mod fixtures;
mod framing;
mod http;
mod support;
