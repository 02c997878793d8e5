//! `agentd-bench`: issue 7's benchmark. Starts the scripted model and the real `agentd`
//! binary as processes of their own, runs the workloads (turn latency, relay, throughput at 1,
//! 8 and 64 sessions, CPU and memory from `/proc`, cold start, long history, issue 5's
//! 20 × 300 load), prints one table and writes the figures as JSON. It asserts nothing.
//!
//! ```sh
//! cargo build --release -p agentd -p agentd-testkit -p agentd-bench && target/release/agentd-bench
//! ```

mod client;
mod procs;
mod report;
mod sample;
mod table;
mod workloads;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use serde_json::{Value, json};

use client::{Api, http_client};
use procs::{Agentd, AgentdConfig, Model};
use report::round3;
use sample::{Memory, PeakRss};
use workloads::{Target, Until};

/// Turns per session in the timed runs before the client moves on to a new session, so that
/// latency and throughput describe short conversations (long ones are measured apart).
const ROTATE_EVERY: usize = 20;

/// Benchmarks agentd against an instant scripted model (issue 7). Prints figures only.
#[derive(Debug, Parser)]
#[command(about)]
struct Cli {
    /// Seconds per timed workload (latency, and each throughput level).
    #[arg(long, default_value_t = 10)]
    duration_secs: u64,
    /// A smoke run of a few seconds (for CI): short workloads, 50 earlier turns, 2 cold starts.
    #[arg(long)]
    quick: bool,
    /// Passed to agentd as `AGENTD_DATABASE_URL` (default: a SQLite file in a temp dir).
    #[arg(long)]
    database_url: Option<String>,
    /// Where to write the figures as JSON.
    #[arg(long, default_value = "bench-results.json")]
    output: PathBuf,
    /// The `agentd` binary (default: next to this one).
    #[arg(long)]
    agentd_bin: Option<PathBuf>,
    /// The `scripted-model` binary (default: next to this one).
    #[arg(long)]
    model_bin: Option<PathBuf>,
    /// Earlier turns of the long-history session.
    #[arg(long, default_value_t = 1000)]
    history_turns: usize,
    /// Restarts over the existing database for the cold-start figure.
    #[arg(long, default_value_t = 5)]
    cold_starts: usize,
}

/// The knobs after `--quick` is applied.
struct Plan {
    duration: Duration,
    history_turns: usize,
    measured_turns: usize,
    cold_starts: usize,
    warmup_turns: usize,
}

impl Cli {
    fn plan(&self) -> Plan {
        if self.quick {
            Plan {
                duration: Duration::from_millis(700),
                history_turns: 50,
                measured_turns: 10,
                cold_starts: 2,
                warmup_turns: 5,
            }
        } else {
            Plan {
                duration: Duration::from_secs(self.duration_secs.max(1)),
                history_turns: self.history_turns,
                measured_turns: 100,
                cold_starts: self.cold_starts.max(1),
                warmup_turns: 50,
            }
        }
    }

