//! agentd-engine's integration tests: the engine over a real SQLite store (behind a wrapper
//! that records every write), a scripted provider and in-process tools.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod appends;
mod conversations;
mod helpers;
