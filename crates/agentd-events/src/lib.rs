//! agentd's protocol crate: the event log's types and the pure logic built on them.
//!
//! Owns the event envelope and payloads (`../shared/DESIGN.md` §4), the model-facing
//! message shape (OpenAI Chat Completions), [`derive_messages`] (also incrementally:
//! [`DerivedMessages`]) and [`BlockAssembler`].
//! It must not do IO: no tokio, no HTTP, no database. Everything here is table-tested.

mod assemble;
mod chunk;
mod derive;
mod event;
mod message;

pub use assemble::{Assembled, BlockAssembler};
pub use chunk::{Chunk, ErrorInfo, Finish, FinishKind, Usage};
pub use derive::{DerivedMessages, NOT_EXECUTED, derive_messages};
pub use event::{
    Event, EventData, ProviderRetry, SEQ_PREFIX, ToolResult, ToolStart, TurnEnd, TurnEndKind,
    envelope_json, envelope_tail, envelope_with_seq, format_time,
};
pub use message::{FunctionCall, Message, ToolCall, ToolSpec};
