//! Conformance checks about concurrency: racing turn starts, two writers (two replicas) on
//! one database, and turn leases.

use std::time::Duration;

use agentd_store::{BeginTurn, Error, EventStore};
use futures_util::future::join_all;
use pretty_assertions::assert_eq;
use uuid::Uuid;

use super::{LEASE, TurnEndKind, all_events, end, new_session, seqs, text};

pub async fn concurrent_begins_start_exactly_one_turn(store: &dyn EventStore) {
    let session_id = new_session(store).await;
    let attempts = (0..20).map(|i| async move {
        store
            .begin_turn(session_id, Uuid::new_v4(), &format!("try {i}"), None, LEASE)
            .await
    });
    let results = join_all(attempts).await;
    let started = results
        .iter()
        .filter(|r| matches!(r, Ok(BeginTurn::Started(..))))
        .count();
    let refused = results
        .iter()
        .filter(|r| matches!(r, Err(Error::TurnInProgress { .. })))
        .count();
    assert_eq!((started, refused), (1, 19));
}

/// Two stores (two replicas) on one database: concurrent begins start one turn, and
/// concurrent appends by the winner through both handles leave seqs gapless and ordered.
pub async fn two_writers_never_interleave_or_gap(a: &dyn EventStore, b: &dyn EventStore) {
    let session_id = new_session(a).await;
    let attempts = (0..10).map(|i| {
        let store = if i % 2 == 0 { a } else { b };
        async move {
            store
                .begin_turn(session_id, Uuid::new_v4(), "race", None, LEASE)
                .await
        }
    });
    let results = join_all(attempts).await;
    let winners: Vec<Uuid> = results
        .iter()
        .filter_map(|r| match r {
            Ok(BeginTurn::Started(turn, _)) => Some(turn.id),
            _ => None,
        })
        .collect();
    assert_eq!(winners.len(), 1);
    let turn_id = winners[0];
    let appends = (0..40).map(|i| {
        let store = if i % 2 == 0 { a } else { b };
        async move {
            store
                .append(session_id, turn_id, &[text(&i.to_string())])
                .await
        }
    });
    for result in join_all(appends).await {
        result.unwrap();
    }
    let seqs = seqs(a, session_id).await;
    assert_eq!(seqs, (1..=41).collect::<Vec<_>>());
}

pub async fn a_lapsed_lease_marks_the_turn_expired_and_renewal_keeps_it(store: &dyn EventStore) {
    let session_id = new_session(store).await;
    let short = Uuid::new_v4();
    store
        .begin_turn(session_id, short, "go", None, Duration::from_millis(50))
        .await
        .unwrap();
    assert_eq!(store.expired_turns().await.unwrap(), vec![]);
    tokio::time::sleep(Duration::from_millis(120)).await;
    let expired: Vec<Uuid> = store
        .expired_turns()
        .await
        .unwrap()
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(expired, vec![short]);
    store.renew_lease(short, LEASE).await.unwrap();
    assert_eq!(store.expired_turns().await.unwrap(), vec![]);
    store
        .end_turn(session_id, short, &end(TurnEndKind::Interrupted, 0, 0))
        .await
        .unwrap();
    assert!(matches!(
        store.renew_lease(short, LEASE).await,
        Err(Error::TurnNotRunning(_))
    ));
}

/// Writes to many sessions at once, some of them refused: every refused write fails alone
/// (a backend that commits writes together must not let one failure undo the others), and
/// every accepted one is stored once, in order, without gaps.
pub async fn refused_writes_leave_concurrent_ones_whole(store: &dyn EventStore) {
    let mut turns = Vec::new();
    for _ in 0..4 {
        let session_id = new_session(store).await;
        let turn_id = Uuid::new_v4();
        store
            .begin_turn(session_id, turn_id, "go", None, LEASE)
            .await
            .unwrap();
        turns.push((session_id, turn_id));
    }
    let writes = (0..48).map(|i| {
        let (session_id, turn_id) = turns[i % turns.len()];
        async move {
            let refused = i % 3 == 0;
            let turn = if refused { Uuid::new_v4() } else { turn_id };
            let result = store
                .append(session_id, turn, &[text(&i.to_string()), text("second")])
                .await;
            (refused, result)
        }
    });
    for (refused, result) in join_all(writes).await {
        if refused {
            assert!(
                matches!(result, Err(Error::TurnNotRunning(_))),
                "{result:?}"
            );
        } else {
            assert_eq!(result.unwrap().len(), 2);
        }
    }
    for (session_id, _) in turns {
        let seqs = seqs(store, session_id).await;
        // The user/message, then 8 accepted appends of 2 events each.
        assert_eq!(seqs, (1..=17).collect::<Vec<_>>());
    }
}

/// A turn ended while it still appends, and ended twice at once (a replica's lease reaper
/// racing the turn's own process): it ends exactly once, with the last seq, and nothing is
/// appended after its `turn/end`; seqs stay gapless.
pub async fn racing_ends_and_appends_end_the_turn_once_and_last(store: &dyn EventStore) {
    for round in 0..5 {
        let session_id = new_session(store).await;
        let turn_id = Uuid::new_v4();
        store
            .begin_turn(session_id, turn_id, "go", None, LEASE)
            .await
            .unwrap();
        let appends = (0..10).map(|i| async move {
            store
                .append(session_id, turn_id, &[text(&i.to_string())])
                .await
                .map(|_| ())
        });
        let ends = (0..3).map(|_| async move {
            store
                .end_turn(session_id, turn_id, &end(TurnEndKind::Interrupted, 1, 1))
                .await
                .map(|_| ())
        });
        let (appended, ended) = if round % 2 == 0 {
            let (a, e) = tokio::join!(join_all(appends), join_all(ends));
            (a, e)
        } else {
            let (e, a) = tokio::join!(join_all(ends), join_all(appends));
            (a, e)
        };
        let ok_ends = ended.iter().filter(|r| r.is_ok()).count();
        assert_eq!(ok_ends, 1, "{ended:?}");
        for result in ended.iter().chain(&appended) {
            assert!(
                matches!(result, Ok(()) | Err(Error::TurnNotRunning(_))),
                "{result:?}"
            );
        }
        let events = all_events(store, session_id).await;
        let seqs: Vec<u64> = events.iter().map(|e| e.0).collect();
        assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
        let ok_appends = appended.iter().filter(|r| r.is_ok()).count();
        assert_eq!(events.len(), 2 + ok_appends);
        assert_eq!(events.last().unwrap().1, "turn/end");
        let session = store.session(session_id).await.unwrap();
        assert_eq!(session.last_seq, events.len() as u64);
        assert_eq!(session.active_turn_id, None);
        assert_eq!(session.usage.input_tokens, 1);
    }
}
