//! [`TurnControl`]: how a running turn is told to stop, and why.

use std::sync::Mutex;
use std::sync::PoisonError;

use agentd_events::TurnEndKind;
use tokio_util::sync::CancellationToken;

/// The stop switch of one running turn.
///
/// Written by `Engine::cancel_turn` (a client's cancel), `Engine::delete_session` and
/// `Engine::shutdown`; read by the turn task, which ends the turn with the recorded kind.
/// Lives in the engine's registry from the turn's start until its `turn/end` is stored.
pub(crate) struct TurnControl {
    token: CancellationToken,
    /// The first reason given wins: `cancelled` or `interrupted`.
    reason: Mutex<Option<TurnEndKind>>,
}

impl TurnControl {
    pub(crate) fn new() -> Self {
        Self {
            token: CancellationToken::new(),
            reason: Mutex::new(None),
        }
    }

    /// Stops the turn: its model request is dropped, its tool's process tree killed.
    pub(crate) fn stop(&self, kind: TurnEndKind) {
        let mut reason = self.reason.lock().unwrap_or_else(PoisonError::into_inner);
        reason.get_or_insert(kind);
        self.token.cancel();
    }

    /// The token tools and the provider stream watch.
    pub(crate) fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// How the turn must end if it was stopped.
    pub(crate) fn stopped_kind(&self) -> Option<TurnEndKind> {
        *self.reason.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
