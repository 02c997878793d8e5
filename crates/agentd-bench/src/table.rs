//! The printed table: one row per figure of issue 7, with its target beside it.

use crate::report::{Row, fmt_mib, fmt_ms, ms};
use crate::{Figures, ROTATE_EVERY};

/// The rows, in issue 7's order.
pub fn rows(f: &Figures) -> Vec<Row> {
    let mut rows = Vec::new();
    let l = f.latency.latency();
    rows.push(Row::new(
        format!("turn latency p50 / p95 / p99, 1 session (new one every {ROTATE_EVERY} turns)"),
        format!(
            "{} / {} / {} ms",
            fmt_ms(l.p50),
            fmt_ms(l.p95),
            fmt_ms(l.p99)
        ),
        "≤ 15 / ≤ 30 ms (p50 / p95)",
    ));
    let r = f.latency.relay();
    rows.push(Row::new(
        "relay p50 / p99, every text chunk (20-chunk burst)",
        format!("{} / {} ms", fmt_ms(r.p50), fmt_ms(r.p99)),
        "≤ 1 / ≤ 5 ms",
    ));
    let r = f.latency.first_relay();
    rows.push(Row::new(
        "relay p50 / p99, first text chunk of each answer",
        format!("{} / {} ms", fmt_ms(r.p50), fmt_ms(r.p99)),
        "—",
    ));
    for run in &f.throughput {
        let target = if run.sessions >= 8 { "≥ 150" } else { "—" };
        rows.push(Row::new(
            format!(
                "throughput, {} concurrent session{}",
                run.sessions,
                if run.sessions == 1 { "" } else { "s" }
            ),
            format!(
                "{:.0} turns/s (p50 {} ms)",
                run.rate(),
                fmt_ms(run.latency().p50)
            ),
            target,
        ));
    }
    let cpu = f.latency.cpu;
    rows.push(Row::new(
        "server context switches per turn, 1 session",
        format!(
            "{:.0}",
            f.latency.switches as f64 / f.latency.completed().max(1) as f64
        ),
        "—",
    ));
    rows.push(Row::new(
        "server CPU per turn, own threads (utime+stime), 1 session",
        format!("{} ms", fmt_ms(f.latency.per_turn(cpu.server.own))),
        "≤ 5 ms",
    ));
    rows.push(Row::new(
        "  + tool processes (cutime+cstime), 1 session",
        format!("{} ms", fmt_ms(f.latency.per_turn(cpu.server.children))),
        "—",
    ));
    if let Some(run) = f.throughput.last() {
        rows.push(Row::new(
            format!(
                "CPU per turn at {} sessions: server own / tools / model / client",
                run.sessions
            ),
            format!(
                "{} / {} / {} / {} ms",
                fmt_ms(run.per_turn(run.cpu.server.own)),
                fmt_ms(run.per_turn(run.cpu.server.children)),
                fmt_ms(run.per_turn(run.cpu.model.own)),
                fmt_ms(run.per_turn(run.cpu.client.own)),
            ),
            "≤ 5 ms (server own)",
        ));
    }
    rows.push(Row::new(
        "memory idle (VmRSS 1 s after start)",
        fmt_mib(f.idle.rss_kib),
        "≤ 20 MiB",
    ));
    rows.push(Row::new(
        "memory peak at 64 sessions (sampled VmRSS; VmHWM)",
        format!("{}; {}", fmt_mib(f.peak_rss_kib), fmt_mib(f.hwm_kib)),
        "≤ 150 MiB",
    ));
    let mut starts: Vec<f64> = f.cold_starts.iter().map(|d| ms(*d)).collect();
    starts.sort_by(f64::total_cmp);
    if let (Some(median), Some(max)) = (starts.get(starts.len() / 2), starts.last()) {
        rows.push(Row::new(
            format!(
                "start to first 200, existing database (median, max of {})",
                starts.len()
            ),
            format!("{} ms, {} ms", fmt_ms(*median), fmt_ms(*max)),
            "≤ 100 ms",
        ));
    }
    rows.push(Row::new(
        "start to first 200, new database",
        format!("{} ms", fmt_ms(ms(f.start_new_db))),
        "—",
    ));
    if let Some((h, _)) = &f.history {
        rows.push(Row::new(
            format!(
                "mean turn latency, session with {} earlier turns vs fresh",
                h.earlier
            ),
            format!(
                "{} vs {} ms = {:.2}×",
                fmt_ms(h.long.latency().mean),
                fmt_ms(h.fresh.latency().mean),
                h.ratio()
            ),
            "≤ 2×",
        ));
    }
    if let Some(load) = &f.load {
        rows.push(Row::new(
            "issue 5: 20 sessions × 300 chunks at once, all done in",
            format!(
                "{} ms ({:.0} chunks/s)",
                fmt_ms(ms(load.run.elapsed)),
                (300 * load.run.sessions) as f64 / load.run.elapsed.as_secs_f64().max(1e-9)
            ),
            "— (printed)",
        ));
        rows.push(Row::new(
            "issue 5: sessions delivered once / stored once",
            format!(
                "{}/{} / {}/{}",
                load.delivered_once(),
                load.run.sessions,
                load.stored_once(),
                load.run.sessions
            ),
            "all",
        ));
    }
    let cores: Vec<String> = std::iter::once(&f.latency)
        .chain(&f.throughput)
        .map(|run| {
            let per_sec = |d: std::time::Duration| d.as_secs_f64() / run.elapsed.as_secs_f64();
            format!(
                "{:.2} ({:.2})",
                per_sec(run.cpu.machine),
                per_sec(run.cpu.others())
            )
        })
        .collect();
    rows.push(Row::new(
        "cores busy, latency / 1 / 8 / 64 sessions: machine (other work)",
        cores.join(", "),
        "of 2 (other work 0)",
    ));
    let runs = std::iter::once(&f.latency)
        .chain(&f.throughput)
        .chain(f.load.as_ref().map(|l| &l.run));
    let (failed, other) = runs.fold((0, 0), |(failed, other), run| {
        (
            failed + run.failures.len(),
            other + run.turns.len() - run.completed(),
        )
    });
    rows.push(Row::new(
        "failed requests / turns not completed / server WARN+ERROR lines",
        format!("{failed} / {other} / {}", f.problems.len()),
        "0 / 0 / 0",
    ));
    rows
}
