//! The two processes under test: the scripted model and the real `agentd serve`.
//!
//! Owns spawning them with a benchmark configuration, learning their addresses, draining
//! their output, and stopping them (SIGTERM, then a bounded wait). It does not measure
//! anything but the time to start; `/proc` readings live in `sample`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long a process may take to start or to stop before the benchmark gives up on it.
const PATIENCE: Duration = Duration::from_secs(30);

/// A running `scripted-model`.
pub struct Model {
    child: Child,
    /// The base URL agentd is configured with, `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
}

impl Model {
    /// Starts `bin --addr 127.0.0.1:0 --script bench` and reads its address from stdout.
    pub async fn start(bin: &Path) -> anyhow::Result<Self> {
        let mut child = Command::new(bin)
            .args(["--addr", "127.0.0.1:0", "--script", "bench"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let addr = tokio::time::timeout(PATIENCE, lines.next_line())
            .await
            .context("scripted-model did not print its address")??
            .context("scripted-model exited before printing its address")?;
        Ok(Self {
            child,
            base_url: format!("http://{}/v1", addr.trim()),
        })
    }

    /// The process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Stops it with SIGTERM.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        terminate(&mut self.child).await
    }
}

/// How to start agentd.
#[derive(Debug, Clone)]
pub struct AgentdConfig {
    /// The `agentd` binary.
    pub bin: PathBuf,
    /// `AGENTD_DATA_DIR`: the database (unless `database_url`) and the workspaces.
    pub data_dir: PathBuf,
    /// `AGENTD_BASE_URL`: the scripted model.
    pub model_url: String,
    /// `AGENTD_DATABASE_URL`, passed through when set (Postgres runs).
    pub database_url: Option<String>,
}

/// A running `agentd serve`.
pub struct Agentd {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// From spawning the process to its first 200 on `/healthz`.
    pub started_in: Duration,
    /// Log lines at WARN or ERROR, written by the drain task, read after a run.
    problems: Arc<Mutex<Vec<String>>>,
}

impl Agentd {
    /// Spawns agentd with the default configuration but for the address (`127.0.0.1:0`), data
    /// dir, model URL and model name `bench` (`AGENTD_SANDBOX` and `RUST_LOG` pass through
    /// when set), reads its address from the log, and polls `/healthz` until it answers 200.
    pub async fn start(config: &AgentdConfig, http: &reqwest::Client) -> anyhow::Result<Self> {
        let mut command = Command::new(&config.bin);
        command
            .arg("serve")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &config.data_dir)
            .env("AGENTD_ADDR", "127.0.0.1:0")
            .env("AGENTD_DATA_DIR", &config.data_dir)
            .env("AGENTD_BASE_URL", &config.model_url)
            .env("AGENTD_MODEL", "bench")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for name in ["AGENTD_SANDBOX", "RUST_LOG"] {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        if let Some(url) = &config.database_url {
            command.env("AGENTD_DATABASE_URL", url);
        }
        let spawned = Instant::now();
        let mut child = command
            .spawn()
            .with_context(|| format!("starting {}", config.bin.display()))?;
        let stderr = child.stderr.take().context("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let mut early = Vec::new();
        let addr = tokio::time::timeout(PATIENCE, async {
            while let Some(line) = lines.next_line().await? {
                if let Some(rest) = line.split("addr=").nth(1) {
                    let addr = rest.split_whitespace().next().unwrap_or_default();
                    return Ok(addr.to_owned());
                }
                early.push(line);
            }
            Err(anyhow!(
                "agentd exited before listening:\n{}",
                early.join("\n")
            ))
        })
        .await
        .context("agentd did not start listening")??;
        let problems = Arc::new(Mutex::new(Vec::new()));
        let sink = problems.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains(" WARN ") || line.contains(" ERROR ") {
                    sink.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(line);
                }
            }
        });
        let base = format!("http://{addr}");
        let health = format!("{base}/healthz");
        loop {
            match http.get(&health).send().await {
                Ok(response) if response.status() == 200 => break,
                _ if spawned.elapsed() > PATIENCE => bail!("agentd never answered /healthz"),
                _ => tokio::time::sleep(Duration::from_millis(1)).await,
            }
        }
        Ok(Self {
            started_in: spawned.elapsed(),
            child,
            base,
            problems,
        })
    }

    /// The process id.
    pub fn pid(&self) -> anyhow::Result<u32> {
        self.child.id().context("agentd has exited")
    }

    /// The WARN and ERROR lines logged so far.
    pub fn problems(&self) -> Vec<String> {
        self.problems
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Stops it with SIGTERM and waits for it to exit.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        terminate(&mut self.child).await
    }
}

/// SIGTERM, then up to [`PATIENCE`] for the exit, then SIGKILL.
async fn terminate(child: &mut Child) -> anyhow::Result<()> {
    let Some(pid) = child.id() else {
        return Ok(());
    };
    let pid = Pid::from_raw(i32::try_from(pid).context("pid out of range")?);
    kill(pid, Signal::SIGTERM).context("sending SIGTERM")?;
    match tokio::time::timeout(PATIENCE, child.wait()).await {
        Ok(status) => {
            status?;
            Ok(())
        }
        Err(_) => {
            child.kill().await?;
            bail!("process {pid} ignored SIGTERM for {PATIENCE:?}; killed")
        }
    }
}
