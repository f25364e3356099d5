//! Durable sessions (docs/scale-out.md): hibernating and resuming sessions through a session
//! store, in-process.
//!
//! `cargo bench --bench durable [-- ROUNDS]` (default 5 rounds) makes a python session
//! holding a 100 MB pandas DataFrame (1,310,720 × 10 float64), then, each round: stores
//! it (`Sessions::hibernate`, what an idle session gets after `--session-hibernate-after`),
//! and calls it again (the call resumes it from the store: a fresh instance gets its
//! snapshot written in); stores it again with the snapshot taken out of the entry and
//! calls it (a fresh instance replays its calls, as for a replayed runtime); and calls it
//! in memory. The same for a javascript session holding a million numbers and small
//! quickjs, ruby and javascript sessions; then forks of the python and javascript
//! sessions into 1 and 10 copies (`Runbox::fork_session`, until every copy is open).
//! Every answer is checked. Then the python forks again through MCP: `runbox mcp` driven
//! by rmcp's client over stdio, timed from the `fork_session` request to its answer (when
//! every id in it takes calls). Prints markdown tables (bench/RESULTS.md's "Durable
//! sessions").

mod common;

use std::time::{Duration, Instant};

use common::mcp::McpServer;
use common::{median, ms};
use runbox::manifest::Manifest;
use runbox::service::{LimitOverrides, RunRequest, Runbox, RunboxOptions};
use runbox::session::directory::{
    StoreSettings, DEFAULT_MAX_ENTRY_BYTES, DEFAULT_MAX_STORED, DEFAULT_STORED_TTL,
};
use runbox::session::entry::StoredSession;
use tokio_util::sync::CancellationToken;

const MAKE_DF: &str = "import numpy as np, pandas as pd\n\
                       df = pd.DataFrame(np.random.rand(1_310_720, 10))\n\
                       print(df.memory_usage(index=False).sum())";
const CHECK_DF: &str = "print(df.memory_usage(index=False).sum(), df.shape)";
const DF_OUT: &str = "104857600 (1310720, 10)\n";

fn main() {
    runbox::service::quiet_error_backtraces();
    let rounds = common::rounds(5);
    let store = tempfile::tempdir().expect("a temporary directory");
    let options = options_on(store.path());
    let runbox = common::load_with(Manifest::builtin().expect("built-in plugins.toml"), options);
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    rt.block_on(async {
        let python = session(&runbox, "python").await;
        let out = call(&runbox, &python, MAKE_DF).await;
        assert_eq!(out, "104857600\n");
        let javascript = session(&runbox, "javascript").await;
        call(&runbox, &javascript, MAKE_ARRAY).await;
        println!("| session | fork into 1 (median) | fork into 10 (median) |");
        println!("| --- | ---: | ---: |");
        for (id, label, check, expected) in [
            (&python, "python, 100 MB DataFrame", CHECK_DF, DF_OUT),
            (&javascript, "javascript, a million numbers", CHECK_ARRAY, ARRAY_OUT),
        ] {
            let (mut one, mut ten) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                for (count, times) in [(1, &mut one), (10, &mut ten)] {
                    let t = Instant::now();
                    let children = runbox.fork_session(id, count).await.expect("a fork");
                    times.push(t.elapsed());
                    // Every copy answers as its source did.
                    for child in children {
                        assert_eq!(call(&runbox, &child.session_id, check).await, expected);
                        runbox.close_session(&child.session_id).expect("closed");
                    }
                }
            }
            println!(
                "| {label} | {:.0} ms | {:.0} ms |",
                ms(median(&mut one)),
                ms(median(&mut ten))
            );
        }
        println!();
        println!("| session | store (median) | resume + call: snapshot | resume + call: journal | call in memory | entry (of it the snapshot) |");
        println!("| --- | ---: | ---: | ---: | ---: | ---: |");
        stored_and_resumed(&runbox, store.path(), rounds, &python, "python, 100 MB DataFrame", CHECK_DF, DF_OUT).await;
        stored_and_resumed(&runbox, store.path(), rounds, &javascript, "javascript, a million numbers", CHECK_ARRAY, ARRAY_OUT).await;
        for (runtime, make, check, expected) in [
            ("quickjs", "var n = 6 * 7", "console.log(n)", "42\n"),
            ("ruby", "N = 6 * 7", "puts N", "42\n"),
            ("javascript", "var n = 6 * 7", "console.log(n)", "42\n"),
        ] {
            let id = session(&runbox, runtime).await;
            call(&runbox, &id, make).await;
            stored_and_resumed(&runbox, store.path(), rounds, &id, &format!("{runtime}, one variable"), check, expected).await;
        }
        // Another server on the same store (as after a restart, or on another replica)
        // resumes what this one stored, and the other way round.
        let other = common::load_with(
            Manifest::builtin().expect("built-in plugins.toml"),
            options_on(store.path()),
        );
        let mut moved = Vec::new();
        for round in 0..rounds {
            let (from, to) = if round % 2 == 0 { (&runbox, &other) } else { (&other, &runbox) };
            assert!(from.sessions().hibernate(&python), "stored");
            let t = Instant::now();
            assert_eq!(call(to, &python, CHECK_DF).await, DF_OUT);
            moved.push(t.elapsed());
        }
        println!();
        println!("| python, 100 MB DataFrame, stored by one server | resume + call in another (median) |");
        println!("| --- | ---: |");
        println!("| (as after a restart, or a move to another replica) | {:.0} ms |", ms(median(&mut moved)));
        forks_through_mcp(rounds).await;

    });
}

