//! The benchmark suite: how fast runbox answers, per runtime, warm, medians and p95.
//!
//! `cargo bench --bench suite` runs every section; `cargo bench --bench suite -- hello
//! python` only those (sections: hello, python, cpu, newsource, pycpu, throughput,
//! session, prestart, memory, cold), `ROUNDS=N` sets the rounds, and `RUNTIMES=a,b` limits the hello
//! section to those runtimes (for profiling one). It prints markdown tables (what
//! `bench/RESULTS.md` is made from). MCP numbers are client round trips through the real
//! binary (`runbox mcp` over stdio, rmcp's client); in-process numbers call the library.
//! Native programs (python3, gcc, g++, node) are run beside when installed. Runtimes come
//! from the tests' cache (`RUNBOX_CACHE_DIR`, default `target/runbox-cache`), and from
//! `RUNBOX_PLUGINS` (a plugins.toml) when it is set, in-process and through MCP alike: two
//! runs with two lists measure a plugin's change beside what it was.

mod common;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::mcp::McpServer;
use common::{ms, stats, Stats};
use runbox::manifest::Manifest;
use runbox::service::{Runbox, RunboxOptions};

/// Hello world in every runtime, with its expected output.
const HELLO: &[(&str, &str)] = &[
    ("python", "print('hello, world')"),
    ("quickjs", "console.log('hello, world')"),
    ("ruby", "puts 'hello, world'"),
    ("php-cgi", "<?php echo \"hello, world\\n\";"),
    (
        "clang",
        "#include <stdio.h>\nint main(void) { puts(\"hello, world\"); return 0; }\n",
    ),
    (
        "clangpp",
        "#include <iostream>\nint main() { std::cout << \"hello, world\" << std::endl; }\n",
    ),
    ("javascript", "console.log('hello, world')"),
    (
        "typescript",
        "const greeting: string = 'hello, world';\nconsole.log(greeting);",
    ),
    ("shell", "echo 'hello, world'"),
    ("prolog", ":- initialization((write('hello, world'), nl))."),
    ("sqlite", "select 'hello, world';"),
];

const PRIMES_PY: &str = "def primes(n):\n    found = []\n    for c in range(2, n):\n        if all(c % p for p in found if p * p <= c):\n            found.append(c)\n    return found\nprint(len(primes(5000)))\n";

/// The first 5000 primes by trial division: long enough that the interpreter, not process
/// start, is what is timed.
const PRIMES_FIRST_PY: &str = "def primes(n):\n    found = []\n    c = 2\n    while len(found) < n:\n        for p in found:\n            if p * p > c:\n                found.append(c)\n                break\n            if c % p == 0:\n                break\n        else:\n            found.append(c)\n        c += 1\n    return found\nprint(primes(5000)[-1])\n";

const FIB_C: &str = "#include <stdio.h>\nstatic int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\nint main(void) { printf(\"%d\\n\", fib(32)); return 0; }\n";
/// fib(38): long enough that running the program, not compiling it, is what is timed.
const FIB38_C: &str = "#include <stdio.h>\nstatic int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\nint main(void) { volatile int n = 38; printf(\"%d\\n\", fib(n)); return 0; }\n";
const HELLO_CPP: &str =
    "#include <iostream>\nint main() { std::cout << \"hello, world\" << std::endl; }\n";
const FIB_CPP: &str = "#include <iostream>\nstatic int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\nint main() { std::cout << fib(32) << std::endl; }\n";
const FIB_JS: &str =
    "function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\nconsole.log(fib(27));\n";
const FIB_RB: &str = "def fib(n) = n < 2 ? n : fib(n - 1) + fib(n - 2)\nputs fib(25)\n";

/// The data-work programs of the python issue, with their targets (ms).
const PYTHON: &[(&str, &str, &str, f64)] = &[
    ("hello", "print('hello, world')", "hello, world\n", 30.0),
    (
        "numpy percentile",
        "import numpy\nprint(numpy.percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 75))",
        "7.75\n",
        50.0,
    ),
    (
        "pandas groupby, 1,000 rows",
        "import pandas as pd\ndf = pd.DataFrame({'k': [i % 7 for i in range(1000)], 'v': range(1000)})\nprint(df.groupby('k').v.sum().sum())",
        "499500\n",
        100.0,
    ),
    (
        "matplotlib line plot to PNG",
        "import matplotlib.pyplot as plt\nplt.plot(range(100), [i * i for i in range(100)])\nplt.savefig('plot.png')\nprint('ok')",
        "ok\n",
        400.0,
    ),
    ("primes(5000)", PRIMES_PY, "669\n", f64::NAN),
];

