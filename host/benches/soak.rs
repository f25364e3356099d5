//! Soak: mixed programs, 8 at a time, for a bounded time; then checks that resident
//! memory, open file descriptors and scratch directories return to their baseline.
//!
//! `cargo bench --bench soak` (3 minutes) or `RUNBOX_SOAK_SECS=60 cargo bench --bench soak`.
//! Exits non-zero when something did not come back.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use runbox::manifest::Manifest;
use runbox::plugin::artifact::{Cache, Progress};
use runbox::service::RunStatus;
use runbox::service::{LimitOverrides, RunRequest, Runbox, RunboxOptions};
use tokio_util::sync::CancellationToken;

/// (runtime, program, timeout seconds): quick ones, limit breakers and crashes.
const MIX: &[(&str, &str, f64)] = &[
    ("python", "print(sum(range(10)))", 5.0),
    (
        "python",
        "x = []\nwhile True:\n    x.append(bytearray(10**6))",
        10.0,
    ),
    (
        "python",
        "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)",
        5.0,
    ),
    (
        "python",
        "open('f.txt', 'w').write('x' * 100000)\nprint(len(open('f.txt').read()))",
        5.0,
    ),
    ("quickjs", "console.log(45)", 5.0),
    ("quickjs", "while (true) {}", 0.5),
    ("quickjs", "function f() { return f() + 1; } f();", 5.0),
    ("ruby", "puts (0...10).sum", 5.0),
    ("ruby", "loop { $stderr.write('e' * 65536) }", 5.0),
    ("php-cgi", "<?php echo 45, \"\\n\";", 5.0),
    ("php-cgi", "<?php while (true) {}", 0.5),
];

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Entries in this server's scratch root: one directory per run under way.
fn scratch_dirs(root: &Path) -> usize {
    std::fs::read_dir(root)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.path().is_dir())
                .count()
        })
        .unwrap_or(0)
}

async fn run_one(rb: &Runbox, i: usize) -> RunStatus {
    let (runtime, code, secs) = MIX[i % MIX.len()];
    let request = RunRequest {
        runtime: runtime.into(),
        code: code.into(),
        limits: LimitOverrides {
            timeout: Some(Duration::from_secs_f64(secs)),
            memory_bytes: Some(128 << 20),
            max_timeout: None,
        },
        ..RunRequest::default()
    };
    rb.run(request, CancellationToken::new())
        .await
        .expect("run")
        .status
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let secs: u64 = std::env::var("RUNBOX_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(180);
    let cache = Cache::at(common::cache_dir());
    let manifest = Manifest::builtin().expect("plugins.toml");
    let options = RunboxOptions {
        max_concurrent: 8,
        only: vec![
            "python".into(),
            "quickjs".into(),
            "ruby".into(),
            "php-cgi".into(),
        ],
        ..RunboxOptions::default()
    };
    let rb = Arc::new(
        tokio::task::spawn_blocking(move || {
            Runbox::load(&manifest, &cache, options, &Progress::stderr())
        })
        .await
        .unwrap()
        .expect("load runtimes"),
    );
    // Warm up: one round of every program, so lazily mapped code counts in the baseline.
    for i in 0..MIX.len() {
        run_one(&rb, i).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss0, fds0, dirs0) = (rss_kib(), open_fds(), scratch_dirs(rb.scratch_root()));
    eprintln!("soak: baseline RSS {rss0} KiB, {fds0} fds, {dirs0} scratch dirs; running {secs} s");

    let done = Arc::new(AtomicUsize::new(0));
    let stop_at = Instant::now() + Duration::from_secs(secs);
    let mut workers = Vec::new();
    for w in 0..8 {
        let (rb, done) = (rb.clone(), done.clone());
        workers.push(tokio::spawn(async move {
            let mut i = w;
            let mut peak = 0;
            while Instant::now() < stop_at {
                run_one(&rb, i).await;
                done.fetch_add(1, Ordering::Relaxed);
                peak = peak.max(rss_kib());
                i += 8 + 1;
            }
            peak
        }));
    }
    let mut peak = 0;
    for w in workers {
        peak = peak.max(w.await.unwrap());
    }
    // Each run's thread keeps a small runtime of its own (an epoll and an event fd) while
    // the blocking pool keeps the thread, up to 10 s idle: wait that long for them.
    let settle_until = Instant::now() + Duration::from_secs(15);
    let settled = Instant::now();
    tokio::time::sleep(Duration::from_secs(1)).await;
    while open_fds() > fds0 && Instant::now() < settle_until {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    println!(
        "soak: descriptors settled {:.1} s after the last run",
        settled.elapsed().as_secs_f64()
    );
    let (rss1, fds1, dirs1) = (rss_kib(), open_fds(), scratch_dirs(rb.scratch_root()));
    let runs = done.load(Ordering::Relaxed);
    println!("soak: {runs} runs in {secs} s, 8 at a time");
    println!("soak: RSS {rss0} KiB -> {rss1} KiB (peak {peak} KiB)");
    println!("soak: open fds {fds0} -> {fds1}");
    println!("soak: scratch dirs {dirs0} -> {dirs1}");
    let rss_growth_mib = rss1.saturating_sub(rss0) / 1024;
    let mut failed = false;
    if fds1 > fds0 {
        eprintln!("soak: FAIL: {} file descriptors leaked", fds1 - fds0);
        failed = true;
    }
    if dirs1 > dirs0 {
        eprintln!(
            "soak: FAIL: {} scratch directories left behind",
            dirs1 - dirs0
        );
        failed = true;
    }
    if rss_growth_mib > 64 {
        eprintln!("soak: FAIL: resident memory grew by {rss_growth_mib} MiB");
        failed = true;
    }
    if failed {
        std::process::exit(1);
    }
    println!("soak: ok");
}
