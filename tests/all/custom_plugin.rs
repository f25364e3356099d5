//! A third party's runtime from a local path, as a plugins.toml entry points at it: tiny
//! preview1 programs written in WAT that break the engine-level limits on purpose
//! (tables, memory, traps) and report real exit codes.

use std::path::Path;
use std::time::Duration;

use runbox::manifest::Manifest;
use runbox::plugin::artifact::{Cache, Progress};
use runbox::service::{LimitOverrides, RunRequest, Runbox, RunboxOptions};
use runbox::service::{RunOutcome, RunStatus};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

/// Each program is a preview1 command; its `_start` does one thing.
const PROGRAMS: &[(&str, &str)] = &[
    // Grows a table by 65536 elements until refused, then exits 42.
    (
        "table-bomb",
        r#"(table $t 1 funcref)
           (func (export "_start")
             (loop $l
               (if (i32.eq (table.grow $t (ref.null func) (i32.const 65536)) (i32.const -1))
                 (then (call $exit (i32.const 42))))
               (br $l)))"#,
    ),
    // Grows memory a page at a time until refused, then exits 43.
    (
        "memory-bomb",
        r#"(func (export "_start")
             (loop $l
               (if (i32.eq (memory.grow (i32.const 16)) (i32.const -1))
                 (then (call $exit (i32.const 43))))
               (br $l)))"#,
    ),
    // 10 tables of 2^20 elements: 80 MiB of table elements, past the 64 MiB run cap, so
    // some growth must be refused (exit 44); all granted is exit 0.
    ("table-hog", TABLE_HOG),
    // An allocation refused by the cap, then an unrelated crash: a stack overflow.
    (
        "refused-then-overflow",
        r#"(func $f (call $f))
           (func (export "_start")
             (drop (memory.grow (i32.const 60000)))
             (call $f))"#,
    ),
    // An allocation refused by the cap, then the abort it leads to.
    (
        "refused-then-abort",
        r#"(func (export "_start")
             (if (i32.eq (memory.grow (i32.const 60000)) (i32.const -1)) (then unreachable)))"#,
    ),
    ("unreachable", r#"(func (export "_start") unreachable)"#),
    (
        "out-of-bounds",
        r#"(func (export "_start") (drop (i32.load (i32.const 0x7ffffff0))))"#,
    ),
    ("stack-overflow", r#"(func $f (export "_start") (call $f))"#),
    (
        "exit-7",
        r#"(func (export "_start") (call $exit (i32.const 7)))"#,
    ),
    (
        "hello",
        r#"(data (i32.const 16) "hello from wat\n")
           (func (export "_start")
             (i32.store (i32.const 0) (i32.const 16))
             (i32.store (i32.const 4) (i32.const 15))
             (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))"#,
    ),
];

/// 10 tables, each grown by 2^20 elements; exits 44 at the first refusal.
const TABLE_HOG: &str = concat!(
    "(table $t0 0 funcref) (table $t1 0 funcref) (table $t2 0 funcref) (table $t3 0 funcref)",
    "(table $t4 0 funcref) (table $t5 0 funcref) (table $t6 0 funcref) (table $t7 0 funcref)",
    "(table $t8 0 funcref) (table $t9 0 funcref)",
    "(func $grow (param $r i32) (if (i32.eq (local.get $r) (i32.const -1))",
    "  (then (call $exit (i32.const 44)))))",
    "(func (export \"_start\")",
    "    (call $grow (table.grow $t0 (ref.null func) (i32.const 1048576)))",
    "    (call $grow (table.grow $t1 (ref.null func) (i32.const 1048576)))",
    "    (call $grow (table.grow $t2 (ref.null func) (i32.const 1048576)))",
    "    (call $grow (table.grow $t3 (ref.null func) (i32.const 1048576)))",
    "    (call $grow (table.grow $t4 (ref.null func) (i32.const 1048576)))",
    "    (call $grow (table.grow $t5 (ref.null func) (i32.const 1048576)))",
    "    (call $grow (table.grow $t6 (ref.null func) (i32.const 1048576)))",
    "    (call $grow (table.grow $t7 (ref.null func) (i32.const 1048576)))",
    "    (call $grow (table.grow $t8 (ref.null func) (i32.const 1048576)))",
    "    (call $grow (table.grow $t9 (ref.null func) (i32.const 1048576))))",
);

fn module(body: &str) -> Vec<u8> {
    wat::parse_str(format!(
        r#"(module
             (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
             (import "wasi_snapshot_preview1" "fd_write"
               (func $fd_write (param i32 i32 i32 i32) (result i32)))
             (memory (export "memory") 1)
             {body})"#
    ))
    .expect("valid WAT")
}

/// Writes every program and a plugins.toml with one runtime per program.
fn write_plugins(dir: &Path) -> Manifest {
    let mut toml = String::new();
    for (name, body) in PROGRAMS {
        let bytes = module(body);
        let file = format!("{name}.wasm");
        std::fs::write(dir.join(&file), &bytes).unwrap();
        let sha = hex::encode(Sha256::digest(&bytes));
        toml.push_str(&format!(
            "[plugins.{name}]\nlanguage = \"WAT\"\nversion = \"1\"\nextension = \"txt\"\n\
             adapter = \"command\"\n\
             [plugins.{name}.settings]\nentry = \"input.txt\"\nargv = [\"prog\"]\n\
             [plugins.{name}.tools.prog]\npath = \"{file}\"\nsha256 = \"{sha}\"\n\n"
        ));
    }
    let path = dir.join("plugins.toml");
    std::fs::write(&path, toml).unwrap();
    Manifest::load(&path).expect("the generated plugins.toml parses")
}

async fn run(rb: &Runbox, name: &str) -> RunOutcome {
    run_within(rb, name, Duration::from_secs(10)).await
}

/// [`run`] with a time limit of `timeout`, which waiting for the runtime counts against.
async fn run_within(rb: &Runbox, name: &str, timeout: Duration) -> RunOutcome {
    rb.run(
        RunRequest {
            runtime: name.into(),
            code: String::new(),
            limits: LimitOverrides {
                timeout: Some(timeout),
                memory_bytes: Some(64 << 20),
                max_timeout: None,
            },
            ..RunRequest::default()
        },
        CancellationToken::new(),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_limits_and_traps_in_a_local_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = write_plugins(dir.path());
    let cache = Cache::at(dir.path().join("cache"));
    let rb = Runbox::load(
        &manifest,
        &cache,
        RunboxOptions::default(),
        &Progress::hidden(),
    )
    .expect("load the local plugins");

    let out = run(&rb, "hello").await;
    assert_eq!(
        (out.status, out.exit_code),
        (RunStatus::Completed, Some(0)),
        "{out:?}"
    );
    assert_eq!(out.stdout(), "hello from wat\n");

    // Real exit codes survive the preview1 adapter.
    let out = run(&rb, "exit-7").await;
    assert_eq!(
        (out.status, out.exit_code),
        (RunStatus::Completed, Some(7)),
        "{out:?}"
    );

    // Growth past the caps is refused, and the program sees it (-1) and can react.
    let out = run(&rb, "table-bomb").await;
    assert_eq!(
        (out.status, out.exit_code),
        (RunStatus::Completed, Some(42)),
        "{out:?}"
    );
    let out = run(&rb, "memory-bomb").await;
    assert_eq!(
        (out.status, out.exit_code),
        (RunStatus::Completed, Some(43)),
        "{out:?}"
    );
    assert!(out.duration < Duration::from_secs(5), "{out:?}");

    // Tables count against the memory cap.
    let out = run(&rb, "table-hog").await;
    assert_eq!(
        (out.status, out.exit_code),
        (RunStatus::Completed, Some(44)),
        "{out:?}"
    );

    // A refusal explains the abort it leads to, not a later, unrelated crash.
    let out = run(&rb, "refused-then-abort").await;
    assert_eq!(out.status, RunStatus::Terminated, "{out:?}");
    assert!(
        out.error
            .as_deref()
            .unwrap_or_default()
            .contains("memory limit"),
        "{out:?}"
    );
    let out = run(&rb, "refused-then-overflow").await;
    assert_eq!(out.status, RunStatus::Crashed, "{out:?}");
    let error = out.error.as_deref().unwrap_or_default();
    assert!(error.contains("stack"), "{out:?}");
    assert!(
        error.contains("earlier in the run: memory limit"),
        "{out:?}"
    );

    // Traps are `crashed`, with the trap named.
    for (name, needle) in [
        ("unreachable", "unreachable"),
        ("out-of-bounds", "out of bounds"),
        ("stack-overflow", "stack"),
    ] {
        let out = run(&rb, name).await;
        assert_eq!(out.status, RunStatus::Crashed, "{name}: {out:?}");
        assert_eq!(out.exit_code, None);
        let error = out.error.unwrap_or_default();
        assert!(error.contains(needle), "{name}: {error}");
    }

    // The host is fine afterwards.
    let out = run(&rb, "hello").await;
    assert_eq!(out.stdout(), "hello from wat\n");
}

/// A reactor tool taken as a snapshot: `turn("s…")` is its start-up (it spins, keeps the
/// text's length and how many environment variables it sees); any other text prints them
/// as two letters (`A` + length, `a` + variables) and a newline.
const SNAPSHOT_REACTOR: &str = r#"(module
    (import "wasi_snapshot_preview1" "args_sizes_get" (func (param i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "args_get" (func (param i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "proc_exit" (func (param i32)))
    (import "wasi_snapshot_preview1" "environ_sizes_get" (func $env_sizes (param i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
    (memory (export "memory") 1)
    (global $next (mut i32) (i32.const 1024))
    (global $length (mut i32) (i32.const 0))
    (global $vars (mut i32) (i32.const 0))
    (func (export "_initialize"))
    (func (export "alloc") (param i32) (result i32)
        (global.get $next)
        (global.set $next (i32.add (global.get $next) (local.get 0))))
    (func (export "turn") (param $text i32) (param $len i32) (result i32) (local $n i32)
        (if (i32.eq (i32.load8_u (local.get $text)) (i32.const 115))
            (then
                (global.set $length (local.get $len))
                (drop (call $env_sizes (i32.const 32) (i32.const 36)))
                (global.set $vars (i32.load (i32.const 32)))
                (local.set $n (i32.const 300000000))
                (loop $spin
                    (local.set $n (i32.sub (local.get $n) (i32.const 1)))
                    (br_if $spin (local.get $n)))
                (return (i32.const 0))))
        (i32.store8 (i32.const 16) (i32.add (i32.const 65) (global.get $length)))
        (i32.store8 (i32.const 17) (i32.add (i32.const 97) (global.get $vars)))
        (i32.store8 (i32.const 18) (i32.const 10))
        (i32.store (i32.const 0) (i32.const 16))
        (i32.store (i32.const 4) (i32.const 3))
        (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
        (i32.const 0)))"#;

/// A runtime whose snapshot is still to be taken answers a call before the snapshot
/// exists (the tool runs its start-up, in the snapshot's environment, then the call),
/// with what the snapshot then answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_runtime_answers_before_its_snapshot_is_taken() {
    // The stand-in serves while the snapshot is taken (a spin of ~0.1 s here), polled
    // every 5 ms; should a loaded machine hide that window, the scenario is repeated.
    for attempt in 1..=3 {
        if served_before_the_snapshot().await {
            return;
        }
        eprintln!("attempt {attempt}: the stand-in was never seen serving");
    }
    panic!("the runtime was never served before its snapshot was taken");
}

/// A plugins file in `dir` whose one runtime, `snap`, is [`SNAPSHOT_REACTOR`] with a
/// snapshot (its start-up a spin, in an environment of one variable): every run prints
/// `Db` (the start-up's 3 bytes, its 1 variable).
pub(crate) fn snapshot_plugin(dir: &Path) -> std::path::PathBuf {
    let bytes = wat::parse_str(SNAPSHOT_REACTOR).unwrap();
    std::fs::write(dir.join("reactor.wasm"), &bytes).unwrap();
    let sha = hex::encode(Sha256::digest(&bytes));
    let toml = format!(
        "[plugins.snap]\nlanguage = \"WAT\"\nversion = \"1\"\nextension = \"txt\"\n\
         adapter = \"command\"\n\
         [plugins.snap.settings]\nentry = \"input.txt\"\nargv = [\"tool\", \"print\"]\n\
         [plugins.snap.tools.tool]\npath = \"reactor.wasm\"\nsha256 = \"{sha}\"\n\
         [plugins.snap.tools.tool.reactor]\ninit = [\"_initialize\"]\nentry = \"turn\"\n\
         alloc = \"alloc\"\n\
         [plugins.snap.tools.tool.reactor.snapshot]\nenv = [\"K=V\"]\nprogram = \"sss\"\n"
    );
    let path = dir.join("plugins.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

/// Whether the scenario could be observed (see above); its checks fail the test.
async fn served_before_the_snapshot() -> bool {
    let dir = tempfile::tempdir().unwrap();
    let manifest = Manifest::load(&snapshot_plugin(dir.path())).unwrap();
    let cache = Cache::at(dir.path().join("cache"));
    let rb = std::sync::Arc::new(
        Runbox::start(
            &manifest,
            &cache,
            RunboxOptions::default(),
            Progress::hidden(),
        )
        .unwrap(),
    );
    let first = tokio::spawn({
        let rb = rb.clone();
        // It waits for the plugin's component to compile (a fresh cache), which on a
        // loaded machine takes more than 10 s.
        async move { run_within(&rb, "snap", Duration::from_secs(40)).await }
    });
    let preparation = || {
        rb.runtimes()
            .into_iter()
            .find(|r| r.name == "snap")
            .and_then(|r| r.preparation)
    };
    let mut served_provisionally = false;
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while preparation().is_some() && std::time::Instant::now() < deadline {
        served_provisionally |=
            preparation().is_some_and(|p| p.starts_with("ready, each run starting up first"));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        preparation(),
        None,
        "the snapshot was not ready within 120 s"
    );
    // Before and after the snapshot: the start-up's 3 bytes and its 1 variable.
    let first = first.await.unwrap();
    assert_eq!(
        (first.status, first.stdout().into_owned()),
        (RunStatus::Completed, "Db\n".to_string()),
        "{first:?}"
    );
    let after = run(&rb, "snap").await;
    assert_eq!(
        (after.status, after.stdout().into_owned()),
        (RunStatus::Completed, "Db\n".to_string()),
        "{after:?}"
    );
    served_provisionally
}
