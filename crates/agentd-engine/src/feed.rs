//! [`EventFeed`]: a session's events after a cursor, stored ones first, then live.

use std::collections::VecDeque;
use std::sync::Arc;

use agentd_store::{EventStore, StoredEvent};
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

use crate::bus::Subscription;
use crate::error::Result;

/// Page size when reading from the store.
const PAGE: u32 = 500;

/// Yields every event of a session with `seq > after`, exactly once and in order: first from
/// the store, then from the live bus. It subscribes before it reads the store, so nothing
/// published in between is missed; live events it already read from the store are skipped;
/// and when it lags behind the bus or sees a gap it reads the missing events from the store
/// instead of skipping them; a wake-up from another process (Postgres `NOTIFY`) makes it read
/// the store too. Memory per feed is bounded by one page plus the bus capacity.
pub struct EventFeed {
    store: Arc<dyn EventStore>,
    session_id: Uuid,
    /// The seq of the last event yielded.
    last: u64,
    backlog: VecDeque<Arc<StoredEvent>>,
    /// `None` once the feed only replays (`follow=false`).
    live: Option<Subscription>,
    /// Whether the store has nothing after `last` as of the last read.
    caught_up: bool,
    /// The resync count of the last wake-up handled.
    resyncs: u64,
}

impl EventFeed {
    pub(crate) fn new(
        store: Arc<dyn EventStore>,
        session_id: Uuid,
        after: u64,
        live: Option<Subscription>,
    ) -> Self {
        Self {
            store,
            session_id,
            last: after,
            backlog: VecDeque::new(),
            resyncs: live.as_ref().map_or(0, |live| live.wake.borrow().resyncs),
            live,
            caught_up: false,
        }
    }

    /// The seq of the last event yielded (the resume cursor).
    pub fn last_seq(&self) -> u64 {
        self.last
    }

    /// The next event; `Ok(None)` when a replay-only feed has nothing more (a live feed waits).
    /// Errors: the store's, when a read fails.
    pub async fn next(&mut self) -> Result<Option<Arc<StoredEvent>>> {
        loop {
            if let Some(event) = self.backlog.pop_front() {
                self.last = event.seq;
                return Ok(Some(event));
            }
            if !self.caught_up {
                self.read_page().await?;
                continue;
            }
            let Some(live) = self.live.as_mut() else {
                return Ok(None);
            };
            tokio::select! {
                received = live.events.recv() => match received {
                    Ok(event) if event.seq <= self.last => {}
                    Ok(event) if event.seq == self.last + 1 => {
                        self.last = event.seq;
                        return Ok(Some(event));
                    }
                    // A gap or a lag: the store has what we missed.
                    Ok(_) | Err(RecvError::Lagged(_)) => self.caught_up = false,
                    Err(RecvError::Closed) => return Ok(None),
                },
                changed = live.wake.changed() => {
                    if changed.is_err() {
                        return Ok(None);
                    }
                    // Another process stored events we have not seen (or notifications
                    // were lost): re-read.
                    let wake = *live.wake.borrow_and_update();
                    if wake.seq > self.last || wake.resyncs != self.resyncs {
                        self.resyncs = wake.resyncs;
                        self.caught_up = false;
                    }
                }
            }
        }
    }

    async fn read_page(&mut self) -> Result<()> {
        let page = self
            .store
            .load(self.session_id, self.last, Some(PAGE))
            .await?;
        self.caught_up = page.len() < PAGE as usize;
        self.backlog.extend(page.into_iter().map(Arc::new));
        Ok(())
    }
}
