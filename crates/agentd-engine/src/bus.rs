//! The per-session live bus: stored events fanned out to live subscribers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use agentd_store::StoredEvent;
use tokio::sync::broadcast;
use uuid::Uuid;

/// Fans out each session's events, after they are stored, to whoever follows that session.
///
/// Writers: the turn task (and `begin_turn`), strictly after the store returned. Readers:
/// `EventFeed`s. A session's channel exists while it has subscribers; it is dropped on the
/// first publish that finds none.
pub struct Bus {
    channels: Mutex<HashMap<Uuid, broadcast::Sender<Arc<StoredEvent>>>>,
    /// How many events a subscriber may fall behind before it lags and must catch up from
    /// the store (see `EventFeed`).
    capacity: usize,
}

impl Bus {
    /// A bus whose subscribers may fall `capacity` events behind (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            channels: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// Publishes stored events of `session_id`, in seq order.
    pub fn publish(&self, session_id: Uuid, events: &[Arc<StoredEvent>]) {
        let mut channels = self.channels.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(sender) = channels.get(&session_id) else {
            return;
        };
        for event in events {
            if sender.send(event.clone()).is_err() {
                channels.remove(&session_id);
                return;
            }
        }
    }

    /// A receiver of every event of `session_id` published from now on.
    pub fn subscribe(&self, session_id: Uuid) -> broadcast::Receiver<Arc<StoredEvent>> {
        let mut channels = self.channels.lock().unwrap_or_else(PoisonError::into_inner);
        channels
            .entry(session_id)
            .or_insert_with(|| broadcast::channel(self.capacity).0)
            .subscribe()
    }
}
