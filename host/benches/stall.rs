//! Does a run stuck in slow file syscalls delay other runs? Two python runs rewrite
//! 128 MiB files and `fsync` them in a loop while quickjs hello worlds are timed; the
//! same hello worlds are timed alone first.
//!
//! `cargo bench --bench stall` (`-- ROUNDS`, default 30). Not a test: it prints medians
//! and the 95th percentile, alone and beside the hogs.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use runbox::manifest::Manifest;
use runbox::plugin::artifact::{Cache, Progress};
use runbox::service::RunStatus;
use runbox::service::{LimitOverrides, RunRequest, Runbox, RunboxOptions};
use tokio_util::sync::CancellationToken;

const HOG: &str = "import os\n\
                   block = b'x' * (1 << 20)\n\
                   while True:\n\
                   \x20   fd = os.open('/big', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\n\
                   \x20   for _ in range(128):\n\
                   \x20       os.write(fd, block)\n\
                   \x20   os.fsync(fd)\n\
                   \x20   os.close(fd)\n";

fn percentile(times: &mut [Duration], p: f64) -> f64 {
    common::ms(common::percentile(times, p))
}

async fn hellos(runbox: &Runbox, rounds: usize) -> Vec<Duration> {
    let mut times = Vec::new();
    for _ in 0..rounds {
        let request = RunRequest {
            runtime: "quickjs".into(),
            code: "console.log('hello')".into(),
            ..RunRequest::default()
        };
        let started = Instant::now();
        let out = runbox
            .run(request, CancellationToken::new())
            .await
            .expect("run");
        assert_eq!(out.status, RunStatus::Completed, "{out:?}");
        times.push(started.elapsed());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    times
}

fn main() {
    runbox::service::quiet_error_backtraces();
    let rounds = common::rounds(30);
    let manifest = Manifest::builtin().expect("built-in plugins.toml");
    let options = RunboxOptions {
        only: vec!["python".into(), "quickjs".into()],
        ..RunboxOptions::default()
    };
    let runbox = Arc::new(
        Runbox::load(
            &manifest,
            &Cache::at(common::cache_dir()),
            options,
            &Progress::hidden(),
        )
        .expect("load python and quickjs"),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async {
        hellos(&runbox, 3).await; // warm-up
        let mut alone = hellos(&runbox, rounds).await;
        let cancel = CancellationToken::new();
        let hogs: Vec<_> = (0..2)
            .map(|_| {
                let (runbox, cancel) = (runbox.clone(), cancel.clone());
                tokio::spawn(async move {
                    let request = RunRequest {
                        runtime: "python".into(),
                        code: HOG.into(),
                        limits: LimitOverrides {
                            timeout: Some(Duration::from_secs(60)),
                            memory_bytes: None,
                            max_timeout: None,
                        },
                        ..RunRequest::default()
                    };
                    runbox.run(request, cancel).await
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut beside = hellos(&runbox, rounds).await;
        cancel.cancel();
        for hog in hogs {
            let _ = hog.await;
        }
        println!("quickjs hello, {rounds} rounds (ms):");
        println!(
            "  alone:                          median {:>7.1}  p95 {:>7.1}",
            percentile(&mut alone, 0.5),
            percentile(&mut alone, 0.95)
        );
        println!(
            "  beside two fsync-looping runs:  median {:>7.1}  p95 {:>7.1}",
            percentile(&mut beside, 0.5),
            percentile(&mut beside, 0.95)
        );
    });
}
