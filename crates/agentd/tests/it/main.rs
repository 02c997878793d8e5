//! Tests of the real `agentd` binary as a process: crashes, signals, restarts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod crash;
mod landlock;
mod perimeter;
mod replicas;
mod sandbox;
mod shutdown;
mod support;
