//! agentd-server's integration tests: the HTTP API through a real listener, with a real
//! SQLite store, real bash tools and the real OpenAI-compatible provider talking to a
//! scripted model server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod events;
mod helpers;
mod perimeter;
mod provider_kinds;
mod recovery;
mod sessions;
mod streams;
mod turns;
