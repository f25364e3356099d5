//! C (`clang`) and C++ (`clangpp`) end to end: the program is compiled by clang and linked
//! by wasm-ld inside the sandbox, then run there. The samples in plugins.toml are checked
//! by tests/all/runtimes.rs; these are the rest: what C and C++ programs
//! commonly need (docs/runtimes.md, "C and C++").

use std::time::{Duration, Instant};

use crate::common::{run_with, runbox};
use runbox::service::{LimitOverrides, RunRequest};
use runbox::service::{RunOutcome, RunStatus};

/// The deadline of these runs: compiling C++ takes seconds (a program using half the
/// standard library ~3.5 s on one core), and the tests run in parallel.
const DEADLINE: Duration = Duration::from_secs(30);

async fn run(runtime: &str, code: &str) -> RunOutcome {
    run_with(runtime, code, None, Some(DEADLINE)).await
}

/// Asserts a completed run with `exit_code` and exactly `stdout`.
fn assert_output(out: &RunOutcome, exit_code: i32, stdout: &str) {
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.exit_code, Some(exit_code), "{out:?}");
    assert_eq!(out.stdout(), stdout, "{out:?}");
}

const C_HELLO: &str = r#"#include <stdio.h>

int main(void) {
    printf("hello, world\n");
    return 0;
}
"#;

const CPP_HELLO: &str = r#"#include <iostream>

