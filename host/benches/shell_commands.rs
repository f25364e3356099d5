//! The shell as the hub (docs/plugins.md, "Runtimes as commands"): what a runtime command inside a shell pipeline costs,
//! beside the same runtime called directly.
//!
//! `cargo bench --bench shell_commands [-- ROUNDS]` (default 9 rounds, taken in turn, one
//! of each kind per round). Each row is one run_code call through the library with a warm
//! cache (compiled programs cached too, as for any repeated program):
//!
//! - `python gen.py | sort -n | tail -3` in `shell`, beside `gen.py` run by `python`;
//! - `sqlite3 t.db < q.sql | wc -l` in `shell`, beside `q.sql` run by `sqlite`;
//! - `cc -O2 p.c -o p && ./p 10` in `shell`, beside `p.c` run by `clang`;
//! - `ls *.csv | xargs -n1 python stats.py` (two files) in `shell`, beside `stats.py` run
//!   once by `python`.
//!
//! Prints a markdown table (bench/RESULTS.md's "Runtime commands in the shell").

mod common;

use std::time::{Duration, Instant};

use common::{median, ms};
use runbox::manifest::Manifest;
use runbox::service::RunStatus;
use runbox::service::{LimitOverrides, RunRequest, Runbox, RunboxOptions};
use tokio_util::sync::CancellationToken;

const GEN: &str = "for n in range(1, 2001):\n    print(n * n % 1009)\n";
const SQL: &str = "create table t(x);\nwith recursive c(n) as (select 1 union all select n + 1 from c where n < 1000) insert into t select n from c;\nselect x * 2 from t where x % 7 = 0;\n";
const C: &str = "#include <stdio.h>\n#include <stdlib.h>\nint main(int argc, char **argv) {\n    long n = argc > 1 ? atol(argv[1]) : 10, a = 0, b = 1;\n    for (long i = 0; i < n; i++) { long t = a + b; a = b; b = t; }\n    printf(\"%ld\\n\", a);\n    return 0;\n}\n";
const STATS: &str = "import sys\npath = sys.argv[1] if len(sys.argv) > 1 else 'a.csv'\nprint(path, sum(int(x) for x in open(path).read().split()))\n";

/// One row: the shell's command line, and the direct run it is measured beside.
struct Case {
    name: &'static str,
    shell: &'static str,
    direct_runtime: &'static str,
    direct_code: &'static str,
    files: &'static [(&'static str, &'static str)],
}

const CASES: &[Case] = &[
    Case {
        name: "`python gen.py | sort -n | tail -3`",
        shell: "python gen.py | sort -n | tail -3",
        direct_runtime: "python",
        direct_code: GEN,
        files: &[("gen.py", GEN)],
    },
    Case {
        name: "`sqlite3 t.db < q.sql | wc -l`",
        shell: "sqlite3 t.db < q.sql | wc -l",
        direct_runtime: "sqlite",
        direct_code: SQL,
        files: &[("q.sql", SQL)],
    },
    Case {
        name: "`cc -O2 p.c -o p && ./p 10`",
        shell: "cc -O2 p.c -o p && ./p 10",
        direct_runtime: "clang",
        direct_code: C,
        files: &[("p.c", C)],
    },
    Case {
        name: "`ls *.csv | xargs -n1 python stats.py` (2 files)",
        shell: "ls *.csv | xargs -n1 python stats.py",
        direct_runtime: "python",
        direct_code: STATS,
        files: &[
            ("stats.py", STATS),
            ("a.csv", "1\n2\n"),
            ("b.csv", "3\n4\n"),
        ],
    },
];

fn main() {
    runbox::service::quiet_error_backtraces();
    let rounds = common::rounds(9);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(bench(rounds));
}

async fn bench(rounds: usize) {
    let runbox = tokio::task::block_in_place(|| {
        common::load_with(
            Manifest::builtin().expect("built-in plugins.toml"),
            RunboxOptions {
                only: ["shell", "python", "sqlite", "clang"]
                    .map(String::from)
                    .to_vec(),
                ..RunboxOptions::default()
            },
        )
    });
    // Warm: the compiled C program cached, the interpreters' first instances made.
    for case in CASES {
        run(&runbox, "shell", case.shell, case.files).await;
        run(&runbox, case.direct_runtime, case.direct_code, case.files).await;
    }
    let mut shell = vec![Vec::new(); CASES.len()];
    let mut direct = vec![Vec::new(); CASES.len()];
    for _ in 0..rounds {
        for (i, case) in CASES.iter().enumerate() {
            shell[i].push(run(&runbox, "shell", case.shell, case.files).await);
            direct[i].push(run(&runbox, case.direct_runtime, case.direct_code, case.files).await);
        }
    }
    println!("## Runtime commands in the shell\n");
    println!(
        "One run_code call each, in-process, warm; {rounds} rounds taken in turn; median ms.\n"
    );
    println!("| shell command line | in `shell` | the runtime directly | ratio |");
    println!("| --- | --- | --- | --- |");
    for (i, case) in CASES.iter().enumerate() {
        let (s, d) = (ms(median(&mut shell[i])), ms(median(&mut direct[i])));
        println!(
            "| {} | {s:.1} | {d:.1} (`{}`) | {:.2}× |",
            case.name,
            case.direct_runtime,
            s / d
        );
    }
}

/// One completed run with exit 0: how long the call took.
async fn run(runbox: &Runbox, runtime: &str, code: &str, files: &[(&str, &str)]) -> Duration {
    let started = Instant::now();
    let outcome = runbox
        .run(
            RunRequest {
                runtime: runtime.into(),
                code: code.into(),
                files: files
                    .iter()
                    .map(|(n, t)| (n.to_string(), t.as_bytes().to_vec()))
                    .collect(),
                limits: LimitOverrides {
                    timeout: Some(Duration::from_secs(60)),
                    ..LimitOverrides::default()
                },
                ..RunRequest::default()
            },
            CancellationToken::new(),
        )
        .await
        .expect("run");
    let took = started.elapsed();
    assert!(
        outcome.status == RunStatus::Completed && outcome.exit_code == Some(0),
        "{runtime}: {code}: {outcome:?}\n{}",
        outcome.tty()
    );
    took
}
