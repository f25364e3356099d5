//! What `/metrics` reports of the runs (docs/scale-out.md, "Metrics"), and the
//! Prometheus text format it is written in.
//!
//! Runs are counted by runtime and status, and their wall time goes into a histogram per
//! runtime; the gauges (queue, sessions, tasks, memory) are read when `/metrics` is
//! asked for, by whoever owns them.
//!
//! The format is written here rather than by the `prometheus-client` crate, kept so on
//! purpose. Measured with prometheus-client 0.24.1 on this module's metrics,
//! its text encoder (OpenMetrics) writes `le` first (`{le="+Inf",runtime="python"}`,
//! which tests/mcp_client/ops.py reads as `{runtime="python",le="+Inf"}`), bounds as
//! `le="10.0"` and `le="60.0"` (the test below reads `"10"` and `"60"`), a counter's
//! `# TYPE` under its name without `_total` (`# TYPE runbox_runs counter`), float gauges
//! as `1.0`, and label values unescaped: `a"b\c` and a newline came out as
//! `m_total{l="a"b\c`, a line break and `d"} 1`, where tool names from upstream servers
//! are label values. The page here is the 0.0.4 text format, with escaping, in ~100 lines.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// The histogram's upper bounds, in seconds: a quick hello to a ten-minute task.
pub const RUN_SECONDS_BUCKETS: [f64; 13] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0, 600.0,
];

#[derive(Default, Clone)]
struct Histogram {
    /// Runs at or under each bound of [`RUN_SECONDS_BUCKETS`] (not cumulative here).
    buckets: [u64; RUN_SECONDS_BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Default)]
struct Counts {
    /// Runs finished, by (runtime, status).
    runs: BTreeMap<(String, &'static str), u64>,
    /// Wall time of runs, by runtime.
    seconds: BTreeMap<String, Histogram>,
}

/// The runs this server has finished.
#[derive(Default)]
pub struct RunMetrics(Mutex<Counts>);

impl RunMetrics {
    /// Counts a run of `runtime` that ended `status` after `wall`.
    pub fn record(&self, runtime: &str, status: &'static str, wall: Duration) {
        let mut counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *counts
            .runs
            .entry((runtime.to_string(), status))
            .or_default() += 1;
        let histogram = counts.seconds.entry(runtime.to_string()).or_default();
        let secs = wall.as_secs_f64();
        if let Some(i) = RUN_SECONDS_BUCKETS.iter().position(|&le| secs <= le) {
            histogram.buckets[i] += 1;
        }
        histogram.count += 1;
        histogram.sum += secs;
    }

    /// Writes `runbox_runs_total` and `runbox_run_duration_seconds`.
    pub fn write(&self, out: &mut Exposition) {
        let counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        out.family(
            "runbox_runs_total",
            "counter",
            "Runs finished, by runtime and status.",
        );
        for ((runtime, status), n) in &counts.runs {
            out.sample(
                "runbox_runs_total",
                &[("runtime", runtime), ("status", status)],
                *n as f64,
            );
        }
        out.family(
            "runbox_run_duration_seconds",
            "histogram",
            "Wall time of finished runs, by runtime.",
        );
        for (runtime, histogram) in &counts.seconds {
            let mut cumulative = 0;
            for (le, n) in RUN_SECONDS_BUCKETS.iter().zip(histogram.buckets) {
                cumulative += n;
                out.sample(
                    "runbox_run_duration_seconds_bucket",
                    &[("runtime", runtime), ("le", &le.to_string())],
                    cumulative as f64,
                );
            }
            out.sample(
                "runbox_run_duration_seconds_bucket",
                &[("runtime", runtime), ("le", "+Inf")],
                histogram.count as f64,
            );
            let runtime = [("runtime", runtime.as_str())];
            out.sample("runbox_run_duration_seconds_sum", &runtime, histogram.sum);
            out.sample(
                "runbox_run_duration_seconds_count",
                &runtime,
                histogram.count as f64,
            );
        }
    }
}

/// A page in Prometheus' text exposition format (version 0.0.4).
#[derive(Default)]
pub struct Exposition(String);

impl Exposition {
    /// The content type of the page.
    pub const CONTENT_TYPE: &'static str = "text/plain; version=0.0.4; charset=utf-8";

    /// Starts a metric family: its `# HELP` and `# TYPE` lines.
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    /// One sample line.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.0.push_str(name);
        if !labels.is_empty() {
            self.0.push('{');
            for (i, (label, value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.0.push(',');
                }
                let _ = write!(self.0, "{label}=\"{}\"", escape_label(value));
            }
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {value}");
    }

    /// A gauge of one sample without labels.
    pub fn gauge(&mut self, name: &str, help: &str, value: f64) {
        self.family(name, "gauge", help);
        self.sample(name, &[], value);
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// A label value with `\`, `"` and newlines escaped, as the format asks.
fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_counted_and_their_times_bucketed_cumulatively() {
        let metrics = RunMetrics::default();
        metrics.record("python", "completed", Duration::from_millis(30));
        metrics.record("python", "completed", Duration::from_millis(300));
        metrics.record("python", "timeout", Duration::from_secs(11));
        let mut page = Exposition::default();
        metrics.write(&mut page);
        let page = page.into_string();
        for line in [
            "# TYPE runbox_runs_total counter",
            "runbox_runs_total{runtime=\"python\",status=\"completed\"} 2",
            "runbox_runs_total{runtime=\"python\",status=\"timeout\"} 1",
            "# TYPE runbox_run_duration_seconds histogram",
            "runbox_run_duration_seconds_bucket{runtime=\"python\",le=\"0.025\"} 0",
            "runbox_run_duration_seconds_bucket{runtime=\"python\",le=\"0.05\"} 1",
            "runbox_run_duration_seconds_bucket{runtime=\"python\",le=\"0.5\"} 2",
            "runbox_run_duration_seconds_bucket{runtime=\"python\",le=\"10\"} 2",
            "runbox_run_duration_seconds_bucket{runtime=\"python\",le=\"60\"} 3",
            "runbox_run_duration_seconds_bucket{runtime=\"python\",le=\"+Inf\"} 3",
            "runbox_run_duration_seconds_count{runtime=\"python\"} 3",
        ] {
            assert!(page.lines().any(|l| l == line), "{line} missing in\n{page}");
        }
        let sum = page
            .lines()
            .find_map(|l| l.strip_prefix("runbox_run_duration_seconds_sum{runtime=\"python\"} "))
            .unwrap();
        assert!((sum.parse::<f64>().unwrap() - 11.33).abs() < 1e-9, "{sum}");
    }

    #[test]
    fn label_values_are_escaped() {
        let mut page = Exposition::default();
        page.sample("m", &[("l", "a\"b\\c\nd")], 1.0);
        assert_eq!(page.into_string(), "m{l=\"a\\\"b\\\\c\\nd\"} 1\n");
    }
}
