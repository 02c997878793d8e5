//! The workloads of issue 7 (and issue 5's 20 × 300 load), each against a running server.
//!
//! Owns driving turns and what each run collects: the turn records, failures, elapsed time
//! and the CPU every process used meanwhile. It prints nothing and judges nothing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

use crate::client::{Api, StoredCounts, TurnRecord};
use crate::report::{Summary, ms, round3};
use crate::sample::{Cpu, context_switches, machine_busy};

/// The processes a run measures.
#[derive(Clone)]
pub struct Target {
    /// The server's API.
    pub api: Api,
    /// agentd's pid.
    pub server: u32,
    /// The scripted model's pid.
    pub model: Option<u32>,
    /// `/proc` clock ticks per second.
    pub ticks: u64,
}

/// CPU used by each process over a run.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuUse {
    /// agentd (own threads; children = the tools' processes).
    pub server: Cpu,
    /// The scripted model.
    pub model: Cpu,
    /// This load client.
    pub client: Cpu,
    /// The whole machine (all processes, all cores).
    pub machine: Duration,
}

impl CpuUse {
    /// Machine CPU time used by processes other than these three (and agentd's tools).
    pub fn others(&self) -> Duration {
        self.machine
            .saturating_sub(self.server.own + self.server.children)
            .saturating_sub(self.model.own + self.client.own)
    }
}

impl Target {
    fn cpu(&self) -> CpuUse {
        let read = |pid: Option<u32>| pid.and_then(|p| Cpu::read(p, self.ticks).ok());
        CpuUse {
            server: read(Some(self.server)).unwrap_or_default(),
            model: read(self.model).unwrap_or_default(),
            client: read(Some(std::process::id())).unwrap_or_default(),
            machine: machine_busy(self.ticks).unwrap_or_default(),
        }
    }

    fn switches(&self) -> u64 {
        context_switches(self.server).unwrap_or(0)
    }

    fn cpu_since(&self, earlier: CpuUse) -> CpuUse {
        let now = self.cpu();
        CpuUse {
            server: now.server.since(earlier.server),
            model: now.model.since(earlier.model),
            client: now.client.since(earlier.client),
            machine: now.machine.saturating_sub(earlier.machine),
        }
    }
}

/// When each session stops starting turns.
#[derive(Debug, Clone, Copy)]
pub enum Until {
    /// After this long (a turn under way finishes).
    Elapsed(Duration),
    /// After this many turns per session.
    Turns(usize),
}

/// What one run of turns collected.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// Concurrent sessions.
    pub sessions: usize,
    /// Every turn that ended (any kind), in completion order per session.
    pub turns: Vec<TurnRecord>,
    /// Requests or streams that failed, with the reason.
    pub failures: Vec<String>,
    /// From the first POST to the last `turn/end`.
    pub elapsed: Duration,
    /// CPU used meanwhile.
    pub cpu: CpuUse,
    /// The server's context switches meanwhile (all its threads).
    pub switches: u64,
}

impl Run {
    /// Turns that ended `completed`.
    pub fn completed(&self) -> usize {
        self.turns
            .iter()
            .filter(|t| t.end_kind == "completed")
            .count()
    }

