//! SIGTERM: stop taking turns, give running ones the grace period, close the rest as
//! `interrupted`, exit 0.

use std::time::{Duration, Instant};

use agentd_testkit::{Reply, ScriptedModel};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::Server;

#[tokio::test]
async fn sigterm_closes_a_running_turn_as_interrupted_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::start(vec![
        Reply::tool_call("c1", "bash", json!({"command": "sleep 30"})),
        Reply::text("unused"),
    ])
    .await;
    let mut server = Server::start(dir.path(), &model.base_url(), 1).await;
    let session = server.create_session().await;
    server.post_turn(&session, "sleep").await;
    for _ in 0..200 {
        if server
            .events(&session)
            .await
            .iter()
            .any(|e| e.1 == "tool/start")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = Pid::from_raw(server.child.id().unwrap() as i32);
    let sent = Instant::now();
    kill(pid, Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(15), server.child.wait())
        .await
        .expect("agentd did not exit after SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
    // One second of grace, then the tool is killed and the turn closed.
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "{:?}",
        sent.elapsed()
    );

    let server = Server::start(dir.path(), &model.base_url(), 1).await;
    let events = server.events(&session).await;
    let types: Vec<&str> = events.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(
        types,
        vec![
            "user/message",
            "assistant/chunk",
            "assistant/chunk",
            "assistant/message",
            "tool/start",
            "tool/result",
            "turn/end"
        ]
    );
    assert_eq!(events[5].2["data"]["is_error"], json!(true));
    assert_eq!(events[6].2["data"]["kind"], json!("interrupted"));
}
