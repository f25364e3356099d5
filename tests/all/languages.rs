//! The languages added as plugins (docs/runtimes.md), checked on what users ask of them: `shell`'s
//! tools on input files, a TypeScript program with interfaces, generics and an enum (a
//! type error not reported, a syntax error at its line), and `prolog` from a plugins.toml
//! entry alone (its stable sorts read only when a program sorts); ruby without RubyGems at
//! start, its error messages as they were.

use runbox::service::RunRequest;
use runbox::service::{RunOutcome, RunStatus};
use tokio_util::sync::CancellationToken;

use crate::common::{run, runbox};

async fn run_on_files(runtime: &str, code: &str, files: &[(&str, &str)]) -> RunOutcome {
    runbox()
        .run(
            RunRequest {
                runtime: runtime.into(),
                code: code.into(),
                files: files
                    .iter()
                    .map(|(name, text)| (name.to_string(), text.as_bytes().to_vec()))
                    .collect(),
                ..RunRequest::default()
            },
            CancellationToken::new(),
        )
        .await
        .expect("run")
}

fn completed(runtime: &str, out: &RunOutcome) {
    assert_eq!(out.status, RunStatus::Completed, "{runtime}: {out:?}");
    assert_eq!(out.exit_code, Some(0), "{runtime}: {}", out.tty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_languages_are_listed() {
    let names = runbox().runtime_names();
    for name in ["typescript", "shell", "prolog"] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_tools_work_on_input_files() {
    let files = [
        ("data.csv", "ada 40\nbob 2\n"),
        ("file.json", "{\"a\": {\"b\": [1, 2]}, \"c\": 3}\n"),
        ("log.txt", "ok\nerror: disk\nok\nerror: net\n"),
    ];
    for (code, expected) in [
        ("ls | wc -l", "3\n"),
        ("grep -c error log.txt", "2\n"),
        ("awk '{s+=$2} END {print s}' data.csv", "42\n"),
        ("jq .a file.json", "{\n  \"b\": [\n    1,\n    2\n  ]\n}\n"),
        ("jq -r '.a.b | length' file.json", "2\n"),
        (
            "grep error log.txt | cut -d' ' -f2 | sort -r | tr a-z A-Z",
            "NET\nDISK\n",
        ),
        (
            "for f in *.txt *.csv; do printf '%s %s\\n' \"$f\" \"$(wc -l < \"$f\")\"; done",
            "log.txt 4\ndata.csv 2\n",
        ),
        (
            "find . -name '*.json' | xargs cat | head -c 9; echo",
            "{\"a\": {\"b\n",
        ),
    ] {
        let out = run_on_files("shell", code, &files).await;
        completed("shell", &out);
        assert_eq!(out.stdout(), expected, "{code}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_writes_files_that_come_back() {
    let out = run_on_files(
        "shell",
        "sort -k2 -n data.csv > sorted.csv && head -1 sorted.csv",
        &[("data.csv", "ada 40\nbob 2\n")],
    )
    .await;
    completed("shell", &out);
    assert_eq!(out.stdout(), "bob 2\n");
    assert!(
        out.files.iter().any(|f| f.path == "sorted.csv"),
        "{:?}",
        out.files
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_exit_codes_are_the_scripts() {
    let out = run("shell", "grep -q missing /dev/null; echo $?; exit 4").await;
    assert_eq!(out.exit_code, Some(4), "{out:?}");
    assert_eq!(out.stdout(), "2\n");
    let out = run("shell", "no-such-tool --help").await;
    assert_eq!(out.exit_code, Some(127), "{out:?}");
    assert!(out.stderr().contains("command not found"), "{out:?}");
}

const TYPESCRIPT: &str = "interface Shape {\n  area(): number;\n}\nenum Kind { Circle = 'circle', Square = 'square' }\nclass Square implements Shape {\n  readonly kind = Kind.Square;\n  constructor(private side: number) {}\n  area(): number { return this.side ** 2; }\n}\nfunction largest<T extends Shape>(shapes: T[]): T {\n  return shapes.reduce((a, b) => (a.area() >= b.area() ? a : b));\n}\nconst best = largest<Square>([new Square(2), new Square(5)]);\nconsole.log(best.kind, best.area());\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_runs_interfaces_generics_and_enums() {
    let out = run("typescript", TYPESCRIPT).await;
    completed("typescript", &out);
    assert_eq!(out.stdout(), "square 25\n");
    assert_eq!(out.stderr(), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_type_errors_are_not_reported() {
    let code = format!("{TYPESCRIPT}const wrong: number = 'not a number';\nconsole.log(wrong);\n");
    let out = run("typescript", &code).await;
    completed("typescript", &out);
    assert_eq!(out.stdout(), "square 25\nnot a number\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_syntax_errors_point_at_their_line() {
    // Line 15, after 14 lines with types that the JavaScript does not have.
    let code = format!("{TYPESCRIPT}const broken = (1 + ;\n");
    let out = run("typescript", &code).await;
    assert_eq!(out.exit_code, Some(1), "{out:?}");
    assert_eq!(out.stdout(), "");
    assert!(
        out.stderr().contains("SyntaxError") && out.stderr().contains("line 15, col 21"),
        "{}",
        out.stderr()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_runtime_errors_point_at_the_programs_lines() {
    let code = format!("{TYPESCRIPT}function fail(reason: string): never {{\n  throw new Error(reason);\n}}\nfail('late');\n");
    let out = run("typescript", &code).await;
    assert_eq!(out.exit_code, Some(1), "{out:?}");
    assert!(
        out.stderr().contains("Uncaught Error: late"),
        "{}",
        out.stderr()
    );
    assert!(
        out.stderr().contains("main.ts:16:9") && out.stderr().contains("main.ts:18:1"),
        "{}",
        out.stderr()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_imports_modules_and_files() {
    let out = run_on_files(
        "typescript",
        "import { readFileSync } from 'node:fs';\nimport { total, type Line } from './lines.ts';\nconst lines: Line[] = JSON.parse(readFileSync('lines.json', 'utf8'));\nconsole.log(await Promise.resolve(total(lines)));\n",
        &[
            ("lines.ts", "export interface Line { qty: number; price: number }\nexport const total = (ls: Line[]): number => ls.reduce((s, l) => s + l.qty * l.price, 0);\n"),
            ("lines.json", "[{\"qty\": 2, \"price\": 20}, {\"qty\": 1, \"price\": 2}]"),
        ],
    )
    .await;
    completed("typescript", &out);
    assert_eq!(out.stdout(), "42\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prolog_runs_a_program_and_reports_its_errors() {
    let out = run(
        "prolog",
        "parent(tom, bob).\nparent(bob, ann).\nancestor(X, Y) :- parent(X, Y).\nancestor(X, Y) :- parent(X, Z), ancestor(Z, Y).\n:- initialization(main).\nmain :- findall(Y, ancestor(tom, Y), L), write(L), nl.\n",
    )
    .await;
    completed("prolog", &out);
    assert_eq!(out.stdout(), "[bob,ann]\n");
    let out = run(
        "prolog",
        ":- initialization(main).\nmain :- X is foo + 1, write(X).\n",
    )
    .await;
    assert_eq!(out.exit_code, Some(1), "{out:?}");
    assert!(out.stderr().contains("type_error"), "{out:?}");
    let out = run(
        "prolog",
        ":- initialization(main).\nmain :- write(bye), nl, halt(3).\n",
    )
    .await;
    assert_eq!(out.exit_code, Some(3), "{out:?}");
    assert_eq!(out.stdout(), "bye\n");
}

/// The prelude's stable sorts (runtimes/prolog/stable.pl) are read only by a program that
/// names a sort, and still reach a closure handed to the program's own meta-predicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prolog_reads_its_stable_sorts_only_when_a_program_sorts() {
    let loaded = "( current_predicate('$rb_keysort'/2) -> write(loaded) ; write(not_loaded) ), nl";
    let out = run(
        "prolog",
        &format!(":- initialization(main).\nmain :- {loaded}.\n"),
    )
    .await;
    completed("prolog", &out);
    assert_eq!(out.stdout(), "not_loaded\n");
    let out = run(
        "prolog",
        &format!(
            ":- meta_predicate(app(2, ?, ?)).\napp(G, X, Y) :- call(G, X, Y).\n:- initialization(main).\nmain :- app(keysort, [b-1,a-2,b-0,a-1], S), write(S), nl, {loaded}.\n"
        ),
    )
    .await;
    completed("prolog", &out);
    assert_eq!(out.stdout(), "[a-2,a-1,b-1,b-0]\nloaded\n");
}

/// Trealla reports running out of memory as a failure ("goal failed:
/// main"); the result's notice says what the host saw, and a plain failure has none.
#[tokio::test(flavor = "multi_thread")]
async fn an_endless_prolog_recursion_says_it_ran_out_of_memory() {
    let out = run(
        "prolog",
        ":- initialization(main).\nloop(X) :- loop([X|X]).\nmain :- loop(a).\n",
    )
    .await;
    assert_eq!(out.exit_code, Some(1), "{out:?}");
    let notice = out.notice.as_deref().unwrap_or_default();
    assert!(
        notice.contains("memory limit (512 MiB) refused an allocation")
            && notice.contains("ran out of memory"),
        "{out:?}"
    );
    let out = run("prolog", ":- initialization(main).\nmain :- fail.\n").await;
    assert_eq!(out.exit_code, Some(1), "{out:?}");
    assert_eq!(out.notice, None, "a plain failure: {out:?}");
}

/// A call in a new `runtime` session running `code`: its outcome, whatever its exit.
async fn in_session(runtime: &str, code: &str) -> RunOutcome {
    let rb = runbox();
    let id = rb
        .create_session(runtime)
        .await
        .expect("a session")
        .session_id;
    rb.run(
        RunRequest {
            code: code.into(),
            session_id: Some(id),
            ..RunRequest::default()
        },
        CancellationToken::new(),
    )
    .await
    .expect("run")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruby_starts_without_rubygems_and_loads_it_when_asked() {
    // RubyGems is most of ruby's start (runtimes/ruby/prelude.rb): a hello must not load it.
    let out = run(
        "ruby",
        "puts $LOADED_FEATURES.grep(/rubygems|did_you_mean|error_highlight/).size\n",
    )
    .await;
    completed("ruby", &out);
    assert_eq!(out.stdout(), "0\n");
    // What a program asks of it still works, loaded on the way.
    let out = run(
        "ruby",
        "p Gem::Version.new('1.10') > Gem::Version.new('1.9')\nrequire 'json'\nputs JSON.generate({a: [1]})\nputs $stdout.sync\n",
    )
    .await;
    completed("ruby", &out);
    assert_eq!(out.stdout(), "true\n{\"a\":[1]}\ntrue\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruby_errors_are_annotated_as_with_rubygems_loaded() {
    let code = "count = 1\nputs coutn\n";
    // error_highlight points at the name in a run's file; a session's call is evaluated
    // text, which it cannot point into (as before).
    for (out, pointed) in [
        (run("ruby", code).await, true),
        (in_session("ruby", code).await, false),
    ] {
        assert_eq!(out.exit_code, Some(1), "{out:?}");
        let err = out.stderr();
        assert!(
            err.contains("main.rb:2:in `<main>': undefined local variable or method `coutn'")
                && err.contains("puts coutn\n     ^^^^^") == pointed
                && err.contains("Did you mean?  count"),
            "{err}"
        );
    }
    // A rescued error's full message is annotated too.
    let out = run(
        "ruby",
        "begin\n  {name: 1}.fetch(:nme)\nrescue KeyError => e\n  puts e.full_message(highlight: false)\nend\n",
    )
    .await;
    completed("ruby", &out);
    assert!(
        out.stdout().contains("Did you mean?  :name"),
        "{}",
        out.stdout()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruby_syntax_errors_say_where() {
    // syntax_suggest, which fails without threads, used to leave only "main.rb: SyntaxError".
    let code = "def f\n  if true\n    1\nend\n";
    for out in [run("ruby", code).await, in_session("ruby", code).await] {
        assert_eq!(out.exit_code, Some(1), "{out:?}");
        assert!(
            out.stderr()
                .contains("main.rb:4: syntax error, unexpected end-of-input"),
            "{}",
            out.stderr()
        );
    }
}
