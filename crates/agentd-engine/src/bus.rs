//! The per-session live bus: stored events fanned out to live subscribers, plus wake-ups for
//! events that other processes stored (Postgres `LISTEN/NOTIFY`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use agentd_store::StoredEvent;
use tokio::sync::{broadcast, watch};
use uuid::Uuid;

/// Fans out each session's events, after they are stored, to whoever follows that session.
///
/// Writers: the turn task (and `start_turn`, recovery), strictly after the store returned;
/// the change listener, which only wakes. Readers: `EventFeed`s. A session's channel exists
/// while it has subscribers; it is dropped on the first publish that finds none.
pub struct Bus {
    channels: Mutex<HashMap<Uuid, Channel>>,
    /// How many events a subscriber may fall behind before it lags and must catch up from
    /// the store (see `EventFeed`).
    capacity: usize,
}

struct Channel {
    events: broadcast::Sender<Arc<StoredEvent>>,
    /// The newest seq another process reported for the session.
    wake: watch::Sender<u64>,
}

/// A live subscription to one session.
pub struct Subscription {
    /// Events stored by this process, in seq order.
    pub(crate) events: broadcast::Receiver<Arc<StoredEvent>>,
    /// Bumped when another process stored events: read them from the store.
    pub(crate) wake: watch::Receiver<u64>,
}

impl Bus {
    /// A bus whose subscribers may fall `capacity` events behind (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            channels: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Channel>> {
        self.channels.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Publishes stored events of `session_id`, in seq order.
    pub fn publish(&self, session_id: Uuid, events: &[Arc<StoredEvent>]) {
        let mut channels = self.lock();
        let Some(channel) = channels.get(&session_id) else {
            return;
        };
        for event in events {
            if channel.events.send(event.clone()).is_err() {
                channels.remove(&session_id);
                return;
            }
        }
    }

    /// Tells `session_id`'s subscribers that the store has events up to `seq`.
    pub fn wake(&self, session_id: Uuid, seq: u64) {
        if let Some(channel) = self.lock().get(&session_id) {
            channel.wake.send_if_modified(|known| {
                let newer = seq > *known;
                if newer {
                    *known = seq;
                }
                newer
            });
        }
    }

    /// Tells every subscriber to re-read from its cursor (notifications may have been lost).
    pub fn wake_all(&self) {
        for channel in self.lock().values() {
            channel.wake.send_modify(|_| {});
        }
    }

    /// A subscription to every event of `session_id` published from now on.
    pub fn subscribe(&self, session_id: Uuid) -> Subscription {
        let mut channels = self.lock();
        let channel = channels.entry(session_id).or_insert_with(|| Channel {
            events: broadcast::channel(self.capacity).0,
            wake: watch::channel(0).0,
        });
        Subscription {
            events: channel.events.subscribe(),
            wake: channel.wake.subscribe(),
        }
    }
}
