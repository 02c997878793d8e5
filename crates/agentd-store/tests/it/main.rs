//! The store's integration tests: one conformance suite, run against every backend.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conformance;
mod postgres;
mod sqlite;
