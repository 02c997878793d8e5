//! The conformance suite on a fresh SQLite file per test.

use agentd_store::SqliteStore;
use tempfile::TempDir;

use crate::conformance;

async fn store() -> (TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("agentd.db").display());
    (dir, SqliteStore::open(&url).await.unwrap())
}

macro_rules! sqlite_suite {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() {
            let (_dir, store) = store().await;
            conformance::$name(&store).await;
        }
    )*};
}

sqlite_suite!(
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
async fn events_survive_reopening_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("agentd.db").display());
    let (session_id, before) = {
        let store = SqliteStore::open(&url).await.unwrap();
        let session_id = conformance::session_with_finished_turn(&store).await;
        (
            session_id,
            conformance::all_events(&store, session_id).await,
        )
    };
    let store = SqliteStore::open(&url).await.unwrap();
    assert_eq!(conformance::all_events(&store, session_id).await, before);
}

#[tokio::test]
async fn two_handles_on_one_file_never_interleave_or_gap() {
    let (dir, a) = store().await;
    let url = format!("sqlite://{}", dir.path().join("agentd.db").display());
    let b = SqliteStore::open(&url).await.unwrap();
    conformance::two_writers_never_interleave_or_gap(&a, &b).await;
}

/// The writer never checkpoints (so no commit waits for one); a thread of the store does:
/// committed events reach the database file itself within seconds.
#[tokio::test]
async fn the_wal_is_checkpointed_into_the_database_file() {
    use agentd_events::{Chunk, EventData};
    use agentd_store::EventStore;

    let (dir, store) = store().await;
    let file = dir.path().join("agentd.db");
    let before = std::fs::metadata(&file).unwrap().len();
    let session_id = conformance::new_session(&store).await;
    let turn_id = uuid::Uuid::new_v4();
    store
        .begin_turn(session_id, turn_id, "go", None, conformance::LEASE)
        .await
        .unwrap();
    let chunk = EventData::AssistantChunk(Chunk::Text {
        content: "x".repeat(1000),
    });
    for _ in 0..50 {
        store
            .append(session_id, turn_id, &vec![chunk.clone(); 20])
            .await
            .unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let now = std::fs::metadata(&file).unwrap().len();
        if now > before + 500_000 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the database file stayed at {now} bytes (from {before})"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
