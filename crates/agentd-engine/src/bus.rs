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
    /// The newest seq this process published for the session: a notification up to it
    /// (Postgres also notifies our own appends) has nothing to wake anyone for.
    published: u64,
    /// What other processes stored, as far as notifications tell.
    wake: watch::Sender<Wake>,
}

/// What the change listener knows of a session's events stored by other processes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Wake {
    /// The newest seq a notification reported.
    pub(crate) seq: u64,
    /// Bumped each time notifications may have been lost: every subscriber re-reads.
    pub(crate) resyncs: u64,
}

/// A live subscription to one session.
pub struct Subscription {
    /// Events stored by this process, in seq order.
    pub(crate) events: broadcast::Receiver<Arc<StoredEvent>>,
    /// Changes when another process stored events: read them from the store.
    pub(crate) wake: watch::Receiver<Wake>,
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
        let Some(channel) = channels.get_mut(&session_id) else {
            return;
        };
        if let Some(last) = events.last() {
            channel.published = channel.published.max(last.seq);
        }
        for event in events {
            if channel.events.send(event.clone()).is_err() {
                channels.remove(&session_id);
                return;
            }
        }
    }

    /// Tells `session_id`'s subscribers that the store has events up to `seq`, unless this
    /// process published them itself.
    pub fn wake(&self, session_id: Uuid, seq: u64) {
        if let Some(channel) = self.lock().get(&session_id) {
            if seq <= channel.published {
                return;
            }
            channel.wake.send_if_modified(|known| {
                let newer = seq > known.seq;
                if newer {
                    known.seq = seq;
                }
                newer
            });
        }
    }

    /// Tells every subscriber to re-read from its cursor (notifications may have been lost).
    pub fn wake_all(&self) {
        for channel in self.lock().values() {
            channel.wake.send_modify(|known| known.resyncs += 1);
        }
    }

    /// Ends every subscription to `session_id` (its session is gone): live feeds see the
    /// channel close and end.
    pub fn close(&self, session_id: Uuid) {
        self.lock().remove(&session_id);
    }

    /// A subscription to every event of `session_id` published from now on.
    pub fn subscribe(&self, session_id: Uuid) -> Subscription {
        let mut channels = self.lock();
        let channel = channels.entry(session_id).or_insert_with(|| Channel {
            events: broadcast::channel(self.capacity).0,
            published: 0,
            wake: watch::channel(Wake::default()).0,
        });
        Subscription {
            events: channel.events.subscribe(),
            wake: channel.wake.subscribe(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64) -> Arc<StoredEvent> {
        Arc::new(StoredEvent {
            seq,
            event_type: "user/message".into(),
            json: "{}".into(),
        })
    }

    #[test]
    fn notifications_of_our_own_events_wake_nobody() {
        let bus = Bus::new(16);
        let session = Uuid::new_v4();
        let mut sub = bus.subscribe(session);
        bus.publish(session, &[event(1), event(2)]);
        bus.wake(session, 2);
        assert!(!sub.wake.has_changed().unwrap());
        // Another process stored seq 3: that wakes.
        bus.wake(session, 3);
        assert!(sub.wake.has_changed().unwrap());
        assert_eq!(sub.wake.borrow_and_update().seq, 3);
        // An older notification arriving late does not.
        bus.wake(session, 3);
        assert!(!sub.wake.has_changed().unwrap());
    }

    #[test]
    fn closing_a_session_ends_its_subscriptions() {
        let bus = Bus::new(16);
        let session = Uuid::new_v4();
        let mut sub = bus.subscribe(session);
        bus.close(session);
        assert!(matches!(
            sub.events.try_recv(),
            Err(broadcast::error::TryRecvError::Closed)
        ));
        assert!(sub.wake.has_changed().is_err());
    }

    #[test]
    fn a_resync_wakes_every_subscriber() {
        let bus = Bus::new(16);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let (mut sub_a, mut sub_b) = (bus.subscribe(a), bus.subscribe(b));
        bus.wake_all();
        assert_eq!(sub_a.wake.borrow_and_update().resyncs, 1);
        assert_eq!(sub_b.wake.borrow_and_update().resyncs, 1);
    }
}
