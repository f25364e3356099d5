//! Which compiler should compile the programs a plugin produces (C, C++)? Cranelift
//! (optimizing, or not) against Winch, wasmtime's baseline compiler: the cost of compiling
//! a fresh program against the speed of what it produces.
//!
//! `cargo bench --bench program_compiler` (`-- ROUNDS`, default 5). For each compiler, with
//! clang and the sysroot warm: a CPU-bound C program (recursive fib + a sieve) compiled
//! fresh each round (a salt makes every program new) and run again from the cache; and a
//! pathological program (one function with N live call results) to show how compile
//! time grows. Not a test: it prints the numbers.

mod common;

use std::time::{Duration, Instant};

use common::ms;

use runbox::engine::ProgramCompiler;
use runbox::manifest::Manifest;
use runbox::plugin::artifact::{Cache, Progress};
use runbox::service::{LimitOverrides, RunRequest, Runbox, RunboxOptions};
use runbox::service::{RunOutcome, RunStatus};
use tokio_util::sync::CancellationToken;

const CPU_BOUND: &str = r#"#include <stdio.h>
#include <string.h>
static const char *salt = "SALT";
static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
static char sieve[5000000];
int main(void) {
    int count = 0;
    memset(sieve, 1, sizeof sieve);
    for (int i = 2; i < (int)sizeof sieve; i++)
        if (sieve[i]) { count++; for (int j = 2 * i; j < (int)sizeof sieve; j += i) sieve[j] = 0; }
    printf("%d %d %d\n", fib(32), count, salt[0] != 0);
    return 0;
}
"#;

/// One function with `n` call results live at once: cheap for clang, hard for a
/// register allocator.
fn pathological(n: usize) -> String {
    format!(
        "__asm__(\".functype g () -> (i32)\\n.globl big\\n.type big,@function\\nbig:\\n\
         .functype big () -> (i32)\\n.rept {n}\\ncall g\\n.endr\\n.rept {}\\ni32.add\\n.endr\\n\
         end_function\\n\");\nint g(void) {{ return 1; }}\nint big(void);\n\
         int main(void) {{ return big() == {n} ? 0 : 1; }}\n",
        n - 1
    )
}

fn main() {
    runbox::service::quiet_error_backtraces();
    let rounds = common::rounds(5);
    let manifest = Manifest::builtin().expect("built-in plugins.toml");
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    let salt = std::process::id();
    println!(
        "{rounds} rounds; medians (fresh = compile + run of a new program; cached = run only)"
    );
    println!(
        "{:<22} {:>12} {:>12} {:>14} {:>16} {:>16}",
        "compiler", "fresh ms", "cached ms", "compile ≈ ms", "patho 2000 ms", "patho 8000 ms"
    );
    for compiler in ProgramCompiler::ALL {
        let options = RunboxOptions {
            only: vec!["clang".into()],
            compiler_exe: Some(env!("CARGO_BIN_EXE_runbox").into()),
            program_compiler: compiler,
            ..RunboxOptions::default()
        };
        let runbox = Runbox::load(
            &manifest,
            &Cache::at(common::cache_dir()),
            options,
            &Progress::hidden(),
        )
        .expect("load clang");
        let run = |code: String| -> (Duration, RunOutcome) {
            let request = RunRequest {
                runtime: "clang".into(),
                code,
                limits: LimitOverrides {
                    timeout: Some(Duration::from_secs(60)),
                    memory_bytes: None,
                    max_timeout: None,
                },
                ..RunRequest::default()
            };
            let started = Instant::now();
            let out = rt
                .block_on(runbox.run(request, CancellationToken::new()))
                .expect("run");
            (started.elapsed(), out)
        };
        let check = |out: &RunOutcome| {
            assert!(
                out.status == RunStatus::Completed && out.exit_code == Some(0),
                "{}: {out:?}",
                compiler.name()
            )
        };
        let mut fresh = Vec::new();
        let mut cached = Vec::new();
        for round in 0..rounds {
            let code = CPU_BOUND.replace("SALT", &format!("{salt}-{}-{round}", compiler.name()));
            let (took, out) = run(code.clone());
            check(&out);
            fresh.push(took);
            let (took, out) = run(code);
            check(&out);
            cached.push(took);
        }
        let patho = |n: usize| {
            let (took, out) = run(pathological(n)
                .replace("int g", &format!("/* {salt} {} */ int g", compiler.name())));
            if out.status == RunStatus::Completed {
                format!("{:.0}", ms(took))
            } else {
                out.status.as_str().to_string()
            }
        };
        let (fresh, cached) = (common::median(&mut fresh), common::median(&mut cached));
        println!(
            "{:<22} {:>12.1} {:>12.1} {:>14.1} {:>16} {:>16}",
            compiler.name(),
            ms(fresh),
            ms(cached),
            ms(fresh.saturating_sub(cached)),
            patho(2000),
            patho(8000)
        );
    }
}
