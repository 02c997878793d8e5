//! The `agentd` binary: reads configuration, picks the concrete store, provider and tools,
//! and serves the API until SIGTERM or Ctrl-C.

mod config;
mod providers;

use std::ffi::{OsStr, OsString};
use std::io::IsTerminal;
use std::sync::Arc;

use agentd_engine::{Engine, EngineConfig};
use agentd_server::{AppState, Perimeter};
use agentd_store::{EventStore, PgStore, SqliteStore};
use agentd_tools::{BashConfig, SandboxConfig, SandboxMode, Workspaces, confined_toolbox};
use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

use config::ServeArgs;

/// agentd: a self-hosted HTTP server that runs tool-using LLM agents.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the HTTP API.
    Serve(Box<ServeArgs>),
    /// Internal: the Landlock sandbox's helper, which the server re-executes to confine
    /// and then run one tool command (`sandbox-exec --workspace DIR [--network] -- CMD…`).
    #[command(hide = true, disable_help_flag = true)]
    SandboxExec {
        /// Everything after `sandbox-exec`, parsed by `agentd_tools::sandbox_exec_main`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<OsString>,
    },
}

fn main() -> anyhow::Result<()> {
    // Before any thread, runtime or log exists: this process becomes the tool command. Every
    // tool call starts one, so it skips building the whole command-line parser.
    if std::env::args_os().nth(1).as_deref() == Some(OsStr::new(agentd_tools::SANDBOX_EXEC)) {
        agentd_tools::sandbox_exec_main(std::env::args_os());
    }
    let cli = Cli::parse();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(run(cli.command))
}

/// Runs `command` on the async runtime.
async fn run(command: Command) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    match command {
        Command::Serve(args) => serve(*args).await,
        Command::SandboxExec { .. } => bail!("sandbox-exec runs before the runtime starts"),
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    if !args.addr.ip().is_loopback() && args.token().is_none() {
        bail!(
            "refusing to listen on {} without AGENTD_TOKEN: anyone who reaches the port could run \
             commands; set AGENTD_TOKEN or bind a loopback address",
            args.addr
        );
    }
    let url = args.database_url();
    tokio::fs::create_dir_all(&args.data_dir)
        .await
        .with_context(|| format!("creating data dir {}", args.data_dir.display()))?;
    let (store, shared): (Arc<dyn EventStore>, bool) =
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let store = PgStore::open(&url)
                .await
                .context("opening the Postgres database")?;
            (Arc::new(store), true)
        } else if url.starts_with("sqlite:") {
            let store = SqliteStore::open(&url)
                .await
                .with_context(|| format!("opening database {url}"))?;
            (Arc::new(store), false)
        } else {
            bail!("AGENTD_DATABASE_URL must start with sqlite:// or postgres://");
        };
    let built = providers::build(&args)?;
    let data_dir = tokio::fs::canonicalize(&args.data_dir)
        .await
        .with_context(|| format!("resolving {}", args.data_dir.display()))?;
    let mut sandbox = SandboxConfig {
        mode: args.sandbox,
        network: args.sandbox_network,
        ..SandboxConfig::default()
    };
    // Tools must not read the database or anything else the server keeps there.
    sandbox.hide.push(data_dir.clone());
    let confined = confined_toolbox(
        BashConfig {
            timeout: args.tool_timeout(),
            ..BashConfig::default()
        },
        &sandbox,
    )
    .await
    .context("no tool sandbox works on this machine (install bubblewrap, or set AGENTD_SANDBOX=none to run tools unconfined)")?;
    let (tools, sandbox_mode, process_cap) = (confined.toolbox, confined.sandbox, confined.cap);
    if sandbox_mode == SandboxMode::None {
        tracing::warn!(
            "AGENTD_SANDBOX=none: tools run UNCONFINED with this server's rights and can read \
             and write anything it can; use only on a machine you would give the model"
        );
    }
    let engine = Engine::new(
        store,
        Arc::new(built.providers),
        tools,
        Workspaces::new(data_dir.join("workspaces")),
        EngineConfig {
            model: built.model.clone(),
            system_prompt: args.system_prompt.clone(),
            max_steps: args.max_steps,
            turn_lease: std::time::Duration::from_secs(args.turn_lease_secs),
            ..EngineConfig::default()
        },
    );
    // SQLite has one process per file: every running turn is this file's previous process's,
    // so close them now. On Postgres other replicas may be running theirs: turns of dead
    // processes are closed once their lease lapses (Engine::start_background).
    if !shared {
        let recovered = engine
            .recover()
            .await
            .context("closing interrupted turns")?;
        if recovered > 0 {
            tracing::warn!(
                turns = recovered,
                "closed turns left running by the previous process as interrupted"
            );
        }
    }
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("binding {}", args.addr))?;
    tracing::info!(
        addr = %listener.local_addr()?,
        provider = %built.default_name,
        sandbox = sandbox_mode.as_str(),
        process_cap = process_cap.mode().as_str(),
        model = %built.model,
        database = %redact_password(&url),
        "agentd listening"
    );
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    engine.start_background(shutdown.child_token());
    let perimeter = Perimeter::new(
        listener.local_addr()?,
        args.token(),
        &args.allowed_hosts,
        &args.cors_origins,
    )
    .map_err(anyhow::Error::msg)?;
    let mut state = AppState::new(engine.clone(), shutdown.clone());
    state.perimeter = Arc::new(perimeter);
    state.sandbox = Arc::from(sandbox_mode.as_str());
    state.process_cap = Arc::from(process_cap.mode().as_str());
    let drain = async {
        shutdown.cancelled().await;
        tracing::info!("shutting down: no new turns; running turns get the grace period");
        engine.shutdown(args.shutdown_grace()).await;
    };
    let (served, ()) = tokio::join!(agentd_server::serve(listener, state), drain);
    served.context("serving")?;
    tracing::info!("stopped");
    Ok(())
}

/// Cancels `shutdown` on SIGTERM or Ctrl-C (SIGINT).
async fn cancel_on_signal(shutdown: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        () = terminate => {}
    }
    shutdown.cancel();
}

/// The URL with any password replaced by `***`, for logs.
fn redact_password(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}
