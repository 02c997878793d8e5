//! The conformance suite on Postgres (`AGENTD_TEST_POSTGRES_URL`, default
//! `postgres://postgres@127.0.0.1:5432/postgres`), each test in a fresh database.

use std::time::Duration;

use agentd_store::{Change, EventStore, PgStore};
use agentd_testkit::TestDb;
use futures_util::StreamExt;

use crate::conformance;

macro_rules! postgres_suite {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() {
            let db = TestDb::create().await;
            let store = PgStore::open(&db.url).await.unwrap();
            conformance::$name(&store).await;
        }
    )*};
}

postgres_suite!(
    session_is_created_listed_and_deleted,
    seq_rises_by_one_per_event_without_gaps,
    only_one_turn_runs_per_session,
    concurrent_begins_start_exactly_one_turn,
    refused_writes_leave_concurrent_ones_whole,
    racing_ends_and_appends_end_the_turn_once_and_last,
    appending_to_a_turn_that_is_not_running_is_refused,
    ending_a_turn_records_kind_usage_and_frees_the_session,
    idempotency_key_returns_the_same_turn,
    load_after_returns_exactly_the_later_events,
    conversation_skips_chunks,
    running_turns_lists_unfinished_turns,
    unknown_ids_are_not_found,
    a_lapsed_lease_marks_the_turn_expired_and_renewal_keeps_it,
);

#[tokio::test]
async fn two_stores_on_one_database_start_one_turn_and_keep_seqs_gapless() {
    let db = TestDb::create().await;
    let a = PgStore::open(&db.url).await.unwrap();
    let b = PgStore::open(&db.url).await.unwrap();
    conformance::two_writers_never_interleave_or_gap(&a, &b).await;
}

#[tokio::test]
async fn appends_are_notified_to_listeners_after_commit() {
    let db = TestDb::create().await;
    let writer = PgStore::open(&db.url).await.unwrap();
    let reader = PgStore::open(&db.url).await.unwrap();
    let mut changes = reader
        .listen()
        .await
        .unwrap()
        .expect("Postgres has a change channel");
    let session_id = conformance::session_with_finished_turn(&writer).await;
    let mut last = 0;
    while last < 5 {
        let change = tokio::time::timeout(Duration::from_secs(5), changes.next())
            .await
            .expect("no notification")
            .unwrap();
        if let Change::Appended {
            session_id: id,
            seq,
        } = change
        {
            assert_eq!(id, session_id);
            assert!(seq > last, "{seq} after {last}");
            // Notified only after commit: the rows are readable.
            let stored = reader.load(session_id, 0, None).await.unwrap().len() as u64;
            assert!(stored >= seq, "{stored} rows visible at seq {seq}");
            last = seq;
        }
    }
}
