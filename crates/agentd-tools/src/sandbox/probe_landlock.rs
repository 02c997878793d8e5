//! The startup probe of the Landlock sandbox: finds the helper and proves, by running a
//! command through it, that writing outside the workspace is refused.

use std::path::PathBuf;
use std::sync::Arc;

use super::{ActiveSandbox, Landlock, SandboxConfig, SandboxMode, run_probe};

/// Writes inside the workspace (and reads it back) and tries to write beside it, which
/// must fail. `access(2)` (`test -w`) is no proof: Landlock does not answer it.
const LANDLOCK_PROBE_SCRIPT: &str = "echo agentd-sandbox-ok > probe.txt && cat probe.txt \
     && ! (echo escaped > ../outside.txt) 2>/dev/null";

/// Finds the helper (the configured one, else this executable), builds the sandbox for
/// `config` and runs [`LANDLOCK_PROBE_SCRIPT`] through it in a scratch workspace; the
/// error is why it does not work (say, the kernel has no Landlock).
pub(super) async fn probe(config: &SandboxConfig) -> Result<ActiveSandbox, String> {
    let helper = match &config.landlock_helper {
        Some(helper) => helper.clone(),
        None => std::env::current_exe()
            .map_err(|err| format!("cannot find this executable to re-run it: {err}"))?,
    };
    let sandbox = Landlock::new(helper, config.network, config.hide.clone());
    let scratch = std::env::temp_dir().join(format!("agentd-probe-{}", uuid::Uuid::new_v4()));
    let workspace = scratch.join("workspace");
    tokio::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(&workspace)
        .await
        .map_err(|err| format!("creating {}: {err}", workspace.display()))?;
    let result = run_probe(
        &sandbox,
        "the Landlock helper",
        LANDLOCK_PROBE_SCRIPT,
        workspace,
    )
    .await
    .and_then(|()| escaped(scratch.join("outside.txt")));
    if let Err(err) = tokio::fs::remove_dir_all(&scratch).await {
        tracing::warn!(dir = %scratch.display(), %err, "could not remove the sandbox probe's directory");
    }
    result?;
    tracing::warn!(
        helper = %sandbox.helper().display(),
        network = config.network,
        "bash runs in the Landlock + seccomp sandbox: files outside the workspace are \
         read-only, but there is no PID namespace, so a `setsid` child can outlive its call"
    );
    Ok(ActiveSandbox {
        mode: SandboxMode::Landlock,
        sandbox: Arc::new(sandbox),
    })
}

/// An error if the probe's write outside the workspace went through after all.
fn escaped(outside: PathBuf) -> Result<(), String> {
    if outside.exists() {
        Err(format!(
            "a write outside the workspace ({}) was not refused",
            outside.display()
        ))
    } else {
        Ok(())
    }
}