fn main() {
    // As the server does: a guest's exit captures no Rust backtrace.
    runbox::service::quiet_error_backtraces();
    let sections: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wants = |name: &str| sections.is_empty() || sections.iter().any(|s| s == name);
    let rounds = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!("# runbox benchmark suite\n");
    println!("{rounds} rounds per row after one warm-up run (fewer for the slowest rows); times in ms.\n");
    rt.block_on(async {
        if wants("hello") {
            hello(rounds).await;
        }
        if wants("python") {
            python(rounds).await;
        }
        if wants("cpu") {
            cpu(rounds.min(7)).await;
        }
        if wants("newsource") {
            new_source(rounds.min(15)).await;
        }
        if wants("pycpu") {
            pycpu(rounds.min(7)).await;
        }
        if wants("throughput") {
            throughput().await;
        }
        if wants("session") {
            session(rounds).await;
        }
        if wants("prestart") {
            prestart(rounds).await;
        }
        if wants("memory") {
            memory().await;
        }
        if wants("cold") {
            cold();
        }
    });
}

fn header(title: &str, columns: &[&str]) {
    println!("## {title}\n");
    println!("| {} |", columns.join(" | "));
    println!("|{}", " --- |".repeat(columns.len()));
}

/// Times `call` `rounds` times after one warm-up.
async fn time<F, Fut>(rounds: usize, mut call: F) -> Stats
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    call().await;
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        call().await;
        times.push(started.elapsed());
    }
    stats(&mut times)
}

fn load(only: &[&str]) -> Arc<Runbox> {
    let chosen = std::env::var_os("RUNBOX_PLUGINS").map(std::path::PathBuf::from);
    load_from(
        Manifest::load_or_builtin(chosen.as_deref()).expect("the plugins.toml"),
        only,
    )
}

/// `only` of `manifest`'s runtimes, loaded from the shared cache.
fn load_from(manifest: Manifest, only: &[&str]) -> Arc<Runbox> {
    let options = RunboxOptions {
        only: only.iter().map(|s| s.to_string()).collect(),
        ..RunboxOptions::default()
    };
    common::load_with(manifest, options)
}

async fn run_in_process(runbox: &Runbox, runtime: &str, code: &str, expected: &str) {
    common::run_expecting(runbox, runtime, code, expected).await;
}

fn rounds_for(runtime: &str, rounds: usize) -> usize {
    if runtime == "clangpp" {
        rounds.min(5)
    } else {
        rounds
    }
}

/// Hello world, in-process and through MCP.
async fn hello(rounds: usize) {
    let wanted = std::env::var("RUNTIMES").ok();
    let chosen: Vec<(&str, &str)> = HELLO
        .iter()
        .copied()
        .filter(|(n, _)| {
            wanted
                .as_deref()
                .is_none_or(|w| w.split(',').any(|x| x == *n))
        })
        .collect();
    let names: Vec<&str> = chosen.iter().map(|(n, _)| *n).collect();
    let runbox = tokio::task::spawn_blocking(move || load(&names))
        .await
        .unwrap();
    let server = McpServer::start(&[]).await;
    header(
        "Hello world per call",
        &[
            "runtime",
            "in-process median",
            "p95",
            "MCP round trip median",
            "p95",
        ],
    );
    for &(runtime, code) in &chosen {
        let n = rounds_for(runtime, rounds);
        let inproc = time(n, || {
            run_in_process(&runbox, runtime, code, "hello, world\n")
        })
        .await;
        let mcp = time(n, || server.expect(runtime, code, None, "hello, world\n")).await;
        println!(
            "| {runtime} | {:.1} | {:.1} | {:.1} | {:.1} |",
            inproc.median, inproc.p95, mcp.median, mcp.p95
        );
    }
    // What MCP itself costs: a tool call that runs nothing.
    let floor = time(rounds, || async {
        server.call("list_runtimes", serde_json::json!({})).await;
    })
    .await;
    println!(
        "| (MCP floor: `list_runtimes`, no run) | - | - | {:.1} | {:.1} |",
        floor.median, floor.p95
    );
    println!();
}

