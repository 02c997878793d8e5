//! [`Conversations`]: each session's conversation as of the end of its last turn here, as
//! derived model messages, so the next turn need not read, parse and derive the whole session
//! from the store again.
//!
//! Only a shortcut: the store stays the truth. An entry is used only when it is complete up
//! to the event right before the new turn's `user/message`; when anything else was appended
//! in between (a turn on another replica, a turn closed by recovery) the turn reads the store.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use agentd_events::DerivedMessages;
use uuid::Uuid;

/// The conversations (`user/message`, `assistant/message` and `tool/result` events, derived
/// into model messages) of at most `capacity` sessions.
///
/// A turn takes its session's entry out when it starts ([`Conversations::take`]) and puts the
/// grown conversation back once its `turn/end` is stored ([`Conversations::put`]); a turn that
/// failed puts nothing back. When a new session needs room, the entry put back longest ago
/// goes: the session whose last turn ended longest ago (least recently used, counting turns).
/// `Engine::delete_session` drops the session's entry.
pub(crate) struct Conversations {
    entries: Mutex<Entries>,
    capacity: usize,
}

#[derive(Default)]
struct Entries {
    by_session: HashMap<Uuid, Entry>,
    /// How many entries were ever put: the clock of `Entry::put_as`.
    puts: u64,
}

struct Entry {
    /// The seq through which `conversation` is complete: the `turn/end` of the turn that put
    /// it.
    through: u64,
    conversation: DerivedMessages,
    /// `Entries::puts` when it was put; the smallest goes first.
    put_as: u64,
}

impl Conversations {
    /// Room for `capacity` sessions; 0 keeps nothing.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            entries: Mutex::new(Entries::default()),
            capacity,
        }
    }

    /// Takes out the conversation of `session_id` if it is complete through exactly seq
    /// `through`. The entry is gone afterwards either way: a stale one is of no use.
    pub(crate) fn take(&self, session_id: Uuid, through: u64) -> Option<DerivedMessages> {
        let entry = self.lock().by_session.remove(&session_id)?;
        (entry.through == through).then_some(entry.conversation)
    }

    /// Keeps the conversation of `session_id`, complete through seq `through`.
    pub(crate) fn put(&self, session_id: Uuid, through: u64, conversation: DerivedMessages) {
        if self.capacity == 0 {
            return;
        }
        let mut entries = self.lock();
        let full = entries.by_session.len() >= self.capacity;
        let evicted = if full && !entries.by_session.contains_key(&session_id) {
            let oldest = entries
                .by_session
                .iter()
                .min_by_key(|(_, entry)| entry.put_as)
                .map(|(id, _)| *id);
            oldest.and_then(|id| entries.by_session.remove(&id))
        } else {
            None
        };
        entries.puts += 1;
        let entry = Entry {
            through,
            conversation,
            put_as: entries.puts,
        };
        let replaced = entries.by_session.insert(session_id, entry);
        drop(entries);
        // A long conversation takes a while to free; not while holding the lock.
        drop((evicted, replaced));
    }

    /// Drops the entry of `session_id`, if any.
    pub(crate) fn forget(&self, session_id: Uuid) {
        // Bound first, so it is freed after the lock is released.
        let entry = self.lock().by_session.remove(&session_id);
        drop(entry);
    }

    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentd_events::EventData;
    use pretty_assertions::assert_eq;

    /// A conversation of one user message, `text`.
    fn user(text: &str) -> DerivedMessages {
        let mut conversation = DerivedMessages::default();
        conversation.push(&EventData::UserMessage { text: text.into() });
        conversation
    }

    #[test]
    fn an_entry_is_taken_once_and_only_when_complete_through_the_asked_seq() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let conversations = Conversations::new(4);
        conversations.put(a, 3, user("one"));
        conversations.put(b, 3, user("one"));
        assert_eq!(conversations.take(a, 3), Some(user("one")));
        assert_eq!(conversations.take(a, 3), None);
        // Something else appended after seq 3: the entry is stale and gone.
        assert_eq!(conversations.take(b, 5), None);
        assert_eq!(conversations.take(b, 3), None);
    }

    #[test]
    fn a_full_cache_drops_the_entry_put_longest_ago() {
        let (a, b, c) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let conversations = Conversations::new(2);
        conversations.put(a, 1, user("one"));
        conversations.put(b, 1, user("one"));
        // a's next turn: taken out and put back, now the most recent.
        let conversation = conversations.take(a, 1).unwrap();
        conversations.put(a, 2, conversation);
        conversations.put(c, 1, user("one"));
        assert_eq!(conversations.take(b, 1), None);
        assert_eq!(conversations.take(a, 2), Some(user("one")));
        assert_eq!(conversations.take(c, 1), Some(user("one")));
    }

    #[test]
    fn forget_drops_an_entry_and_capacity_zero_keeps_nothing() {
        let a = Uuid::now_v7();
        let conversations = Conversations::new(2);
        conversations.put(a, 1, user("one"));
        conversations.forget(a);
        assert_eq!(conversations.take(a, 1), None);
        let off = Conversations::new(0);
        off.put(a, 1, user("one"));
        assert_eq!(off.take(a, 1), None);
    }
}
