//! The real binary with its default sandbox (bubblewrap, installed by `.ci/run`): what a
//! model's command can and cannot reach.

use std::time::Duration;

use agentd_testkit::{Reply, ScriptedModel};
use serde_json::{Value, json};

use crate::support::Server;

/// The server's API key in these tests: it must never reach a tool.
pub const CANARY: &str = "sk-canary-0f3e9a7c5d";

async fn run_sandboxed(command: &str) -> (Value, tempfile::TempDir) {
    run_in("bwrap", command).await
}

/// Runs one `bash` call through a server in sandbox `mode` (checked on `/healthz`) and
/// returns its tool result.
pub async fn run_in(mode: &str, command: &str) -> (Value, tempfile::TempDir) {
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
            ("AGENTD_SANDBOX", mode.to_owned()),
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
    assert_eq!(health["sandbox"], json!(mode));
    let session = server.create_session().await;
    server.post_turn(&session, "probe").await;
    for _ in 0..500 {
        let events = server.events(&session).await;
        if let Some(result) = events.iter().find(|e| e.1 == "tool/result") {
            return (result.2["data"].clone(), dir);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no tool result");
}

#[tokio::test]
async fn bash_cannot_see_the_servers_secrets_or_database() {
    let (result, _dir) = run_sandboxed(
        "env; echo ---; tr '\\0' '\\n' < /proc/$PPID/environ; echo ---; \
         tr '\\0' '\\n' < /proc/1/environ; true",
    )
    .await;
    let text = result["text"].as_str().unwrap();
    assert!(text.contains("PATH="), "the command did not run:\n{text}");
    assert!(!text.contains(CANARY), "the canary leaked:\n{text}");

    // The data dir (and so the database) is hidden from tools.
    let probe = "ls -la \"$(dirname \"$(dirname \"$PWD\")\")\"; cat \"$(dirname \"$(dirname \"$PWD\")\")/agentd.db\"; true";
    let (listing, dir) = run_sandboxed(probe).await;
    assert!(dir.path().join("agentd.db").exists());
    let listing = listing["text"].as_str().unwrap();
    // The listing shows only the workspaces; reading the database finds nothing.
    assert!(!listing.contains(" agentd.db\n"), "{listing}");
    assert!(
        listing.contains("agentd.db: No such file or directory"),
        "{listing}"
    );
    assert!(!listing.contains("SQLite format"), "{listing}");
}

#[tokio::test]
async fn bash_cannot_write_outside_its_workspace_or_reach_the_network() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (result, _dir) = run_sandboxed(&format!(
        "touch /etc/agentd-escape && echo WROTE-ETC; touch /root/agentd-escape && echo WROTE-ROOT; \
         (echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo NET-OPEN; \
         touch inside.txt && echo WROTE-INSIDE"
    ))
    .await;
    let text = result["text"].as_str().unwrap();
    assert!(!text.contains("WROTE-ETC"), "{text}");
    assert!(!text.contains("WROTE-ROOT"), "{text}");
    assert!(!text.contains("NET-OPEN"), "{text}");
    assert!(text.contains("WROTE-INSIDE"), "{text}");
    assert!(!std::path::Path::new("/etc/agentd-escape").exists());
    assert!(!std::path::Path::new("/root/agentd-escape").exists());
}