/// The bench's servers: python, quickjs, ruby and javascript, a session store in `store`.
fn options_on(store: &std::path::Path) -> RunboxOptions {
    RunboxOptions {
        only: ["python", "quickjs", "ruby", "javascript"]
            .map(String::from)
            .to_vec(),
        compiler_exe: Some(env!("CARGO_BIN_EXE_runbox").into()),
        session_store: Some(StoreSettings {
            dir: store.to_path_buf(),
            max_entries: DEFAULT_MAX_STORED,
            ttl: DEFAULT_STORED_TTL,
            max_entry_bytes: DEFAULT_MAX_ENTRY_BYTES,
        }),
        // Stored only when the bench says so.
        session_hibernate_after: Duration::from_secs(3600),
        max_sessions: 64,
        server_memory_bytes: 12 << 30,
        ..RunboxOptions::default()
    }
}

/// The python forks of the first table, through MCP.
async fn forks_through_mcp(rounds: usize) {
    let server = McpServer::start(&[
        "--runtimes",
        "python",
        "--max-sessions",
        "64",
        "--server-memory-mb",
        "12288",
    ])
    .await;
    let id = server.create_session("python").await;
    server.expect_in(&id, MAKE_DF, "104857600\n").await;
    let (mut one, mut ten) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for (count, times) in [(1, &mut one), (10, &mut ten)] {
            let t = Instant::now();
            let result = server
                .call(
                    "fork_session",
                    serde_json::json!({"session_id": id, "count": count}),
                )
                .await;
            times.push(t.elapsed());
            let ids = result.structured_content.expect("structuredContent")["session_ids"]
                .as_array()
                .expect("session ids")
                .clone();
            assert_eq!(ids.len(), count);
            for child in ids {
                let child = child.as_str().expect("an id");
                server.expect_in(child, CHECK_DF, DF_OUT).await;
                server
                    .call("close_session", serde_json::json!({"session_id": child}))
                    .await;
            }
        }
    }
    println!();
    println!("| through MCP (rmcp client, stdio) | fork into 1 (median) | fork into 10 (median) |");
    println!("| --- | ---: | ---: |");
    println!(
        "| python, 100 MB DataFrame | {:.0} ms | {:.0} ms |",
        ms(median(&mut one)),
        ms(median(&mut ten))
    );
}

const MAKE_ARRAY: &str = "var big = new Array(1 << 20).fill(0).map((_, i) => i)";
const CHECK_ARRAY: &str = "console.log(big.length, big[12345])";
const ARRAY_OUT: &str = "1048576 12345\n";

/// Rounds of: store session `id`, resume it from its snapshot with a call, call it in
/// memory; then the same resume from its journal alone (the entry's snapshot taken out,
/// as for a replayed runtime). Prints a row.
async fn stored_and_resumed(
    runbox: &Runbox,
    store: &std::path::Path,
    rounds: usize,
    id: &str,
    label: &str,
    check: &str,
    expected: &str,
) {
    let path = store.join(format!("{id}.session"));
    let (mut stored, mut snapshot, mut journal, mut resident) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut image_bytes, mut entry_bytes_first) = (None, None);
    // From the snapshot first: once resumed from the journal, a javascript session
    // holds streams its start-up did not, and is stored without one.
    for _ in 0..rounds {
        let t = Instant::now();
        assert!(runbox.sessions().hibernate(id), "stored");
        stored.push(t.elapsed());
        if entry_bytes_first.is_none() {
            let entry = StoredSession::decode(&std::fs::read(&path).unwrap()).unwrap();
            entry_bytes_first = Some(std::fs::metadata(&path).expect("the entry").len());
            image_bytes = entry.image.as_ref().map(|i| i.stored_bytes());
        }
        let t = Instant::now();
        assert_eq!(call(runbox, id, check).await, expected);
        snapshot.push(t.elapsed());
        let t = Instant::now();
        assert_eq!(call(runbox, id, check).await, expected);
        resident.push(t.elapsed());
    }
    for _ in 0..rounds {
        assert!(runbox.sessions().hibernate(id), "stored");
        let mut entry = StoredSession::decode(&std::fs::read(&path).unwrap()).unwrap();
        entry.image = None;
        std::fs::write(&path, entry.encode()).unwrap();
        let t = Instant::now();
        assert_eq!(call(runbox, id, check).await, expected);
        journal.push(t.elapsed());
    }
    let shown = |times: &mut Vec<Duration>| format!("{:.0} ms", ms(median(times)));
    println!(
        "| {label} | {:.1} ms | {} | {} | {:.1} ms | {} KiB ({}) |",
        ms(median(&mut stored)),
        match image_bytes {
            Some(_) => shown(&mut snapshot),
            None => "(replayed)".into(),
        },
        shown(&mut journal),
        ms(median(&mut resident)),
        entry_bytes_first.unwrap_or(0) / 1024,
        image_bytes.map_or("none".into(), |b| format!("{} KiB", b / 1024)),
    );
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
