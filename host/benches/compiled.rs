//! How long a C or C++ program takes from source to output: compile, link and run inside
//! the sandbox, with every cache warm (the compiler compiled by Cranelift once, the
//! produced program componentized and compiled once by its content hash).
//!
//! `cargo bench --bench compiled` (or `-- ROUNDS` for another number of rounds). Not a
//! test: it only prints the numbers. Set `RUNBOX_CACHE_DIR` to share the tests' cache
//! (default `target/runbox-cache`).

mod common;

use std::time::{Duration, Instant};

use runbox::manifest::Manifest;
use runbox::plugin::artifact::{Cache, Progress};
use runbox::service::RunStatus;
use runbox::service::{RunRequest, Runbox, RunboxOptions};
use tokio_util::sync::CancellationToken;

/// What is measured: a name, the runtime, the program and its exact expected output.
const CASES: &[(&str, &str, &str, &str)] = &[
    (
        "C hello (compile+link+run)",
        "clang",
        "#include <stdio.h>\n\nint main(void) {\n    printf(\"hello, world\\n\");\n    return 0;\n}\n",
        "hello, world\n",
    ),
    (
        "C++ <iostream> hello (compile+link+run)",
        "clangpp",
        "#include <iostream>\n\nint main() {\n    std::cout << \"hello, world\" << std::endl;\n}\n",
        "hello, world\n",
    ),
];

/// The targets the printout compares with: a C hello within 400 ms, C++ within 2 s
/// (bench/RESULTS.md).
const TARGETS: &[Duration] = &[Duration::from_millis(400), Duration::from_millis(2000)];

fn main() {
    runbox::service::quiet_error_backtraces();
    let rounds = common::rounds(10);
    let manifest = Manifest::builtin().expect("built-in plugins.toml");
    let options = RunboxOptions {
        only: vec!["clang".into(), "clangpp".into()],
        compiler_exe: Some(env!("CARGO_BIN_EXE_runbox").into()),
        ..RunboxOptions::default()
    };
    let started = Instant::now();
    let runbox = Runbox::load(
        &manifest,
        &Cache::at(common::cache_dir()),
        options,
        &Progress::stderr(),
    )
    .expect("load the clang runtimes");
    println!("loaded clang and clangpp in {:.2?}", started.elapsed());

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!("{rounds} rounds each, after one warm-up run");
    for ((name, runtime, code, expected), target) in CASES.iter().zip(TARGETS) {
        let run = || {
            let request = RunRequest {
                runtime: runtime.to_string(),
                code: code.to_string(),
                ..RunRequest::default()
            };
            let started = Instant::now();
            let out = rt
                .block_on(runbox.run(request, CancellationToken::new()))
                .expect("run");
            let took = started.elapsed();
            assert!(
                out.status == RunStatus::Completed && out.stdout() == *expected,
                "{name}: {out:?}"
            );
            took
        };
        run(); // warm-up: the produced program is compiled and cached here
        let mut times: Vec<Duration> = (0..rounds).map(|_| run()).collect();
        let median = common::median(&mut times);
        println!(
            "{name:<42} median {:>7.1} ms  min {:>7.1} ms  max {:>7.1} ms  (target ≤ {} ms: {})",
            common::ms(median),
            common::ms(times[0]),
            common::ms(times[rounds - 1]),
            target.as_millis(),
            if median <= *target { "met" } else { "MISSED" }
        );
    }
}
