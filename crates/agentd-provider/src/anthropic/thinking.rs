//! Thinking blocks kept for the next request. Anthropic requires the assistant turn that
//! called tools to be sent back with its thinking blocks unchanged, signature included
//! ("Extended thinking" docs, "Preserving thinking blocks"), but a [`Chunk`] cannot carry a
//! signature, so the provider remembers the blocks of each tool-calling message here, keyed
//! by the message's first tool call id, in memory and bounded.
//!
//! When the blocks are gone (a restart, an evicted entry) the request is sent without
//! `thinking` (see `render.rs`), which the API accepts; thinking resumes after the next user
//! message.
//!
//! [`Chunk`]: agentd_events::Chunk

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use serde::Serialize;

/// How many tool-calling messages' thinking is kept (the oldest is dropped first).
const CAPACITY: usize = 512;

/// A thinking block exactly as the API sent it, serialised as the API expects it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ThinkingBlock {
    /// `{"type":"thinking","thinking","signature"}`.
    Thinking {
        /// The thinking text, deltas joined.
        thinking: String,
        /// The last `signature_delta` (each one replaces the previous).
        signature: String,
    },
    /// `{"type":"redacted_thinking","data"}`.
    RedactedThinking {
        /// Opaque, encrypted.
        data: String,
    },
}

/// Recent tool-calling messages' thinking blocks. Written by the stream parser when a
/// message with tool calls completes, read when the next request is rendered; shared by all
/// requests of one provider.
#[derive(Debug, Default)]
pub(super) struct ThinkingCache {
    entries: Mutex<VecDeque<(String, Vec<ThinkingBlock>)>>,
}

impl ThinkingCache {
    /// Keeps `blocks` for the message whose first tool call is `call_id`.
    pub(super) fn insert(&self, call_id: String, blocks: Vec<ThinkingBlock>) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|(id, _)| *id != call_id);
        if entries.len() >= CAPACITY {
            entries.pop_front();
        }
        entries.push_back((call_id, blocks));
    }

    /// The blocks of the message whose first tool call is `call_id`.
    pub(super) fn get(&self, call_id: &str) -> Option<Vec<ThinkingBlock>> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let found = entries.iter().rev().find(|(id, _)| id == call_id);
        found.map(|(_, blocks)| blocks.clone())
    }
}
