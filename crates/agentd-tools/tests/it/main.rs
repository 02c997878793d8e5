//! Integration tests of agentd-tools: the bash tool running real processes in temporary
//! workspaces, and the workspaces themselves. One binary (see STYLE.md, Tests).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod arguments;
mod background;
mod basics;
mod environment;
mod helpers;
mod output;
mod termination;
mod workspaces;
