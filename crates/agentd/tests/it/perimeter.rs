//! Start-up refusals of the real binary.

use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

#[tokio::test]
async fn listening_beyond_loopback_without_a_token_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_agentd"))
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AGENTD_ADDR", "0.0.0.0:0")
        .env("AGENTD_DATA_DIR", dir.path())
        .env("AGENTD_SANDBOX", "none")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("agentd did not refuse promptly")
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("refusing to listen on 0.0.0.0:0 without AGENTD_TOKEN"),
        "{stderr}"
    );
}
