//! Two `agentd` processes on one Postgres database (issue 6): live fan-out across replicas,
//! one turn lock, and a dead replica's turn reclaimed after its lease.

use std::time::{Duration, Instant};

use agentd_testkit::{Reply, ScriptedModel, TestDb};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::Server;

async fn replica(db: &TestDb, model: &ScriptedModel) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with(
        dir.path(),
        &model.base_url(),
        1,
        &[
            ("AGENTD_DATABASE_URL", db.url.clone()),
            ("AGENTD_TURN_LEASE_SECS", "2".to_owned()),
        ],
    )
    .await;
    (dir, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_on_one_replica_streams_live_on_another_and_survives_its_death() {
    let db = TestDb::create().await;
    let pieces: Vec<String> = (0..30).map(|i| format!("p{i} ")).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let model = ScriptedModel::start(vec![
        Reply::tool_call("c1", "bash", json!({"command": "echo hi"})),
        Reply::text_chunks(&pieces).with_delay(Duration::from_millis(10)),
    ])
    .await;
    let (_a_dir, mut a) = replica(&db, &model).await;
    let (_b_dir, b) = replica(&db, &model).await;

    // A turn posted on A, followed live on B.
    let session = a.create_session().await;
    let on_b = b.follow(&session);
    tokio::time::sleep(Duration::from_millis(200)).await;
    a.post_turn(&session, "go").await;
    let started = Instant::now();
    loop {
        let events = a.events(&session).await;
        if events.last().is_some_and(|e| e.1 == "turn/end") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the turn did not end"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let replay_a: Vec<(u64, String)> = a
        .events(&session)
        .await
        .into_iter()
        .map(|e| (e.0, e.1))
        .collect();
    // Give B's stream a moment to deliver the last notification, then cut it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    on_b.abort();
    // `follow` collects until the stream breaks; read what B saw through a fresh follower
    // that stops at turn/end instead.
    let live_b = b.follow_until_turn_end(&session, 0).await;
    assert_eq!(live_b, replay_a);

    // While a turn runs on A, B refuses a second one with 409.
    model.push(Reply::tool_call(
        "c2",
        "bash",
        json!({"command": "sleep 30"}),
    ));
    model.push(Reply::text("never"));
    let follower = b.follow_live_until_turn_end(&session, replay_a.len() as u64);
    a.post_turn(&session, "sleep").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = b
        .client
        .post(b.url(&format!("/sessions/{session}/turns")))
        .json(&json!({"content": "me too"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 409);

    // A dies mid-tool; B closes the turn as interrupted once the lease lapses.
    a.child.start_kill().unwrap();
    a.child.wait().await.unwrap();
    let killed = Instant::now();
    let seen_on_b = tokio::time::timeout(Duration::from_secs(20), follower)
        .await
        .expect("B never closed the dead replica's turn")
        .unwrap();
    let closed_after = killed.elapsed();
    assert_eq!(seen_on_b.last().unwrap().1, "turn/end");
    let events = b.events(&session).await;
    assert_eq!(
        events.last().unwrap().2["data"]["kind"],
        json!("interrupted")
    );
    let seqs: Vec<u64> = events.iter().map(|e| e.0).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    println!("dead replica's turn closed {closed_after:?} after the kill (lease 2 s)");

    // And B takes the next turn.
    model.push(Reply::text("fresh"));
    b.post_turn(&session, "after").await;
}
