//! The real binary with `AGENTD_SANDBOX=landlock`: the server re-executes itself as
//! `agentd sandbox-exec` for each `bash` call, and the model's command is confined.

use std::time::Duration;

use agentd_testkit::{Reply, ScriptedModel};
use serde_json::{Value, json};

use crate::support::Server;

const CANARY: &str = "sk-canary-landlock-4b1d";

#[tokio::test]
async fn bash_runs_confined_by_landlock_when_it_is_asked_for() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "touch /etc/agentd-escape && echo WROTE-ETC; \
         (echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo NET-OPEN; \
         tr '\\0' '\\n' < /proc/$PPID/environ; env; \
         cat ../../agentd.db > /dev/null && echo READ-DB; \
         touch inside.txt && echo WROTE-INSIDE"
    );
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::start(vec![
        Reply::tool_call("c1", "bash", json!({ "command": command })),
        Reply::text("done"),
    ])
    .await;
    let server = Server::start_with(
        dir.path(),
        &model.base_url(),
        1,
        &[
            ("AGENTD_SANDBOX", "landlock".to_owned()),
            ("AGENTD_API_KEY", CANARY.to_owned()),
            ("AGENTD_TEST_CANARY", CANARY.to_owned()),
        ],
    )
    .await;
    let health: Value = server
        .client
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["sandbox"], json!("landlock"));
    let session = server.create_session().await;
    server.post_turn(&session, "probe").await;
    let mut result = None;
    for _ in 0..500 {
        let events = server.events(&session).await;
        if let Some(found) = events.iter().find(|e| e.1 == "tool/result") {
            result = Some(found.2["data"].clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let result = result.expect("no tool result");
    let text = result["text"].as_str().unwrap();
    assert!(text.contains("WROTE-INSIDE"), "{text}");
    assert!(text.contains("PATH="), "{text}");
    assert!(text.contains("environ: Permission denied"), "{text}");
    assert!(
        text.contains("cat: ../../agentd.db: Permission denied"),
        "{text}"
    );
    for leak in ["WROTE-ETC", "NET-OPEN", "READ-DB", CANARY] {
        assert!(!text.contains(leak), "{leak}:\n{text}");
    }
    assert!(!std::path::Path::new("/etc/agentd-escape").exists());
    assert!(dir.path().join("agentd.db").exists());
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "a connection reached the host");
}
