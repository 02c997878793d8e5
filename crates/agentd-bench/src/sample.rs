//! Readings from `/proc`: a process's CPU time and memory, and a background peak-RSS sampler.
//!
//! Linux only. Owns parsing `/proc/<pid>/stat` and `/proc/<pid>/status`; the workloads decide
//! when to read.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;

/// CPU time a process used, from `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cpu {
    /// `utime + stime`: the process's own threads.
    pub own: Duration,
    /// `cutime + cstime`: its children that it has waited for (the tools' processes).
    pub children: Duration,
}

impl Cpu {
    /// The process's CPU time now.
    pub fn read(pid: u32, ticks_per_sec: u64) -> anyhow::Result<Self> {
        let path = format!("/proc/{pid}/stat");
        let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        // The command name may hold spaces; the fields start after its closing parenthesis.
        let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<u64> = rest
            .split_whitespace()
            .skip(11) // state … cmajflt (fields 3–13)
            .take(4) // utime stime cutime cstime (14–17)
            .map(str::parse)
            .collect::<Result<_, _>>()
            .with_context(|| format!("parsing {path}"))?;
        let [utime, stime, cutime, cstime] = fields[..] else {
            anyhow::bail!("{path} has too few fields");
        };
        let ticks = |n: u64| Duration::from_secs_f64(n as f64 / ticks_per_sec.max(1) as f64);
        Ok(Self {
            own: ticks(utime + stime),
            children: ticks(cutime + cstime),
        })
    }

    /// The time used since `earlier`.
    pub fn since(self, earlier: Self) -> Self {
        Self {
            own: self.own.saturating_sub(earlier.own),
            children: self.children.saturating_sub(earlier.children),
        }
    }
}

/// CPU time the whole machine spent busy so far (every field of `/proc/stat`'s `cpu` line but
/// idle and iowait), to tell how much other work shared the cores during a run.
pub fn machine_busy(ticks_per_sec: u64) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
    let line = stat.lines().next().unwrap_or_default();
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .context("parsing /proc/stat")?;
    // user nice system idle iowait irq softirq steal (guest time is inside user already)
    let busy: u64 = fields
        .iter()
        .take(8)
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, n)| n)
        .sum();
    Ok(Duration::from_secs_f64(
        busy as f64 / ticks_per_sec.max(1) as f64,
    ))
}

/// Clock ticks per second for `/proc` times (`getconf CLK_TCK`; 100 when that fails, which
/// is Linux's `USER_HZ` on every common architecture).
pub fn ticks_per_sec() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(100)
}

/// Context switches of every thread of a process so far (voluntary and not), from
/// `/proc/<pid>/task/*/status`. Threads that already exited are not counted.
pub fn context_switches(pid: u32) -> anyhow::Result<u64> {
    let tasks = format!("/proc/{pid}/task");
    let mut total = 0;
    for task in std::fs::read_dir(&tasks).with_context(|| format!("listing {tasks}"))? {
        let Ok(status) = std::fs::read_to_string(task?.path().join("status")) else {
            continue; // the thread exited meanwhile
        };
        total += status
            .lines()
            .filter_map(|line| {
                let rest = line
                    .strip_prefix("voluntary_ctxt_switches:")
                    .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))?;
                rest.trim().parse::<u64>().ok()
            })
            .sum::<u64>();
    }
    Ok(total)
}

/// Resident memory of a process, from `/proc/<pid>/status`, in KiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    /// `VmRSS`: resident now.
    pub rss_kib: u64,
    /// `VmHWM`: the most it was ever resident.
    pub hwm_kib: u64,
}

impl Memory {
    /// The process's memory now.
    pub fn read(pid: u32) -> anyhow::Result<Self> {
        let path = format!("/proc/{pid}/status");
        let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
                .with_context(|| format!("no {name} in {path}"))
        };
        Ok(Self {
            rss_kib: field("VmRSS:")?,
            hwm_kib: field("VmHWM:")?,
        })
    }
}

/// Samples a process's `VmRSS` every `every` until dropped, keeping the largest.
pub struct PeakRss {
    /// Written by the sampler task, read by [`PeakRss::peak_kib`].
    peak: Arc<AtomicU64>,
    /// The sampler; aborted on drop.
    task: tokio::task::JoinHandle<()>,
}

impl PeakRss {
    /// Starts sampling `pid`.
    pub fn start(pid: u32, every: Duration) -> Self {
        let peak = Arc::new(AtomicU64::new(0));
        let seen = peak.clone();
        let task = tokio::spawn(async move {
            loop {
                if let Ok(memory) = Memory::read(pid) {
                    seen.fetch_max(memory.rss_kib, Ordering::Relaxed);
                }
                tokio::time::sleep(every).await;
            }
        });
        Self { peak, task }
    }

    /// The largest `VmRSS` seen so far, in KiB.
    pub fn peak_kib(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}

impl Drop for PeakRss {
    fn drop(&mut self) {
        self.task.abort();
    }
}
