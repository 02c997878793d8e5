//! The real binary with `AGENTD_SANDBOX=landlock`: the server re-executes itself as
//! `agentd sandbox-exec` for each `bash` call, and the model's command is confined.

use crate::sandbox::{CANARY, run_in};

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
    let (result, dir) = run_in("landlock", &command).await;
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
