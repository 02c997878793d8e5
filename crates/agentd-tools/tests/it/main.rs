//! Integration tests of agentd-tools: the bash tool running real processes (unconfined, in
//! the real bubblewrap sandbox and in the Landlock + seccomp one), the file tools on real
//! files, confinement, limits and the workspaces themselves. One binary (see STYLE.md, Tests).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod arguments;
mod background;
mod basics;
mod confinement;
mod environment;
mod files_read_write;
mod files_search;
mod helpers;
mod landlock;
mod launchers;
mod lifetime;
mod output;
mod probe;
mod process_cap;
mod sandbox;
mod stress;
mod termination;
mod workspaces;
