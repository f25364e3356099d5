//! Durable sessions (docs/scale-out.md): hibernating and resuming sessions through a session
//! store, in-process.
//!
//! `cargo bench --bench durable [-- ROUNDS]` (default 5 rounds) makes a python session
//! holding a 100 MB pandas DataFrame (1,310,720 × 10 float64), then, each round: stores
//! it (`Sessions::hibernate`, what an idle session gets after `--session-hibernate-after`),
//! and calls it again (the call resumes it from the store: a fresh instance replays its
//! calls). For comparison, the same call on the resident session, and a resume of a
//! small quickjs, ruby and javascript session. Every answer is checked. Prints a markdown
//! table (bench/RESULTS.md's "Durable sessions").

mod common;

use std::time::{Duration, Instant};

use common::{median, ms};
use runbox::manifest::Manifest;
use runbox::service::{LimitOverrides, RunRequest, Runbox, RunboxOptions};
use runbox::session::directory::{
    StoreSettings, DEFAULT_MAX_ENTRY_BYTES, DEFAULT_MAX_STORED, DEFAULT_STORED_TTL,
};
use tokio_util::sync::CancellationToken;

const MAKE_DF: &str = "import numpy as np, pandas as pd\n\
                       df = pd.DataFrame(np.random.rand(1_310_720, 10))\n\
                       print(df.memory_usage(index=False).sum())";
const CHECK_DF: &str = "print(df.memory_usage(index=False).sum(), df.shape)";
const DF_OUT: &str = "104857600 (1310720, 10)\n";

fn main() {
    let rounds = common::rounds(5);
    let store = tempfile::tempdir().expect("a temporary directory");
    let options = RunboxOptions {
        only: ["python", "quickjs", "ruby", "javascript"]
            .map(String::from)
            .to_vec(),
        compiler_exe: Some(env!("CARGO_BIN_EXE_runbox").into()),
        session_store: Some(StoreSettings {
            dir: store.path().to_path_buf(),
            max_entries: DEFAULT_MAX_STORED,
            ttl: DEFAULT_STORED_TTL,
            max_entry_bytes: DEFAULT_MAX_ENTRY_BYTES,
        }),
        // Stored only when the bench says so.
        session_hibernate_after: Duration::from_secs(3600),
        ..RunboxOptions::default()
    };
    let runbox = common::load_with(Manifest::builtin().expect("built-in plugins.toml"), options);
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    rt.block_on(async {
        let id = session(&runbox, "python").await;
        let out = call(&runbox, &id, MAKE_DF).await;
        assert_eq!(out, "104857600\n");
        let (mut stored, mut resumed, mut resident) = (Vec::new(), Vec::new(), Vec::new());
        let mut entry_bytes = 0;
        for _ in 0..rounds {
            let t = Instant::now();
            assert!(runbox.sessions().hibernate(&id), "stored");
            stored.push(t.elapsed());
            entry_bytes = std::fs::metadata(store.path().join(format!("{id}.session")))
                .expect("the entry")
                .len();
            let t = Instant::now();
            assert_eq!(call(&runbox, &id, CHECK_DF).await, DF_OUT);
            resumed.push(t.elapsed());
            let t = Instant::now();
            assert_eq!(call(&runbox, &id, CHECK_DF).await, DF_OUT);
            resident.push(t.elapsed());
        }
        println!("| session | store (median) | resume + call (median) | call in memory (median) | entry |");
        println!("| --- | ---: | ---: | ---: | ---: |");
        println!(
            "| python, 100 MB DataFrame | {:.1} ms | {:.0} ms | {:.1} ms | {} KiB |",
            ms(median(&mut stored)),
            ms(median(&mut resumed)),
            ms(median(&mut resident)),
            entry_bytes / 1024
        );
        for (runtime, make, check, expected) in [
            ("quickjs", "var n = 6 * 7", "console.log(n)", "42\n"),
            ("ruby", "N = 6 * 7", "puts N", "42\n"),
            ("javascript", "var n = 6 * 7", "console.log(n)", "42\n"),
        ] {
            let id = session(&runbox, runtime).await;
            call(&runbox, &id, make).await;
            let (mut stored, mut resumed, mut resident) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..rounds {
                let t = Instant::now();
                assert!(runbox.sessions().hibernate(&id));
                stored.push(t.elapsed());
                let t = Instant::now();
                assert_eq!(call(&runbox, &id, check).await, expected);
                resumed.push(t.elapsed());
                let t = Instant::now();
                assert_eq!(call(&runbox, &id, check).await, expected);
                resident.push(t.elapsed());
            }
            println!(
                "| {runtime}, one variable | {:.1} ms | {:.0} ms | {:.1} ms | |",
                ms(median(&mut stored)),
                ms(median(&mut resumed)),
                ms(median(&mut resident)),
            );
        }
    });
}

async fn session(runbox: &Runbox, runtime: &str) -> String {
    runbox
        .create_session(runtime)
        .await
        .expect("a session")
        .session_id
}

/// Runs `code` in session `id`; its stdout (the run must complete with 0).
async fn call(runbox: &Runbox, id: &str, code: &str) -> String {
    let outcome = runbox
        .run(
            RunRequest {
                code: code.into(),
                session_id: Some(id.into()),
                limits: LimitOverrides {
                    timeout: Some(Duration::from_secs(120)),
                    ..LimitOverrides::default()
                },
                ..RunRequest::default()
            },
            CancellationToken::new(),
        )
        .await
        .expect("the call");
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    outcome.stdout().into_owned()
}
