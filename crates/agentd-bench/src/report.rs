//! Percentiles, the printed table and the JSON file.
//!
//! Owns presentation only: it never asserts a threshold. A figure that misses its target is
//! printed like any other; the target column is there for the reader.

use std::time::Duration;

use serde_json::{Value, json};

/// Percentiles of a sample, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Summary {
    /// How many values.
    pub count: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Nearest-rank percentiles.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    /// Summarises values given in milliseconds.
    pub fn of_ms(mut values: Vec<f64>) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        values.sort_by(f64::total_cmp);
        let rank = |p: f64| {
            let index = ((p / 100.0) * values.len() as f64).ceil() as usize;
            values[index.clamp(1, values.len()) - 1]
        };
        Self {
            count: values.len(),
            mean: values.iter().sum::<f64>() / values.len() as f64,
            p50: rank(50.0),
            p95: rank(95.0),
            p99: rank(99.0),
            max: values[values.len() - 1],
        }
    }

    /// Summarises durations.
    pub fn of_durations<'a>(values: impl IntoIterator<Item = &'a Duration>) -> Self {
        Self::of_ms(values.into_iter().map(|d| ms(*d)).collect())
    }

    /// Summarises nanosecond counts.
    pub fn of_nanos<'a>(values: impl IntoIterator<Item = &'a i64>) -> Self {
        Self::of_ms(values.into_iter().map(|&n| n as f64 / 1e6).collect())
    }

    /// As JSON, milliseconds rounded to microseconds.
    pub fn json(&self) -> Value {
        json!({
            "count": self.count, "mean_ms": round3(self.mean), "p50_ms": round3(self.p50),
            "p95_ms": round3(self.p95), "p99_ms": round3(self.p99), "max_ms": round3(self.max),
        })
    }
}

/// A duration in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Rounded to three decimals (microseconds when the unit is ms).
pub fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

/// Formats milliseconds for the table: two decimals under 10, one under 100, none above.
pub fn fmt_ms(x: f64) -> String {
    if x < 10.0 {
        format!("{x:.2}")
    } else if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// KiB as MiB with one decimal.
pub fn fmt_mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// One line of the table.
#[derive(Debug, Clone)]
pub struct Row {
    /// What was measured.
    pub figure: String,
    /// The measured value, with its unit.
    pub value: String,
    /// Issue 7's target, or `—`.
    pub target: String,
}

impl Row {
    /// A row from its three cells.
    pub fn new(figure: impl Into<String>, value: impl Into<String>, target: &str) -> Self {
        Self {
            figure: figure.into(),
            value: value.into(),
            target: target.to_owned(),
        }
    }
}

/// The rows as a Markdown table (it reads well in a terminal too).
pub fn table(rows: &[Row]) -> String {
    let width = |cell: fn(&Row) -> &str, title: &str| {
        rows.iter()
            .map(|r| cell(r).chars().count())
            .chain([title.len()])
            .max()
            .unwrap_or(0)
    };
    let (w1, w2, w3) = (
        width(|r| &r.figure, "figure"),
        width(|r| &r.value, "value"),
        width(|r| &r.target, "target (issue 7)"),
    );
    let line = |a: &str, b: &str, c: &str| {
        let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w - s.chars().count()));
        format!("| {} | {} | {} |\n", pad(a, w1), pad(b, w2), pad(c, w3))
    };
    let mut out = line("figure", "value", "target (issue 7)");
    out.push_str(&format!(
        "|{}|{}|{}|\n",
        "-".repeat(w1 + 2),
        "-".repeat(w2 + 2),
        "-".repeat(w3 + 2)
    ));
    for row in rows {
        out.push_str(&line(&row.figure, &row.value, &row.target));
    }
    out
}

/// The rows as JSON objects.
pub fn rows_json(rows: &[Row]) -> Value {
    rows.iter()
        .map(|r| json!({"figure": r.figure, "value": r.value, "target": r.target}))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles_of_one_to_a_hundred() {
        let s = Summary::of_ms((1..=100).map(f64::from).collect());
        assert_eq!(
            (s.count, s.mean, s.p50, s.p95, s.p99, s.max),
            (100, 50.5, 50.0, 95.0, 99.0, 100.0)
        );
        assert_eq!(Summary::of_ms(vec![]), Summary::default());
        assert_eq!(Summary::of_ms(vec![7.0]).p99, 7.0);
    }
}