int main() {
    std::cout << "hello, world" << std::endl;
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_world_in_c_and_cpp() {
    assert_output(&run("clang", C_HELLO).await, 0, "hello, world\n");
    assert_output(&run("clangpp", CPP_HELLO).await, 0, "hello, world\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_language_standards_come_from_plugins_toml() {
    let c = "#include <stdio.h>\nint main(void) { printf(\"%ld\\n\", __STDC_VERSION__); }\n";
    assert_output(&run("clang", c).await, 0, "201710\n");
    let cpp = "#include <cstdio>\nint main() { std::printf(\"%ld\\n\", __cplusplus); }\n";
    assert_output(&run("clangpp", cpp).await, 0, "202002\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn programs_read_stdin() {
    let c = r#"#include <stdio.h>

int main(void) {
    char line[64];
    int n = 0;
    long sum = 0;
    while (fgets(line, sizeof line, stdin)) {
        long x;
        if (sscanf(line, "%ld", &x) == 1) { sum += x; n++; }
    }
    printf("%d numbers, sum %ld\n", n, sum);
    return 0;
}
"#;
    let out = run_with("clang", c, Some("1\n2\n39\n"), Some(DEADLINE)).await;
    assert_output(&out, 0, "3 numbers, sum 42\n");

    let cpp = r#"#include <iostream>
#include <string>

int main() {
    std::string word;
    int count = 0;
    while (std::cin >> word) count++;
    std::cout << count << " words\n";
}
"#;
    let out = run_with(
        "clangpp",
        cpp,
        Some("the quick brown\nfox\n"),
        Some(DEADLINE),
    )
    .await;
    assert_output(&out, 0, "4 words\n");
    // No stdin: end of input at once.
    assert_output(&run("clangpp", cpp).await, 0, "0 words\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn programs_get_their_arguments() {
    let c = r#"#include <stdio.h>

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) printf("%s\n", argv[i]);
    return argc;
}
"#;
    let out = runbox()
        .run(
            RunRequest {
                runtime: "clang".into(),
                code: c.into(),
                args: vec!["one".into(), "two words".into()],
                limits: LimitOverrides {
                    timeout: Some(DEADLINE),
                    memory_bytes: None,
                    max_timeout: None,
                },
                ..RunRequest::default()
            },
            Default::default(),
        )
        .await
        .unwrap();
    assert_output(&out, 3, "one\ntwo words\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_code_3_is_kept() {
    let c = "#include <stdlib.h>\nint main(void) { exit(3); }\n";
    assert_output(&run("clang", c).await, 3, "");
    let cpp = "#include <iostream>\nint main() { std::cout << \"bye\\n\"; return 3; }\n";
    assert_output(&run("clangpp", cpp).await, 3, "bye\n");
}

/// A compile error is a completed run with a non-zero exit and clang's diagnostics,
/// naming the file as the user knows it and without colour codes.
fn assert_compile_error(out: &RunOutcome, file: &str, message: &str) {
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_ne!(out.exit_code, Some(0), "{out:?}");
    assert_eq!(out.stdout(), "", "{out:?}");
    for text in [out.stderr().into_owned(), out.tty()] {
        assert!(text.contains(&format!("{file}:")), "{out:?}");
        assert!(text.contains("error:"), "{out:?}");
        assert!(text.contains(message), "{out:?}");
        assert!(!text.contains("\x1b["), "colour codes in {text:?}");
        // The scratch directory is `/`: no absolute path to it, no host path.
        assert!(!text.contains(&format!("/{file}")), "{out:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compile_errors_are_diagnostics_not_failures() {
    let c = "#include <stdio.h>\n\nint main(void) {\n    int x = \"text\" * 2;\n    return x;\n}\n";
    let out = run("clang", c).await;
    assert_compile_error(&out, "main.c", "main.c:4:20: error: invalid operands");

    let cpp =
        "#include <vector>\n\nint main() {\n    std::vector<int> v;\n    v.push_front(1);\n}\n";
    let out = run("clangpp", cpp).await;
    assert_compile_error(
        &out,
        "main.cpp",
        "main.cpp:5:7: error: no member named 'push_front'",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_errors_are_diagnostics_too() {
    let c = "void missing(void);\n\nint main(void) {\n    missing();\n    return 0;\n}\n";
    let out = run("clang", c).await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_ne!(out.exit_code, Some(0), "{out:?}");
    assert!(
        out.stderr().contains("undefined symbol: missing"),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warnings_show_and_the_program_still_runs() {
    let c = "#include <stdio.h>\n\nint main(void) {\n    int unused;\n    printf(\"%d\\n\", 7);\n    return 0;\n}\n";
    let out = run("clang", c).await;
    assert_output(&out, 0, "7\n");
    assert!(
        out.stderr()
            .contains("main.c:4:9: warning: unused variable 'unused'"),
        "{out:?}"
    );
    assert!(!out.tty().contains("\x1b["), "{out:?}");

    let cpp = "#include <cstdio>\n\nint main() {\n    int x = 0;\n    if (x = 5) std::puts(\"five\");\n}\n";
    let out = run("clangpp", cpp).await;
    assert_output(&out, 0, "five\n");
    assert!(
        out.stderr()
            .contains("main.cpp:5:11: warning: using the result of an assignment as a condition"),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_is_a_crash_or_a_failure() {
    let c = "#include <stdio.h>\n#include <stdlib.h>\n\nint main(void) {\n    puts(\"before\");\n    fflush(stdout);\n    abort();\n}\n";
    let out = run("clang", c).await;
    let failed = match out.status {
        RunStatus::Crashed => true,
        RunStatus::Completed => out.exit_code != Some(0),
        _ => false,
    };
    assert!(failed, "{out:?}");
    assert_eq!(out.stdout(), "before\n", "{out:?}");

    // An exception nobody catches ends the program as natively: libc++abi's message and
    // the exit status of an abort.
    let cpp =
        "#include <vector>\n\nint main() {\n    std::vector<int> v(3);\n    return v.at(5);\n}\n";
    let out = run("clangpp", cpp).await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.exit_code, Some(134), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.output.stderr)
            .contains("uncaught exception of type std::out_of_range"),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_5000_primes_in_c() {
    let c = r#"#include <stdio.h>
#include <stdbool.h>

int main(void) {
    static int primes[5000];
    int count = 0;
    for (int n = 2; count < 5000; n++) {
        bool prime = true;
        for (int i = 0; i < count && primes[i] * primes[i] <= n; i++) {
            if (n % primes[i] == 0) { prime = false; break; }
        }
        if (prime) primes[count++] = n;
    }
    long sum = 0;
    for (int i = 0; i < count; i++) sum += primes[i];
    printf("count %d\nlast %d\nsum %ld\n", count, primes[count - 1], sum);
    return 0;
}
"#;
    assert_output(
        &run("clang", c).await,
        0,
        "count 5000\nlast 48611\nsum 114455259\n",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cpp_standard_library_gives_exact_output() {
    let cpp = r#"#include <algorithm>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

int main() {
    std::istringstream text("the cat and the dog and the bird");
    std::map<std::string, int> counts;
    std::string word;
    while (text >> word) counts[word]++;

    std::vector<std::pair<std::string, int>> sorted(counts.begin(), counts.end());
    std::sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    for (const auto &[w, n] : sorted) {
        std::cout << std::left << std::setw(6) << w << '|' << std::right << std::setw(3) << n << '\n';
    }

    std::vector<double> values{3.14159, 2.71828, 1.41421};
    std::ostringstream out;
    out << std::fixed << std::setprecision(2);
    for (double v : values) out << v << ' ';
    std::string joined = out.str();
    joined.pop_back();
    std::reverse(joined.begin(), joined.end());
    std::cout << '[' << joined << "]\n";
    std::cout << std::hex << std::setfill('0') << std::setw(8) << 48879 << '\n';
}
"#;
    let expected =
        "the   |  3\nand   |  2\nbird  |  1\ncat   |  1\ndog   |  1\n[14.1 27.2 41.3]\n0000beef\n";
    assert_output(&run("clangpp", cpp).await, 0, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infinite_loops_time_out() {
    let c = "int main(void) {\n    volatile unsigned long n = 0;\n    for (;;) n++;\n}\n";
    let started = Instant::now();
    let out = run_with("clang", c, None, Some(Duration::from_secs(3))).await;
    let took = started.elapsed();
    assert_eq!(out.status, RunStatus::Timeout, "{out:?}");
    assert_eq!(out.exit_code, None, "{out:?}");
    assert!(
        out.error.as_deref().unwrap_or("").contains("time"),
        "{out:?}"
    );
    assert!(took >= Duration::from_secs(3), "stopped early: {took:?}");
    // The run's own time, less the compile's (queueing for a slot of the shared runbox
    // counts in `took`, and the compile has a budget of its own).
    let ran = out.duration.saturating_sub(out.build_time);
    assert!(
        ran < Duration::from_secs(4),
        "stopped late: {ran:?} ({took:?} in all)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malloc_bombs_hit_the_memory_cap() {
    // Allocating through a volatile pointer keeps clang from removing the unused blocks
    // (and assuming malloc never fails).
    let c = r#"#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    void *(*volatile allocate)(size_t) = malloc;
    size_t total = 0;
    for (;;) {
        char *block = allocate(16 << 20);
        if (!block) {
            fprintf(stderr, "malloc failed after %zu MiB\n", total >> 20);
            return 1;
        }
        memset(block, 1, 16 << 20);
        total += 16 << 20;
    }
}
"#;
    let out = run_with("clang", c, None, Some(DEADLINE)).await;
    let stopped_by_cap = match out.status {
        RunStatus::Completed => out.exit_code != Some(0),
        RunStatus::Terminated => out.error.as_deref().unwrap_or("").contains("memory"),
        _ => false,
    };
    assert!(stopped_by_cap, "{out:?}");
    // The cap is the run's (512 MiB by default), not wasm32's 4 GiB.
    if out.status == RunStatus::Completed {
        assert!(out.stderr().contains("malloc failed after"), "{out:?}");
        let mib: usize = out
            .stderr()
            .split_whitespace()
            .nth(3)
            .unwrap()
            .parse()
            .unwrap();
        assert!(mib < 512, "{out:?}");
    }
    // The host is unharmed.
    assert_output(&run("clang", C_HELLO).await, 0, "hello, world\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_files_cannot_be_included() {
    for (runtime, code) in [
        (
            "clang",
            "#include \"/etc/passwd\"\nint main(void) { return 0; }\n",
        ),
        ("clangpp", "#include </etc/passwd>\nint main() {}\n"),
        (
            "clang",
            "#include \"../../../../etc/passwd\"\nint main(void) { return 0; }\n",
        ),
    ] {
        let out = run(runtime, code).await;
        assert_eq!(out.status, RunStatus::Completed, "{runtime}: {out:?}");
        assert_ne!(out.exit_code, Some(0), "{runtime}: {out:?}");
        assert!(out.stderr().contains("fatal error:"), "{runtime}: {out:?}");
        assert!(!out.tty().contains("root:"), "{runtime}: {out:?}");
    }
    // Nor read at run time.
    let c = "#include <stdio.h>\nint main(void) {\n    FILE *f = fopen(\"/etc/passwd\", \"r\");\n    puts(f ? \"opened\" : \"no such file\");\n    return 0;\n}\n";
    assert_output(&run("clang", c).await, 0, "no such file\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn math_with_libm() {
    // `volatile` keeps the compiler from folding the calls: libm really runs.
    let c = r#"#include <math.h>
#include <stdio.h>

int main(void) {
    volatile double two = 2.0, ten = 10.0, angle = 0.5;
    printf("%.10f\n", sqrt(two));
    printf("%.1f\n", pow(two, ten));
    printf("%.6f\n", sin(angle) * sin(angle) + cos(angle) * cos(angle));
    printf("%.6f\n", log(exp(ten)));
    return 0;
}
"#;
    assert_output(
        &run("clang", c).await,
        0,
        "1.4142135624\n1024.0\n1.000000\n10.000000\n",
    );
    let cpp = "#include <cmath>\n#include <iostream>\n#include <iomanip>\n\nint main() {\n    volatile double x = 81.0;\n    std::cout << std::setprecision(12) << std::sqrt(x) << ' ' << std::cbrt(x * 9) << ' ' << std::hypot(3.0, x / 20.25) << '\\n';\n}\n";
    assert_output(&run("clangpp", cpp).await, 0, "9 9 5\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn programs_have_an_8_mib_stack() {
    // wasm-ld's default stack is 64 KiB; plugins.toml asks for 8 MiB, like Linux.
    let c = r#"#include <stdio.h>
#include <string.h>

static long depth(int n) {
    volatile char frame[256];
    frame[0] = 1;
    return n == 0 ? frame[0] : frame[0] + depth(n - 1);
}

int main(void) {
    volatile char big[4 << 20];
    memset((char *)big, 7, sizeof big);
    long sum = 0;
    for (size_t i = 0; i < sizeof big; i += 4096) sum += big[i];
    printf("%ld %ld\n", sum, depth(5000));
    return 0;
}
"#;
    assert_output(&run("clang", c).await, 0, "7168 5001\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stack_overflow_is_a_crash() {
    let c = "static int down(volatile int n) {\n    volatile char frame[1024];\n    frame[0] = (char)n;\n    return down(n + 1) + frame[0];\n}\n\nint main(void) {\n    return down(0);\n}\n";
    let out = run("clang", c).await;
    assert_eq!(out.status, RunStatus::Crashed, "{out:?}");
}

/// A C++ program compiled anew leaves its compiled functions in the programs' pack
/// (host/src/engine/function_pack.rs), so the next new program does not compile libc++'s
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_programs_keep_their_compiled_functions_for_the_next() {
    let programs = crate::common::cache_dir().join("compiled/programs");
    let packs = || -> Vec<(std::path::PathBuf, u64)> {
        std::fs::read_dir(&programs)
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        name.starts_with("functions-cranelift-") && !name.contains("unoptimized")
                    })
                    .map(|e| (e.path(), e.metadata().map(|m| m.len()).unwrap_or(0)))
                    .collect()
            })
            .unwrap_or_default()
    };
    // New text (nothing compiled before answers it), using a part of libc++ only it uses.
    let unique = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let code = format!(
        "#include <iostream>\n#include <iomanip>\nint main() {{ std::cout << std::setw(24) << {unique}ULL << std::endl; }}\n"
    );
    assert_output(&run("clangpp", &code).await, 0, &format!("{unique:>24}\n"));
    let kept = packs();
    assert_eq!(
        kept.len(),
        1,
        "one pack per compiler and wasmtime: {kept:?}"
    );
    assert!(
        kept[0].1 > 100_000,
        "libc++'s functions are in it: {kept:?}"
    );
}

/// Programs written for g++ often start with `#include <bits/stdc++.h>`, which libc++ has
/// not: runbox's sysroot has one (plugins.toml, `[[plugins.clangpp.derived]]`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bits_stdcpp_h_includes_the_whole_standard_library() {
    let code = "#include <bits/stdc++.h>\nusing namespace std;\nint main() {\n    vector<int> v{3, 1, 2};\n    sort(v.begin(), v.end());\n    map<string, int> m{{\"a\", 1}};\n    cout << v[0] << m[\"a\"] << regex_match(\"123\", regex(\"[0-9]+\")) << bitset<3>(5) << endl;\n}\n";
    assert_output(&run("clangpp", code).await, 0, "111101\n");
}