    /// `--<flag>` if given, else `name` beside this executable.
    fn binary(flag: &Option<PathBuf>, name: &str) -> anyhow::Result<PathBuf> {
        if let Some(path) = flag {
            return Ok(path.clone());
        }
        let exe = std::env::current_exe().context("locating this executable")?;
        let path = exe.with_file_name(name);
        if !path.exists() {
            bail!(
                "{} not found; build it (cargo build --release -p agentd -p agentd-testkit) or \
                 pass its path",
                path.display()
            );
        }
        Ok(path)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let plan = cli.plan();
    let data = tempfile::tempdir().context("creating a temp data dir")?;
    let http = http_client()?;
    let model = Model::start(&Cli::binary(&cli.model_bin, "scripted-model")?).await?;
    let config = AgentdConfig {
        bin: Cli::binary(&cli.agentd_bin, "agentd")?,
        data_dir: data.path().to_path_buf(),
        model_url: model.base_url.clone(),
        database_url: cli.database_url.clone(),
    };
    let figures = measure(&plan, &config, &model, &http).await?;
    model.stop().await?;

    let rows = table::rows(&figures);
    println!("\n{}", report::table(&rows));
    let json = json!({
        "machine": machine(),
        "config": {
            "quick": cli.quick,
            "duration_s": plan.duration.as_secs_f64(),
            "database": cli.database_url.as_deref().unwrap_or("sqlite file (default)"),
            "history_turns": plan.history_turns,
            "turns_per_session_in_timed_runs": ROTATE_EVERY,
            "agentd": config.bin,
            "healthz": figures.health,
        },
        "table": report::rows_json(&rows),
        "details": figures.json(),
    });
    std::fs::write(&cli.output, serde_json::to_string_pretty(&json)?)
        .with_context(|| format!("writing {}", cli.output.display()))?;
    eprintln!("wrote {}", cli.output.display());
    Ok(())
}

/// Runs every workload, in order, against one server over a fresh data dir, then restarts it
/// over the same database for the cold-start figure.
async fn measure(
    plan: &Plan,
    config: &AgentdConfig,
    model: &Model,
    http: &reqwest::Client,
) -> anyhow::Result<Figures> {
    let mut figures = Figures::default();
    let server = Agentd::start(config, http).await?;
    figures.start_new_db = server.started_in;
    tokio::time::sleep(Duration::from_secs(1)).await;
    figures.idle = Memory::read(server.pid()?)?;
    let target = Target {
        api: Api::new(http.clone(), &server.base),
        server: server.pid()?,
        model: model.pid(),
        ticks: sample::ticks_per_sec(),
    };
    figures.health = target.api.health().await?;

    step("latency and relay: 1 session, sequential turns");
    let rotate = Some(ROTATE_EVERY);
    let warm = workloads::sessions(&target.api, 1, None).await?;
    workloads::drive(&target, &warm, Until::Turns(plan.warmup_turns), rotate).await?;
    let one = workloads::sessions(&target.api, 1, None).await?;
    figures.latency =
        workloads::drive(&target, &one, Until::Elapsed(plan.duration), rotate).await?;

    for sessions in [1, 8, 64] {
        step(&format!("throughput: {sessions} concurrent session(s)"));
        let ids = workloads::sessions(&target.api, sessions, None).await?;
        let peak = PeakRss::start(target.server, Duration::from_millis(20));
        let run = workloads::drive(&target, &ids, Until::Elapsed(plan.duration), rotate).await?;
        figures.peak_rss_kib = figures.peak_rss_kib.max(peak.peak_kib());
        figures.throughput.push(run);
    }
    figures.hwm_kib = Memory::read(target.server)?.hwm_kib;

    step("issue 5: 20 sessions × 300 chunks at once");
    figures.load = Some(workloads::load(&target, 20).await?);

    step(&format!(
        "long history: {} turns on one session",
        plan.history_turns
    ));
    let (long, build) = workloads::build_history(&target, plan.history_turns).await?;
    step(&format!(
        "long history: {} turns each on it and on fresh sessions, turn about",
        plan.measured_turns
    ));
    let compared = workloads::compare_history(
        &target,
        &long,
        plan.history_turns,
        plan.measured_turns,
        ROTATE_EVERY,
    )
    .await?;
    figures.history = Some((compared, build));
    figures.problems = server.problems();
    server.stop().await?;

    step("cold start over the existing database");
    for _ in 0..plan.cold_starts {
        let server = Agentd::start(config, http).await?;
        figures.cold_starts.push(server.started_in);
        server.stop().await?;
    }
    Ok(figures)
}

/// Everything measured, as the table and the JSON file need it.
#[derive(Default)]
struct Figures {
    health: Value,
    start_new_db: Duration,
    idle: Memory,
    latency: workloads::Run,
    throughput: Vec<workloads::Run>,
    peak_rss_kib: u64,
    hwm_kib: u64,
    load: Option<workloads::Load>,
    /// The comparison, and the run that built the long history.
    history: Option<(workloads::LongHistory, workloads::Run)>,
    cold_starts: Vec<Duration>,
    /// agentd's WARN/ERROR log lines during the runs.
    problems: Vec<String>,
}

impl Figures {
    fn json(&self) -> Value {
        json!({
            "latency_run": self.latency.json(),
            "throughput_runs": self.throughput.iter().map(workloads::Run::json).collect::<Vec<_>>(),
            "memory_kib": {
                "idle_rss": self.idle.rss_kib, "peak_rss_sampled": self.peak_rss_kib,
                "hwm_after_throughput": self.hwm_kib,
            },
            "issue5_load": self.load.as_ref().map(workloads::Load::json),
            "long_history": self.history.as_ref().map(|(h, build)| json!({
                "earlier_turns": h.earlier, "ratio": round3(h.ratio()),
                "build": build.json(), "long": h.long.json(), "fresh": h.fresh.json(),
            })),
            "start_ms": {
                "new_database": round3(report::ms(self.start_new_db)),
                "existing_database": self.cold_starts.iter().map(|d| round3(report::ms(*d))).collect::<Vec<_>>(),
            },
            "server_warnings": self.problems.iter().take(20).collect::<Vec<_>>(),
            "server_warning_count": self.problems.len(),
        })
    }
}

/// Cores, CPU model and load average, for the record.
fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_owned());
    json!({
        "cores": std::thread::available_parallelism().map_or(0, usize::from),
        "cpu": cpu,
        "loadavg": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    })
}

fn step(what: &str) {
    eprintln!("== {what}");
}
