//! What the benches share: where the runtimes are cached, the round count, medians.

#![allow(dead_code)] // each bench uses its own part

pub mod mcp;
/// The tests' own set-up: the benches use their cache.
#[path = "../../../tests/all/common.rs"]
mod tests_common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use runbox::manifest::Manifest;
use runbox::plugin::artifact::{Cache, Progress};
use runbox::service::{LimitOverrides, RunOutcome, RunRequest, RunStatus, Runbox, RunboxOptions};
use tokio_util::sync::CancellationToken;

#[allow(unused_imports)] // each bench uses its own part
pub use tests_common::{cache_dir, output_with_stdin};

/// `manifest`'s runtimes (`options.only` of them) loaded from the shared cache, produced
/// programs compiled by this build's `runbox`. Blocking: it may compile.
pub fn load_with(manifest: Manifest, options: RunboxOptions) -> Arc<Runbox> {
    let options = RunboxOptions {
        compiler_exe: options
            .compiler_exe
            .or_else(|| Some(env!("CARGO_BIN_EXE_runbox").into())),
        ..options
    };
    Arc::new(
        Runbox::load(
            &manifest,
            &Cache::at(cache_dir()),
            options,
            &Progress::stderr(),
        )
        .expect("load the runtimes"),
    )
}

/// Runs `code` in-process with a 60 s limit, checks it printed `expected`, and says how
/// long the call took.
pub async fn run_expecting(runbox: &Runbox, runtime: &str, code: &str, expected: &str) -> Duration {
    let started = Instant::now();
    let outcome = run(runbox, runtime, code).await;
    let took = started.elapsed();
    assert_eq!(outcome.stdout(), expected, "{runtime}: {outcome:?}");
    took
}

/// What one operation in a loop costs a program: (median run of `with`, which makes it
/// `calls` times − median run of `without`, the same loop without it) / `calls`, the runs
/// taken in turn so that they share the machine's state. Both print `done`.
pub async fn per_call(
    runbox: &Runbox,
    runtime: &str,
    (with, without): (&str, &str),
    calls: usize,
    rounds: usize,
) -> f64 {
    let done = |code| run_expecting(runbox, runtime, code, "done\n");
    done(with).await;
    done(without).await;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        a.push(done(with).await);
        b.push(done(without).await);
    }
    (ms(median(&mut a)) - ms(median(&mut b))) / calls as f64
}

/// `manifest`'s built-in runtimes `only`, with `options`, loaded off the async workers.
pub fn load_builtin(only: &[&str], options: RunboxOptions) -> Arc<Runbox> {
    let options = RunboxOptions {
        only: only.iter().map(|s| s.to_string()).collect(),
        ..options
    };
    // Loading blocks (it may compile): off the async workers.
    tokio::task::block_in_place(|| {
        load_with(Manifest::builtin().expect("built-in plugins.toml"), options)
    })
}

/// Runs `code` in `runtime` (60 s allowed) and returns what it produced; it must complete.
pub async fn run(runbox: &Runbox, runtime: &str, code: &str) -> RunOutcome {
    let outcome = runbox
        .run(
            RunRequest {
                runtime: runtime.into(),
                code: code.into(),
                limits: LimitOverrides {
                    timeout: Some(Duration::from_secs(60)),
                    memory_bytes: None,
                    max_timeout: None,
                },
                ..RunRequest::default()
            },
            CancellationToken::new(),
        )
        .await
        .expect("run");
    assert_eq!(
        outcome.status,
        RunStatus::Completed,
        "{runtime}: {outcome:?}"
    );
    outcome
}

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
