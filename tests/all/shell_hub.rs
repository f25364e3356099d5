//! The other runtimes as commands of `shell` (docs/plugins.md, "Runtimes as
//! commands"): in pipes, on the same files, under the one run's limits.

use std::time::Duration;

use runbox::service::{LimitOverrides, RunRequest};
use runbox::service::{RunOutcome, RunStatus};
use tokio_util::sync::CancellationToken;

use crate::common::{options, own_runbox, runbox};

async fn shell(code: &str, files: &[(&str, &str)], timeout: Duration) -> RunOutcome {
    runbox()
        .run(
            RunRequest {
                runtime: "shell".into(),
                code: code.into(),
                files: files
                    .iter()
                    .map(|(name, text)| (name.to_string(), text.as_bytes().to_vec()))
                    .collect(),
                limits: LimitOverrides {
                    timeout: Some(timeout),
                    ..LimitOverrides::default()
                },
                ..RunRequest::default()
            },
            CancellationToken::new(),
        )
        .await
        .expect("run")
}

fn stdout(out: &RunOutcome) -> String {
    assert_eq!(out.status, RunStatus::Completed, "{out:?}\n{}", out.tty());
    out.stdout().into_owned()
}

const GEN: &str = "import sys\nfor n in range(1, 21):\n    print(n * n % 37)\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_in_a_pipe() {
    let out = shell(
        "python gen.py | sort -n | tail -3",
        &[("gen.py", GEN)],
        Duration::from_secs(30),
    )
    .await;
    let mut expected: Vec<u32> = (1..21).map(|n| n * n % 37).collect();
    expected.sort();
    let tail: String = expected[17..].iter().map(|n| format!("{n}\n")).collect();
    assert_eq!(stdout(&out), tail);
    assert_eq!(out.exit_code, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_reads_a_redirect_on_a_database_file() {
    let sql = "create table t(x);\ninsert into t values (1), (2), (3);\nselect x * 10 from t;\n";
    let out = shell(
        "sqlite3 t.db < q.sql | wc -l\nsqlite3 -header -csv t.db 'select count(*) as n from t'",
        &[("q.sql", sql)],
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(stdout(&out), "3\nn\r\n3\r\n");
    // The database is the command's file, returned as the run's; the runtime's own files
    // (its driver script) are not.
    let names: Vec<&str> = out.files.iter().map(|f| f.path.as_str()).collect();
    assert!(names.contains(&"t.db"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with(".runbox")), "{names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cc_makes_a_program_the_shell_runs() {
    let c = "#include <stdio.h>\n#include <stdlib.h>\nint main(int argc, char **argv) {\n    long n = atol(argv[1]), a = 0, b = 1;\n    for (long i = 0; i < n; i++) { long t = a + b; a = b; b = t; }\n    printf(\"fib(%ld) = %ld\\n\", n, a);\n    return 0;\n}\n";
    let out = shell(
        "cc -O2 p.c -o p && ./p 10 && ./p 20 | tr a-z A-Z",
        &[("p.c", c)],
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(stdout(&out), "fib(10) = 55\nFIB(20) = 6765\n");
    // A compile error is the command's exit status with clang's diagnostics.
    let out = shell(
        "cc bad.c -o bad; echo \"status $?\"",
        &[("bad.c", "int main(void) { return x; }\n")],
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(stdout(&out), "status 1\n");
    let stderr = out.stderr();
    assert!(stderr.contains("bad.c:1:25: error"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cplusplus_with_its_default_output() {
    let cpp = "#include <iostream>\n#include <vector>\nint main() { std::vector<int> v{1, 2, 3}; int s = 0; for (int x : v) s += x; std::cout << s << '\\n'; }\n";
    let out = shell(
        "g++ -std=c++17 -O1 sum.cpp && ./a.out",
        &[("sum.cpp", cpp)],
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(stdout(&out), "6\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xargs_runs_python_on_each_file() {
    let stats = "import sys\nrows = open(sys.argv[1]).read().split()\nprint(sys.argv[1], sum(map(int, rows)))\n";
    let out = shell(
        "ls *.csv | xargs -n1 python stats.py",
        &[
            ("stats.py", stats),
            ("a.csv", "1\n2\n"),
            ("b.csv", "10\n20\n"),
        ],
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(stdout(&out), "a.csv 3\nb.csv 30\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_commands_files_are_the_nexts() {
    let out = shell(
        "python -c \"open('n.txt', 'w').write('41')\"\nnode -e \"const fs = require('fs'); fs.writeFileSync('m.txt', String(Number(fs.readFileSync('n.txt', 'utf8')) + 1))\"\ncat m.txt; echo\npython3 -c 'import sys; sys.exit(3)'; echo \"exit $?\"\necho 'puts gets.upcase' | ruby -e 'puts STDIN.read.upcase'\nqjs -e 'print(6 * 7)'\necho 'print(1 + 1)' | python -",
        &[],
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(stdout(&out), "42\nexit 3\nPUTS GETS.UPCASE\n42\n2\n");
    let names: Vec<&str> = out.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(names, ["m.txt", "n.txt"], "{names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_command_ends_the_run_at_its_deadline() {
    runbox();
    let started = std::time::Instant::now();
    let out = shell(
        "python -c 'while True: pass' | wc -l; echo after",
        &[],
        Duration::from_secs(3),
    )
    .await;
    assert_eq!(out.status, RunStatus::Timeout, "{out:?}");
    assert!(!out.stdout().contains("after"));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_breaks_the_memory_limit_ends_the_run() {
    let out = runbox()
        .run(
            RunRequest {
                runtime: "shell".into(),
                code: "python -c 'x = bytearray(400 << 20); print(len(x))'; echo after".into(),
                limits: LimitOverrides {
                    memory_bytes: Some(128 << 20),
                    ..LimitOverrides::default()
                },
                ..RunRequest::default()
            },
            CancellationToken::new(),
        )
        .await
        .expect("run");
    // Python reports the refused allocation itself (MemoryError), exit 1, and the shell
    // goes on; or the limit ends the whole run. Either way no more than 128 MiB was used.
    let stderr = out.stderr();
    match out.status {
        RunStatus::Completed => {
            assert!(stderr.contains("MemoryError"), "{stderr}");
            assert_eq!(out.stdout(), "after\n");
        }
        RunStatus::Terminated => assert!(out.memory_refused, "{out:?}"),
        other => panic!("{other:?}: {stderr}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_commands_and_bad_programs_say_so() {
    let out = shell(
        "nosuchtool; echo \"exit $?\"; printf 'not wasm' > x; chmod +x x; python -c 1 && echo ok",
        &[],
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(stdout(&out), "exit 127\nok\n");
    let stderr = out.stderr();
    assert!(stderr.contains("nosuchtool: command not found"), "{stderr}");
}

/// The runtime's own files a command makes (sqlite3's driver script, ~50 KB) are removed
/// after it and their bytes given back: a hundred commands fit in a 2 MiB scratch cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_leave_no_charge_on_the_scratch_budget() {
    let limits = runbox::service::LimitSettings {
        scratch_bytes: 2 << 20,
        ..Default::default()
    };
    let runbox = own_runbox(runbox::service::RunboxOptions {
        only: vec!["shell".into(), "sqlite".into()],
        limits,
        ..options()
    })
    .await;
    let out = runbox
        .run(
            RunRequest {
                runtime: "shell".into(),
                code: "for i in $(seq 100); do sqlite3 :memory: 'select 1' > /dev/null || exit 9; done; echo done; ls -A".into(),
                limits: LimitOverrides {
                    timeout: Some(Duration::from_secs(120)),
                    ..LimitOverrides::default()
                },
                ..RunRequest::default()
            },
            CancellationToken::new(),
        )
        .await
        .expect("run");
    assert_eq!(stdout(&out), "done\n", "{}", out.tty());
}

/// The rest of the runtimes' commands, each with a program file and its arguments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_runtime_answers_as_a_command() {
    let files = [
        (
            "t.ts",
            "const n: number = Number(process.argv[2]);\nconsole.log(`ts ${n * 2}`);\n",
        ),
        (
            "x.js",
            "console.log('node', process.argv.slice(2).join(','));\n",
        ),
        ("p.php", "<?php echo 'php ', 6 * 7, \"\\n\";"),
        (
            "x.pl",
            ":- initialization(main).\nmain :- X is 6 * 7, write(prolog(X)), nl.\n",
        ),
        (
            "q.js",
            "console.log('qjs', scriptArgs.slice(1).join(','));\n",
        ),
    ];
    let out = shell(
        "tsx t.ts 21\nnode x.js a b\nphp p.php\nprolog x.pl\nqjs q.js c\necho 'puts 1 + 1' | ruby\nls -A",
        &files,
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(
        stdout(&out),
        "ts 42\nnode a,b\nphp 42\nprolog(42)\nqjs c\n2\np.php\nq.js\nt.ts\nx.js\nx.pl\n",
        "{}",
        out.tty()
    );
}

/// `cc -c main.c -o main.o` writes the user's `main.o`, and it stays: the C runtime's own
/// files (`main.c`, `main.o`, `main.wasm` when it runs a program) are not a command's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commands_output_named_like_a_runtimes_own_file_stays() {
    let main_c = "#include <stdio.h>\nint twice(int);\nint main(void) { printf(\"%d\\n\", twice(21)); return 0; }\n";
    let lib_c = "int twice(int x) { return 2 * x; }\n";
    let out = shell(
        "cc -c main.c -o main.o && cc -c lib.c && ls *.o && cc main.o lib.o -o main.wasm && ./main.wasm",
        &[("main.c", main_c), ("lib.c", lib_c)],
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(stdout(&out), "lib.o\nmain.o\n42\n");
    let names: Vec<&str> = out.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(names, ["lib.o", "main.o", "main.wasm"], "{names:?}");
}

/// The flags a model uses with each command work as on a normal machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_usual_flags_of_each_command() {
    let script = r#"python -c 'import sys; print("py", sys.argv[1:])' a b
python -m json.tool --compact data.json
node -e 'console.log("node", 6 * 7)'
node -p '[1, 2, 3].map((x) => x * 2).join(",")'
ruby -e 'puts "ruby #{[1, 2].sum}"'
php -r 'echo "php ", 40 + 2, "\n";'
sqlite3 t.db "create table t(x); insert into t values (7); select x * 6 from t;"
cc -Wall -o sq sq.c -lm && ./sq
"#;
    let sq = "#include <math.h>\n#include <stdio.h>\nint main(void) { printf(\"%.0f\\n\", sqrt(1764.0)); return 0; }\n";
    let out = shell(
        script,
        &[("data.json", "{ \"a\": [1, 2] }"), ("sq.c", sq)],
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(
        stdout(&out),
        "py ['a', 'b']\n{\"a\":[1,2]}\nnode 42\n2,4,6\nruby 3\nphp 42\n42\n42\n"
    );
    let names: Vec<&str> = out.files.iter().map(|f| f.path.as_str()).collect();
    assert!(
        !names.iter().any(|n| n.starts_with(".runbox")),
        "a runtime's own file was left: {names:?}"
    );
}