/// The python issue's targets, through MCP, and primes(5000) beside native CPython.
async fn python(rounds: usize) {
    let server = McpServer::start(&["--runtimes", "python"]).await;
    header(
        "Python data work through MCP",
        &["program", "median", "p95", "target"],
    );
    let mut primes = None;
    for (name, code, expected, target) in PYTHON {
        let n = if target.is_nan() {
            rounds.min(7)
        } else {
            rounds
        };
        let s = time(n, || server.expect("python", code, None, expected)).await;
        if target.is_nan() {
            primes = Some(s);
            println!(
                "| {name} | {:.1} | {:.1} | within 2x native |",
                s.median, s.p95
            );
        } else {
            println!("| {name} | {:.1} | {:.1} | <= {target} |", s.median, s.p95);
        }
    }
    println!();
    if let (Some(primes), Some(native)) = (primes, native_python(PRIMES_PY, 7)) {
        println!(
            "primes(5000): runbox {:.0} ms, native python3 {:.0} ms (process), ratio {:.2}\n",
            primes.median,
            native,
            primes.median / native
        );
    }
}

/// CPU-bound programs beside the same program run natively.
async fn cpu(rounds: usize) {
    let server = McpServer::start(&[]).await;
    header(
        "CPU-bound programs (whole call) beside native",
        &[
            "program",
            "runbox median",
            "native median",
            "ratio",
            "native",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    // (row, runtime, program, expected stdout, native median, what native is)
    type Row<'a> = (&'a str, &'a str, &'a str, &'a str, Option<f64>, &'a str);
    let rows: Vec<Row> = vec![
        (
            "python primes(5000)",
            "python",
            PRIMES_PY,
            "669\n",
            native_python(PRIMES_PY, rounds),
            "python3 (CPython 3.11)",
        ),
        (
            "python first 5000 primes",
            "python",
            PRIMES_FIRST_PY,
            "48611\n",
            native_python(PRIMES_FIRST_PY, rounds),
            "python3 (CPython 3.11)",
        ),
        (
            "C fib(32), compile+run",
            "clang",
            FIB_C,
            "2178309\n",
            native_compiled(dir.path(), "gcc", "c", FIB_C, rounds),
            "gcc -O2, compile+run",
        ),
        (
            "C fib(38), compile+run",
            "clang",
            FIB38_C,
            "39088169\n",
            native_compiled(dir.path(), "gcc", "c", FIB38_C, rounds),
            "gcc -O2, compile+run",
        ),
        (
            "C fib(38), compile+run",
            "clang",
            FIB38_C,
            "39088169\n",
            native_compiled(dir.path(), "clang", "c", FIB38_C, rounds),
            "clang -O2, compile+run",
        ),
        (
            "C++ <iostream> hello, compile+run",
            "clangpp",
            HELLO_CPP,
            "hello, world\n",
            native_compiled(dir.path(), "g++", "cpp", HELLO_CPP, rounds),
            "g++ -O2, compile+run",
        ),
        (
            "C++ fib(32), compile+run",
            "clangpp",
            FIB_CPP,
            "2178309\n",
            native_compiled(dir.path(), "g++", "cpp", FIB_CPP, rounds),
            "g++ -O2, compile+run",
        ),
        (
            "JavaScript fib(27)",
            "quickjs",
            FIB_JS,
            "196418\n",
            native_script(dir.path(), "node", "js", FIB_JS, rounds),
            "node",
        ),
        (
            "Ruby fib(25)",
            "ruby",
            FIB_RB,
            "75025\n",
            native_script(dir.path(), "ruby", "rb", FIB_RB, rounds),
            "ruby",
        ),
    ];
    for (name, runtime, code, expected, native, what) in rows {
        let s = time(rounds, || server.expect(runtime, code, None, expected)).await;
        match native {
            Some(n) => println!(
                "| {name} | {:.0} | {n:.0} | {:.2} | {what} |",
                s.median,
                s.median / n
            ),
            None => println!(
                "| {name} | {:.0} | - | - | {what} not installed |",
                s.median
            ),
        }
    }
    println!();
}

/// A C or C++ hello whose text is new at every round (its greeting numbered), so that
/// nothing compiled before answers it: what a model sends.
struct NewSource {
    row: &'static str,
    runtime: &'static str,
    ext: &'static str,
    native: &'static str,
    program: fn(&str) -> String,
}

const NEW_SOURCES: &[NewSource] = &[
    NewSource {
        row: "C `<stdio.h>` hello",
        runtime: "clang",
        ext: "c",
        native: "gcc",
        program: |greeting| {
            format!("#include <stdio.h>\nint main(void) {{ puts(\"{greeting}\"); return 0; }}\n")
        },
    },
    NewSource {
        row: "C++ `<iostream>` hello",
        runtime: "clangpp",
        ext: "cpp",
        native: "g++",
        program: |greeting| {
            format!(
                "#include <iostream>\nint main() {{ std::cout << \"{greeting}\" << std::endl; }}\n"
            )
        },
    },
];

/// Goal 2 of issue 46: C and C++ from new source through MCP and through `runbox run`
/// (one process), each round beside gcc or g++ `-O2` compiling and running the same text.
/// `FORGET_FUNCTIONS=1` removes the compiled functions kept for produced programs
/// (`engine/function_pack.rs`) before every compile, to measure without them.
async fn new_source(rounds: usize) {
    let forget = std::env::var_os("FORGET_FUNCTIONS").is_some();
    let programs = common::cache_dir().join("compiled/programs");
    let forget_functions = || {
        if forget {
            for entry in std::fs::read_dir(&programs).into_iter().flatten().flatten() {
                if entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with("functions-")
                {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
    };
    let server = McpServer::start(&["--runtimes", "clang,clangpp"]).await;
    header(
        "C and C++ from new source (compile + link + run)",
        &[
            "program",
            "through MCP",
            "`runbox run`",
            "native",
            "MCP / native",
            "`runbox run` / native",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    // Numbered from the clock too: the compiled-program cache outlives a bench run.
    let salt = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    for source in NEW_SOURCES {
        let (mut mcp, mut cli, mut native) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..=rounds {
            let greeting = |way: &str| format!("hello, world {salt} {way} {round}");
            forget_functions();
            let started = Instant::now();
            let text = greeting("mcp");
            server
                .expect(
                    source.runtime,
                    &(source.program)(&text),
                    None,
                    &format!("{text}\n"),
                )
                .await;
            let through_mcp = started.elapsed();
            let file = dir.path().join(format!("prog.{}", source.ext));
            std::fs::write(&file, (source.program)(&greeting("cli"))).unwrap();
            forget_functions();
            let started = Instant::now();
            let out = Command::new(env!("CARGO_BIN_EXE_runbox"))
                .env("RUNBOX_CACHE_DIR", common::cache_dir())
                .args(["-q", "run", source.runtime])
                .arg(&file)
                .output()
                .expect("runbox run");
            let through_cli = started.elapsed();
            assert!(out.status.success(), "runbox run: {out:?}");
            std::fs::write(&file, (source.program)(&greeting("native"))).unwrap();
            let exe = dir.path().join("prog");
            let started = Instant::now();
            let built = Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "{} -O2 -o {} {} && {}",
                    source.native,
                    exe.display(),
                    file.display(),
                    exe.display()
                ))
                .output()
                .ok()
                .filter(|o| o.status.success());
            let natively = started.elapsed();
            // Round 0 warms up (the runtimes loaded, the native compiler in the page cache).
            if round > 0 {
                mcp.push(through_mcp);
                cli.push(through_cli);
                if built.is_some() {
                    native.push(natively);
                }
            }
        }
        let (mcp, cli) = (stats(&mut mcp).median, stats(&mut cli).median);
        if native.is_empty() {
            println!(
                "| {} | {mcp:.0} | {cli:.0} | {} not installed | - | - |",
                source.row, source.native
            );
        } else {
            let native = stats(&mut native).median;
            println!(
                "| {} | {mcp:.0} | {cli:.0} | {native:.0} ({} -O2) | {:.2} | {:.2} |",
                source.row,
                source.native,
                mcp / native,
                cli / native
            );
        }
    }
    println!();
}

/// The pure-Python CPU set (bench/python/): each program's `work()` timed inside the
/// interpreter, in runbox's python and in the machine's CPython, so that the ratio is the
/// interpreters' alone (no process start, no snapshot restore).
const PYTHON_CPU: &[(&str, &str)] = &[
    (
        "primes (first 5000, ×10)",
        include_str!("../../bench/python/primes.py"),
    ),
    ("nbody", include_str!("../../bench/python/nbody.py")),
    ("tasks", include_str!("../../bench/python/tasks.py")),
    (
        "json round trips",
        include_str!("../../bench/python/json_round.py"),
    ),
    (
        "regex compiles",
        include_str!("../../bench/python/regex_build.py"),
    ),
];

/// `program` with a line that prints `work()`'s result and its time in microseconds.
fn timed_work(program: &str) -> String {
    format!(
        "{program}\nimport time as _t\n_s = _t.perf_counter()\n_r = work()\nprint(_r, round((_t.perf_counter() - _s) * 1e6))\n"
    )
}

/// The microseconds a [`timed_work`] program printed last on its output.
fn work_micros(stdout: &str) -> f64 {
    stdout
        .split_whitespace()
        .last()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no time in {stdout:?}"))
}

/// The pure-Python set inside runbox and natively, side by side.
async fn pycpu(rounds: usize) {
    header(
        "Pure-Python CPU work inside the interpreter, beside native CPython",
        &["program", "runbox", "native", "ratio"],
    );
    let runbox = load(&["python"]);
    let python3 = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string());
    let mut ratios = Vec::new();
    for (name, program) in PYTHON_CPU {
        let code = timed_work(program);
        let mut inside = Vec::new();
        let mut native = Vec::new();
        // Alternated, so that both see the same load on this shared machine.
        for _ in 0..=rounds {
            let outcome = common::run(&runbox, "python", &code).await;
            inside.push(work_micros(&outcome.stdout()));
            if let Some(exe) = &python3 {
                let out = Command::new(exe)
                    .args(["-c", &code])
                    .output()
                    .expect("python3");
                native.push(work_micros(&String::from_utf8_lossy(&out.stdout)));
            }
        }
        // The first round of each warms up.
        let inside = median_of(&mut inside[1..].to_vec()) / 1000.0;
        match native.get(1..) {
            Some(rest) if !rest.is_empty() => {
                let native = median_of(&mut rest.to_vec()) / 1000.0;
                ratios.push(inside / native);
                println!(
                    "| {name} | {inside:.1} | {native:.1} | {:.2} |",
                    inside / native
                );
            }
            _ => println!("| {name} | {inside:.1} | - | - |"),
        }
    }
    if !ratios.is_empty() {
        let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        println!("\nGeometric mean of the ratios: {geo:.2}\n");
    }
}

fn median_of(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

/// Python hello runs per second with 1, 2, 8 and 32 concurrent callers.
async fn throughput() {
    let server = Arc::new(McpServer::start(&["--max-concurrent", "8", "--max-queued", "64"]).await);
    header(
        "Throughput: python hello through MCP",
        &["callers", "runs/s", "median", "p95"],
    );
    for callers in [1usize, 2, 8, 32] {
        let per_caller = (200 / callers).max(10);
        server.expect("python", "print(1)", None, "1\n").await;
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..callers {
            let server = server.clone();
            tasks.push(tokio::spawn(async move {
                let mut times = Vec::new();
                for _ in 0..per_caller {
                    let t = Instant::now();
                    server.expect("python", "print(1)", None, "1\n").await;
                    times.push(t.elapsed());
                }
                times
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        let wall = started.elapsed();
        let s = stats(&mut all);
        println!(
            "| {callers} | {:.0} | {:.1} | {:.1} |",
            all.len() as f64 / wall.as_secs_f64(),
            s.median,
            s.p95
        );
    }
    println!();
}

/// Per-call latency inside a session.
async fn session(rounds: usize) {
    let server = McpServer::start(&[]).await;
    header(
        "Inside a session (MCP round trip)",
        &["runtime", "median", "p95", "first call"],
    );
    let wanted = std::env::var("RUNTIMES").ok();
    for (runtime, define, call, out) in [
        ("python", "x = 41", "print(x + 1)", "42\n"),
        ("quickjs", "var x = 41;", "console.log(x + 1)", "42\n"),
        ("ruby", "x = 41", "puts x + 1", "42\n"),
        (
            "sqlite",
            "create table t(x); insert into t values (41);",
            "select x + 1 from t;",
            "42\n",
        ),
    ] {
        if wanted
            .as_deref()
            .is_some_and(|w| !w.split(',').any(|r| r == runtime))
        {
            continue;
        }
        let id = server.create_session(runtime).await;
        let first = Instant::now();
        server.expect_in(&id, define, "").await;
        let first = first.elapsed();
        let s = time(rounds, || server.expect_in(&id, call, out)).await;
        println!(
            "| {runtime} | {:.1} | {:.1} | {:.1} |",
            s.median,
            s.p95,
            ms(first)
        );
    }
    println!();
}

/// Ordinary runs with a pre-started interpreter and without (`RUNTIMES=a,b` picks the
/// runtimes, default ruby and python; `PAUSE_MS` the pause before each call, default 300).
async fn prestart(rounds: usize) {
    let wanted = std::env::var("RUNTIMES").unwrap_or_else(|_| "ruby,python".into());
    header(
        "Pre-started runs: hello (in-process)",
        &[
            "runtime",
            "pre-started: call median",
            "p95",
            "run (server side) median",
            "started per run: call median",
            "p95",
            "run (server side) median",
        ],
    );
    for runtime in wanted.split(',').map(str::to_string) {
        let (code, out) = match runtime.as_str() {
            "ruby" => ("puts 'hello, world'", "hello, world\n"),
            "python" => ("print('hello, world')", "hello, world\n"),
            other => panic!("no prestart hello for {other}"),
        };
        let with_prestart = |on: bool| {
            let runtime = runtime.clone();
            move || {
                let mut manifest = Manifest::builtin().expect("built-in plugins.toml");
                manifest.plugins.get_mut(&runtime).unwrap().prestart = on;
                load_from(manifest, &[runtime.as_str()])
            }
        };
        let warm = tokio::task::spawn_blocking(with_prestart(true))
            .await
            .unwrap();
        let cold = tokio::task::spawn_blocking(with_prestart(false))
            .await
            .unwrap();
        // A pause between runs lets the next interpreter start, as between real calls;
        // both sides pause, so that neither finds the machine busier.
        let pause = Duration::from_millis(
            std::env::var("PAUSE_MS")
                .ok()
                .and_then(|p| p.parse().ok())
                .unwrap_or(300),
        );
        // The whole call, and the run as the server times it (`duration_ms`).
        let timed = |runbox: Arc<Runbox>| {
            let runtime = runtime.clone();
            async move {
                let (mut calls, mut runs) = (Vec::new(), Vec::new());
                for round in 0..=rounds {
                    tokio::time::sleep(pause).await;
                    let started = Instant::now();
                    let outcome = common::run(&runbox, &runtime, code).await;
                    let call = started.elapsed();
                    assert_eq!(outcome.stdout(), out, "{runtime}: {outcome:?}");
                    if round > 0 {
                        calls.push(call);
                        runs.push(outcome.duration);
                    }
                }
                (stats(&mut calls), stats(&mut runs))
            }
        };
        let with = timed(warm).await;
        // `PRESTART_ONLY=1` skips the runs started per run (to profile the others alone).
        if std::env::var_os("PRESTART_ONLY").is_some() {
            println!(
                "| {runtime} | {:.2} | {:.2} | {:.2} | - | - | - |",
                with.0.median, with.0.p95, with.1.median
            );
            continue;
        }
        let without = timed(cold).await;
        println!(
            "| {runtime} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            with.0.median,
            with.0.p95,
            with.1.median,
            without.0.median,
            without.0.p95,
            without.1.median
        );
    }
    println!();
}

/// The server's resident memory idle with every runtime loaded (before any call, and
/// after one call in each), and at 32 runs at once.
async fn memory() {
    let server = Arc::new(McpServer::start(&["--max-concurrent", "32"]).await);
    // Preparation loads every runtime from the cache in well under this.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let loaded = Rss::of(&server);
    for (runtime, code) in HELLO {
        server.expect(runtime, code, None, "hello, world\n").await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle = Rss::of(&server);
    let mut tasks = Vec::new();
    let busy = "import time\nt = time.time()\nwhile time.time() - t < 1.5:\n    pass\nprint(1)";
    for _ in 0..32 {
        let server = server.clone();
        tasks.push(tokio::spawn(async move {
            server.expect("python", busy, None, "1\n").await
        }));
    }
    let mut peak = Rss::default();
    while tasks.iter().any(|t| !t.is_finished()) {
        let now = Rss::of(&server);
        if now.total > peak.total {
            peak = now;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = Rss::of(&server);
    header(
        "Server memory (RSS, MiB)",
        &[
            "state",
            "total",
            "anonymous",
            "mapped files",
            "shared memory",
        ],
    );
    for (state, rss) in [
        ("idle, every runtime loaded, before any call", loaded),
        ("idle, every runtime used once", idle),
        ("32 python runs at once (peak)", peak),
        ("idle again, 2 s after those runs", after),
    ] {
        println!(
            "| {state} | {:.0} | {:.0} | {:.0} | {:.0} |",
            mib(rss.total),
            mib(rss.anon),
            mib(rss.file),
            mib(rss.shmem)
        );
    }
    println!();
}

/// The server's resident memory and its parts, in KiB.
#[derive(Default, Clone, Copy)]
struct Rss {
    total: u64,
    anon: u64,
    file: u64,
    shmem: u64,
}

impl Rss {
    fn of(server: &McpServer) -> Rss {
        Rss {
            total: server.status_kib("VmRSS"),
            anon: server.status_kib("RssAnon"),
            file: server.status_kib("RssFile"),
            shmem: server.status_kib("RssShmem"),
        }
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Process start to first result: `runbox run` with the compiled cache warm, and with it
/// empty (artifacts fetched, nothing compiled) for the runtimes that compile quickly.
fn cold() {
    header(
        "Cold start: `runbox run` process to first result",
        &["runtime", "compiled cache warm", "compiled cache empty"],
    );
    let cache = common::cache_dir();
    for (runtime, code) in HELLO {
        let warm = process_median(&cache, runtime, code, 5);
        let empty = if matches!(*runtime, "quickjs" | "php-cgi" | "ruby") {
            let dir = tempfile::tempdir().unwrap();
            // Artifacts and mounts only: what `plugins fetch` leaves before compiling.
            for part in ["artifacts", "packages", "mounts"] {
                let _ = Command::new("cp")
                    .arg("-al")
                    .arg(cache.join(part))
                    .arg(dir.path().join(part))
                    .status();
            }
            format!("{:.0}", process_median(dir.path(), runtime, code, 1))
        } else {
            "(minutes: see README)".into()
        };
        println!("| {runtime} | {warm:.0} | {empty} |");
    }
    println!();
}

fn process_median(cache: &std::path::Path, runtime: &str, code: &str, rounds: usize) -> f64 {
    let mut times = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        let out = common::output_with_stdin(
            Command::new(env!("CARGO_BIN_EXE_runbox"))
                .args(["--quiet", "run", runtime, "-"])
                .env("RUNBOX_CACHE_DIR", cache),
            code,
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "hello, world\n",
            "{runtime}"
        );
        times.push(started.elapsed());
    }
    stats(&mut times).median
}

/// CPython run natively on `code`: the interpreter itself, not a version manager's shim
/// script in front of it (pyenv's adds ~100 ms per start here).
fn native_python(code: &str, rounds: usize) -> Option<f64> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let exe = String::from_utf8(out.stdout).ok()?.trim().to_string();
    native_median(&[exe.as_str(), "-c", code], rounds)
}

/// The median wall time of a native command, if it can run.
fn native_median(argv: &[&str], rounds: usize) -> Option<f64> {
    let run = || {
        Command::new(argv[0])
            .args(&argv[1..])
            .output()
            .ok()
            .filter(|o| o.status.success())
    };
    run()?;
    let mut times = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        run()?;
        times.push(started.elapsed());
    }
    Some(stats(&mut times).median)
}

/// `code` written to `dir/prog.EXT`.
fn write_program(dir: &std::path::Path, ext: &str, code: &str) -> Option<std::path::PathBuf> {
    let src = dir.join(format!("prog.{ext}"));
    std::fs::write(&src, code).ok()?;
    Some(src)
}

/// A native compile (with `-O2`) and run, timed together like runbox's compile+run.
fn native_compiled(
    dir: &std::path::Path,
    compiler: &str,
    ext: &str,
    code: &str,
    rounds: usize,
) -> Option<f64> {
    let src = write_program(dir, ext, code)?;
    let exe = dir.join(format!("prog-{ext}"));
    let script = format!(
        "{compiler} -O2 -o {} {} && {}",
        exe.display(),
        src.display(),
        exe.display()
    );
    native_median(&["sh", "-c", &script], rounds)
}

fn native_script(
    dir: &std::path::Path,
    interpreter: &str,
    ext: &str,
    code: &str,
    rounds: usize,
) -> Option<f64> {
    let src = write_program(dir, ext, code)?;
    native_median(&[interpreter, src.to_str()?], rounds)
}