    /// Completed turns per second.
    pub fn rate(&self) -> f64 {
        self.completed() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Turn latency.
    pub fn latency(&self) -> Summary {
        Summary::of_durations(self.turns.iter().map(|t| &t.latency))
    }

    /// Relay of every stamped text chunk.
    pub fn relay(&self) -> Summary {
        Summary::of_nanos(self.turns.iter().flat_map(|t| &t.relay_ns))
    }

    /// Relay of the first text chunk of each answer (no earlier chunk of the burst before it).
    pub fn first_relay(&self) -> Summary {
        Summary::of_nanos(self.turns.iter().filter_map(|t| t.relay_ns.first()))
    }

    /// CPU of `cpu` per completed turn, in ms.
    pub fn per_turn(&self, cpu: Duration) -> f64 {
        ms(cpu) / self.completed().max(1) as f64
    }

    /// Everything as JSON.
    pub fn json(&self) -> Value {
        let per_turn = |d: Duration| round3(self.per_turn(d));
        json!({
            "sessions": self.sessions,
            "turns_completed": self.completed(),
            "turns_other": self.turns.len() - self.completed(),
            "failures": self.failures.len(),
            "first_failures": self.failures.iter().take(5).collect::<Vec<_>>(),
            "elapsed_s": round3(self.elapsed.as_secs_f64()),
            "turns_per_s": round3(self.rate()),
            "latency": self.latency().json(),
            "relay_all_text_chunks": self.relay().json(),
            "relay_first_text_chunk": self.first_relay().json(),
            "server_context_switches_per_turn": round3(self.switches as f64 / self.completed().max(1) as f64),
            "cpu_ms_per_turn": {
                "server_own": per_turn(self.cpu.server.own),
                "server_children": per_turn(self.cpu.server.children),
                "model": per_turn(self.cpu.model.own),
                "client": per_turn(self.cpu.client.own),
            },
            "machine_busy_cores": round3(self.cpu.machine.as_secs_f64() / self.elapsed.as_secs_f64().max(1e-9)),
            "other_processes_cores": round3(self.cpu.others().as_secs_f64() / self.elapsed.as_secs_f64().max(1e-9)),
        })
    }
}

/// Creates `count` sessions (with `model`, else the server's default).
pub async fn sessions(api: &Api, count: usize, model: Option<&str>) -> anyhow::Result<Vec<String>> {
    let mut ids = Vec::with_capacity(count);
    for _ in 0..count {
        ids.push(api.create_session(model).await?);
    }
    Ok(ids)
}

/// Runs turns on every session at once, each session one after another, until `until`.
/// With `rotate_every`, a session that has run that many turns is swapped for a new one, so
/// a timed run measures short conversations rather than one that keeps growing.
pub async fn drive(
    target: &Target,
    sessions: &[String],
    until: Until,
    rotate_every: Option<usize>,
) -> anyhow::Result<Run> {
    let cpu = target.cpu();
    let switches = target.switches();
    let started = Instant::now();
    let deadline = match until {
        Until::Elapsed(d) => Some(started + d),
        Until::Turns(_) => None,
    };
    let mut tasks = tokio::task::JoinSet::new();
    for session in sessions {
        let (api, mut session) = (target.api.clone(), session.clone());
        tasks.spawn(async move {
            let mut run = Run::default();
            let (mut done, mut on_session) = (0, 0);
            loop {
                match (until, deadline) {
                    (Until::Turns(n), _) if done >= n => break,
                    (_, Some(at)) if Instant::now() >= at => break,
                    _ => {}
                }
                if rotate_every.is_some_and(|n| on_session >= n) {
                    session = api.create_session(None).await?;
                    on_session = 0;
                }
                match api.turn(&session).await {
                    Ok(record) => run.turns.push(record),
                    Err(error) => {
                        run.failures.push(format!("{error:#}"));
                        // A failing server must not spin the client.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
                done += 1;
                on_session += 1;
            }
            anyhow::Ok(run)
        });
    }
    let mut total = Run {
        sessions: sessions.len(),
        ..Run::default()
    };
    while let Some(run) = tasks.join_next().await {
        let run = run.context("a session task panicked")??;
        total.turns.extend(run.turns);
        total.failures.extend(run.failures);
    }
    total.elapsed = started.elapsed();
    total.cpu = target.cpu_since(cpu);
    total.switches = target.switches().saturating_sub(switches);
    Ok(total)
}

/// The long-history comparison: `measured` turns alternating between a session with a long
/// history and fresh ones (so both see the same machine noise).
pub struct LongHistory {
    /// Turns of the long session before the measured ones.
    pub earlier: usize,
    /// The measured turns on the long session.
    pub long: Run,
    /// The measured turns on the fresh session.
    pub fresh: Run,
}

impl LongHistory {
    /// Mean turn latency, long over fresh.
    pub fn ratio(&self) -> f64 {
        self.long.latency().mean / self.fresh.latency().mean.max(1e-9)
    }
}

/// A session with `earlier` turns behind it, and the run that made them.
pub async fn build_history(target: &Target, earlier: usize) -> anyhow::Result<(String, Run)> {
    let long = sessions(&target.api, 1, None).await?;
    let run = drive(target, &long, Until::Turns(earlier), None).await?;
    let id = long.into_iter().next().context("no session")?;
    Ok((id, run))
}

/// Runs `measured` turns on `long` (which has `earlier` turns) and on fresh sessions, turn
/// about. The fresh side moves to a new session every `rotate_every` turns, as the timed
/// runs do, so it stays a short conversation.
pub async fn compare_history(
    target: &Target,
    long: &str,
    earlier: usize,
    measured: usize,
    rotate_every: usize,
) -> anyhow::Result<LongHistory> {
    let mut runs = (Run::default(), Run::default());
    let mut fresh = String::new();
    for i in 0..measured {
        if i % rotate_every.max(1) == 0 {
            fresh = target.api.create_session(None).await?;
        }
        runs.0.turns.push(target.api.turn(long).await?);
        runs.1.turns.push(target.api.turn(&fresh).await?);
    }
    Ok(LongHistory {
        earlier,
        long: runs.0,
        fresh: runs.1,
    })
}

/// Issue 5's load: `sessions` sessions on the `stream300` script, one turn each, all at once.
pub struct Load {
    /// The turns as streamed.
    pub run: Run,
    /// Per session: the stored counts (`?follow=false` replay).
    pub stored: Vec<StoredCounts>,
}

impl Load {
    /// Sessions whose stream delivered each of the 300 text chunks and the finish exactly
    /// once, in seq order, and ended `completed`.
    pub fn delivered_once(&self) -> usize {
        self.run
            .turns
            .iter()
            .filter(|t| t.text_chunks == 300 && t.finish_chunks == 1 && t.end_kind == "completed")
            .count()
    }

    /// Sessions whose store holds 300 text chunks and one finish, seqs 1…n without gaps, and
    /// as many events as the stream delivered.
    pub fn stored_once(&self) -> usize {
        self.stored
            .iter()
            .zip(&self.run.turns)
            .filter(|(s, t)| s.text_chunks == 300 && s.finish_chunks == 1 && s.events == t.events)
            .count()
    }

    /// As JSON.
    pub fn json(&self) -> Value {
        json!({
            "run": self.run.json(),
            "delivered_once": self.delivered_once(),
            "stored_once": self.stored_once(),
            "stored": self.stored.iter().map(|s| json!({
                "events": s.events, "text_chunks": s.text_chunks, "finish_chunks": s.finish_chunks,
            })).collect::<Vec<_>>(),
        })
    }
}

/// Runs issue 5's load and then reads every session's stored events back.
pub async fn load(target: &Target, count: usize) -> anyhow::Result<Load> {
    let ids = sessions(&target.api, count, Some("stream300")).await?;
    let barrier = Arc::new(tokio::sync::Barrier::new(count + 1));
    let cpu = target.cpu();
    let switches = target.switches();
    let mut tasks = Vec::with_capacity(count);
    for id in &ids {
        let (api, id, barrier) = (target.api.clone(), id.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            api.turn(&id).await
        }));
    }
    barrier.wait().await;
    let started = Instant::now();
    let mut run = Run {
        sessions: count,
        ..Run::default()
    };
    for task in tasks {
        match task.await.context("a session task panicked")? {
            Ok(record) => run.turns.push(record),
            Err(error) => {
                run.failures.push(format!("{error:#}"));
                run.turns.push(TurnRecord::default());
            }
        }
    }
    run.elapsed = started.elapsed();
    run.cpu = target.cpu_since(cpu);
    run.switches = target.switches().saturating_sub(switches);
    let mut stored = Vec::with_capacity(count);
    for id in &ids {
        stored.push(target.api.stored_counts(id).await?);
    }
    Ok(Load { run, stored })
}
