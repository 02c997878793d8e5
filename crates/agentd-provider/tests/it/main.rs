//! agentd-provider's integration tests, one binary (STYLE.md): recorded transcripts replayed
//! through the parsers, the SSE layer they rely on, one test per OpenAI-compatible quirk
//! ("kind", issue 3), the Anthropic format, retries, configuration and routing, a property
//! test of the SSE-to-chunks path, and the providers against a real local HTTP server.

// Test helpers outside `#[test]` functions panic on purpose (clippy.toml only covers tests).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic;
mod cases;
mod config;
mod fixtures;
mod framing;
mod http;
mod kinds;
mod props;
mod retries;
mod server;
mod support;
