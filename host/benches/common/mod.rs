//! What the benches share: where the runtimes are cached, the round count, medians.

#![allow(dead_code)] // each bench uses its own part

pub mod mcp;
/// The tests' own set-up: the benches use their cache.
#[path = "../../../tests/all/common.rs"]
mod tests_common;

use std::time::Duration;

#[allow(unused_imports)] // each bench uses its own part
pub use tests_common::{cache_dir, output_with_stdin};

/// The number among the arguments (`cargo bench --bench NAME -- 20`), else `default`;
/// cargo itself passes `--bench`.
pub fn rounds(default: usize) -> usize {
    std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(default)
}

/// The median of `times` (sorted in place).
pub fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    let n = times.len();
    if n % 2 == 1 {
        times[n / 2]
    } else {
        (times[n / 2 - 1] + times[n / 2]) / 2
    }
}

/// The `p` quantile of `times` (sorted in place), nearest rank.
pub fn percentile(times: &mut [Duration], p: f64) -> Duration {
    times.sort();
    times[((times.len() as f64 - 1.0) * p).round() as usize]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The median and 95th percentile of some times, in ms.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    pub median: f64,
    pub p95: f64,
}

pub fn stats(times: &mut [Duration]) -> Stats {
    Stats {
        median: ms(median(times)),
        p95: ms(percentile(times, 0.95)),
    }
}
