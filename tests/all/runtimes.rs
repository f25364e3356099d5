//! Every built-in runtime, end to end against the real interpreters: samples from
//! plugins.toml, limits, isolation and concurrency.

use crate::common;

use std::time::{Duration, Instant};

use crate::common::{run, run_with, runbox};
use runbox::manifest::Manifest;
use runbox::plugin::artifact::Progress;
use runbox::service::{LimitOverrides, RunRequest, Runbox, RunboxOptions};
use runbox::service::{RunOutcome, RunStatus};
use tokio_util::sync::CancellationToken;

/// Programs that probe one behaviour, written once per language.
struct Probes {
    runtime: &'static str,
    busy_loop: &'static str,
    memory_bomb: &'static str,
    flood: &'static str,
    read_passwd: &'static str,
    write_file: &'static str,
    /// Prints exactly `false` when the file of `write_file` does not exist.
    check_file: &'static str,
    /// Prints `sum(range(10))`, i.e. 45.
    sum: &'static str,
}

const PROBES: &[Probes] = &[
    Probes {
        runtime: "python",
        busy_loop: "while True:\n    pass",
        memory_bomb: "x = []\nwhile True:\n    x.append(bytearray(10**7))",
        flood: "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)",
        read_passwd: "print(open('/etc/passwd').read())",
        write_file: "open('/persist.txt', 'w').write('hi')",
        check_file: "import os\nprint(str(os.path.exists('/persist.txt')).lower())",
        sum: "print(sum(range(10)))",
    },
    Probes {
        runtime: "ruby",
        busy_loop: "loop {}",
        memory_bomb: "a = []\nloop { a << ('x' * 10_000_000) }",
        flood: "loop { $stdout.write('x' * 65536) }",
        read_passwd: "puts File.read('/etc/passwd')",
        write_file: "File.write('/persist.txt', 'hi')",
        check_file: "puts File.exist?('/persist.txt')",
        sum: "puts (0...10).sum",
    },
    Probes {
        runtime: "php-cgi",
        busy_loop: "<?php while (true) {}",
        memory_bomb: "<?php $a = []; while (true) { $a[] = str_repeat('x', 10000000); }",
        flood: "<?php while (true) { echo str_repeat('x', 65536); }",
        read_passwd: "<?php echo file_get_contents('/etc/passwd');",
        write_file: "<?php file_put_contents('/persist.txt', 'hi');",
        check_file: "<?php echo file_exists('/persist.txt') ? 'true' : 'false', \"\\n\";",
        sum: "<?php echo array_sum(range(0, 9)), \"\\n\";",
    },
    Probes {
        runtime: "quickjs",
        busy_loop: "while (true) {}",
        memory_bomb: "const a = [];\nwhile (true) a.push(new Array(1e6).fill(1.5));",
        flood: "const s = 'x'.repeat(65536);\nwhile (true) std.out.puts(s);",
        read_passwd: "console.log(std.loadFile('/etc/passwd'));",
        write_file: "const f = std.open('/persist.txt', 'w'); f.puts('hi'); f.close();",
        check_file: "console.log(String(std.open('/persist.txt', 'r') !== null));",
        sum: "let s = 0; for (let i = 0; i < 10; i++) s += i; console.log(s);",
    },
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sample_in_plugins_toml_gives_its_expected_output() {
    let manifest = Manifest::builtin().unwrap();
    let mut checked = 0;
    for spec in manifest.plugins.values() {
        assert!(
            spec.samples.iter().any(|s| s.name == "hello"),
            "{} has no hello sample",
            spec.name
        );
        // The guarantee samples are the conformance suite's (tests/all/conformance.rs).
        for sample in spec
            .samples
            .iter()
            .filter(|s| !runbox::conformance::GUARANTEE_SAMPLES.contains(&s.name.as_str()))
        {
            let out = run_with(&spec.name, &sample.code, sample.stdin.as_deref(), None).await;
            let what = format!("{} sample `{}`: {out:?}", spec.name, sample.name);
            assert_eq!(out.status, RunStatus::Completed, "{what}");
            assert_eq!(out.exit_code, Some(sample.exit_code), "{what}");
            if let Some(stdout) = &sample.stdout {
                assert_eq!(&out.stdout(), stdout, "{what}");
            }
            if let Some(needle) = &sample.stderr_contains {
                assert!(out.stderr().contains(needle.as_str()), "{what}");
                assert!(out.tty().contains(needle.as_str()), "{what}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 12, "only {checked} samples ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sum_of_range_prints_45_everywhere() {
    for p in PROBES {
        let out = run(p.runtime, p.sum).await;
        assert_eq!(out.status, RunStatus::Completed, "{}: {out:?}", p.runtime);
        assert_eq!(out.stdout(), "45\n", "{}: {out:?}", p.runtime);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_loops_time_out_within_a_second_of_the_deadline() {
    for p in PROBES {
        let started = Instant::now();
        let out = run_with(p.runtime, p.busy_loop, None, Some(Duration::from_secs(2))).await;
        let took = started.elapsed();
        assert_eq!(out.status, RunStatus::Timeout, "{}: {out:?}", p.runtime);
        assert_eq!(out.exit_code, None);
        assert!(
            out.error.as_deref().unwrap_or("").contains("time"),
            "{out:?}"
        );
        assert!(
            took >= Duration::from_secs(2),
            "{}: stopped early, {took:?}",
            p.runtime
        );
        // The run's own time: queueing for a slot of the shared runbox counts in `took`.
        let ran = out.duration.saturating_sub(out.build_time);
        assert!(
            ran < Duration::from_secs(3),
            "{}: stopped late, {ran:?} ({took:?} in all)",
            p.runtime
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_bombs_are_stopped_by_the_cap_and_the_host_survives() {
    for p in PROBES {
        let out = run_with(
            p.runtime,
            p.memory_bomb,
            None,
            Some(Duration::from_secs(30)),
        )
        .await;
        // Either the runtime reports its own out-of-memory error (non-zero exit) or the
        // host ends the run: both are fine, a timeout or a crash of the host is not.
        let stopped_by_cap = match out.status {
            RunStatus::Completed => out.exit_code != Some(0),
            RunStatus::Terminated => out.error.as_deref().unwrap_or("").contains("memory"),
            // PHP's own memory_limit fatal error ends in a trap in this build (its
            // bailout cannot unwind); the message still reaches the user.
            RunStatus::Crashed => out.tty().contains("Allowed memory size"),
            RunStatus::Timeout => false,
        };
        assert!(stopped_by_cap, "{}: {out:?}", p.runtime);
        // The host is unharmed: the next run works.
        let again = run(p.runtime, p.sum).await;
        assert_eq!(again.stdout(), "45\n", "{}: {again:?}", p.runtime);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_floods_are_truncated_quickly() {
    let cap = runbox().limits().output_bytes;
    for p in PROBES {
        let started = Instant::now();
        let out = run_with(p.runtime, p.flood, None, Some(Duration::from_secs(20))).await;
        let took = started.elapsed();
        assert_eq!(
            out.status,
            RunStatus::Terminated,
            "{}: {:?}",
            p.runtime,
            out.error
        );
        assert!(out.truncated, "{}", p.runtime);
        assert!(
            out.error.as_deref().unwrap_or("").contains("output"),
            "{:?}",
            out.error
        );
        assert!(
            out.stdout().len() <= cap,
            "{}: {}",
            p.runtime,
            out.stdout().len()
        );
        assert!(
            out.stdout().len() >= cap / 2,
            "{}: kept only {}",
            p.runtime,
            out.stdout().len()
        );
        assert!(
            took < Duration::from_secs(5),
            "{}: flood took {took:?}",
            p.runtime
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_files_are_unreadable() {
    for p in PROBES {
        let out = run(p.runtime, p.read_passwd).await;
        assert!(!out.tty().contains("root:"), "{}: {out:?}", p.runtime);
        // The read failed visibly: an error naming the missing file, or QuickJS's null.
        assert!(
            out.tty().contains("No such file") || out.stdout().trim() == "null",
            "{}: {out:?}",
            p.runtime
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_written_in_one_run_are_gone_in_the_next() {
    for p in PROBES {
        let write = run(p.runtime, p.write_file).await;
        assert_eq!(
            write.status,
            RunStatus::Completed,
            "{}: {write:?}",
            p.runtime
        );
        assert_eq!(write.exit_code, Some(0), "{}: {write:?}", p.runtime);
        let check = run(p.runtime, p.check_file).await;
        assert_eq!(check.stdout().trim(), "false", "{}: {check:?}", p.runtime);
    }
}

/// Every python run starts from one snapshot, yet draws its own random numbers: both
/// `random`'s and numpy's global generators are seeded afresh from the system.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_python_run_draws_fresh_random_numbers() {
    let code = "import random, numpy\nprint(random.getrandbits(64), numpy.random.randint(0, 2**62), numpy.random.rand())";
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..3 {
        let out = run("python", code).await;
        assert_eq!(out.status, RunStatus::Completed, "{out:?}");
        let line = out.stdout().trim().to_string();
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields.len(), 3, "{line}");
        assert!(
            seen.insert(fields[0].to_string()),
            "random repeated: {line}"
        );
        assert!(
            seen.insert(fields[1].to_string()),
            "numpy.random repeated: {line}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_runs_at_once_are_all_correct() {
    let mut tasks = Vec::new();
    for i in 0..8 {
        let p = &PROBES[i % PROBES.len()];
        tasks.push(tokio::spawn(async move {
            (p.runtime, run(p.runtime, p.sum).await)
        }));
    }
    for t in tasks {
        let (runtime, out) = t.await.unwrap();
        assert_eq!(out.status, RunStatus::Completed, "{runtime}: {out:?}");
        assert_eq!(out.stdout(), "45\n", "{runtime}: {out:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_runtime_names_the_valid_ones() {
    let rb = runbox();
    let err = rb
        .run(
            runbox::service::RunRequest {
                runtime: "cobol".into(),
                code: "x".into(),
                ..Default::default()
            },
            Default::default(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("cobol"), "{err}");
    for name in ["python", "quickjs", "ruby", "php-cgi"] {
        assert!(err.contains(name), "{err}");
    }
}

/// Waits until `runbox` has a warm instance of `runtime` ready; false after 60 s.
async fn until_prestarted(runbox: &Runbox, runtime: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while runbox.prestarted(runtime) == 0 {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

/// Runs `code` in `runtime`, with another memory cap when given (which a pre-started
/// instance cannot serve).
async fn run_capped(
    runbox: &Runbox,
    runtime: &str,
    code: &str,
    memory_bytes: Option<u64>,
) -> RunOutcome {
    let request = RunRequest {
        runtime: runtime.into(),
        code: code.into(),
        limits: LimitOverrides {
            timeout: None,
            memory_bytes,
            max_timeout: None,
        },
        ..Default::default()
    };
    runbox.run(request, CancellationToken::new()).await.unwrap()
}

async fn ruby_run(runbox: &Runbox, code: &str, memory_bytes: Option<u64>) -> String {
    let out = run_capped(runbox, "ruby", code, memory_bytes).await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    out.stdout().into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prestarted_interpreter_serves_one_run_and_is_replaced() {
    runbox(); // fetched and compiled on a fresh machine
              // A server of its own: no other test takes its warm instances.
    let rb = common::own_runbox(RunboxOptions {
        only: vec!["ruby".into()],
        ..common::options()
    })
    .await;
    // ruby is pre-started (plugins.toml): its first run starts the pool.
    assert_eq!(
        ruby_run(&rb, "$seen = 1\nputs 'first'", None).await,
        "first\n"
    );
    assert!(
        until_prestarted(&rb, "ruby").await,
        "no warm ruby was started"
    );
    assert_eq!(rb.prestarted("ruby"), 1, "one is kept per runtime");
    // The next run takes it, sees none of the earlier run's state, and a new one is
    // started for the run after.
    let second = ruby_run(&rb, "p defined?($seen)\n$seen = 2", None).await;
    assert_eq!(second, "nil\n");
    assert!(
        until_prestarted(&rb, "ruby").await,
        "the warm ruby was not replaced"
    );
    let third = ruby_run(&rb, "p defined?($seen)", None).await;
    assert_eq!(third, "nil\n", "a warm instance was used twice");
    // A run a warm instance cannot serve (another memory cap) runs the ordinary way and
    // leaves the warm one ready.
    assert!(until_prestarted(&rb, "ruby").await);
    let capped = ruby_run(&rb, "puts 'capped'", Some(256 << 20)).await;
    assert_eq!(capped, "capped\n");
    assert_eq!(rb.prestarted("ruby"), 1);
}

/// python is pre-started too (plugins.toml), its warm instance's pages mapped ahead from
/// what the run before touched (host/src/run/warm_pages.rs): each run still starts from
/// the snapshot as a fresh one does (no variable, file or random state of the run before),
/// and answers as a fresh instance answers, tracebacks included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prestarted_python_sees_nothing_of_the_run_before() {
    runbox();
    let rb = common::own_runbox(RunboxOptions {
        only: vec!["python".into()],
        ..common::options()
    })
    .await;
    let probe = "import os, random, numpy as np\n\
                 print('seen' in globals(), os.path.exists('/tmp/left'), os.path.exists('out.txt'))\n\
                 seen = 1\n\
                 open('/tmp/left', 'w').write('x')\n\
                 open('out.txt', 'w').write('x')\n\
                 print(random.random(), np.random.rand())";
    let mut draws = std::collections::HashSet::new();
    for round in 0..4 {
        if round > 0 {
            assert!(
                until_prestarted(&rb, "python").await,
                "no warm python was started"
            );
        }
        let out = run_capped(&rb, "python", probe, None).await;
        assert_eq!(out.status, RunStatus::Completed, "{}", out.tty());
        let stdout = out.stdout().into_owned();
        let (first, draw) = stdout.split_once('\n').unwrap();
        assert_eq!(first, "False False False", "round {round}: {stdout}");
        assert!(
            draws.insert(draw.to_string()),
            "round {round} drew as before: {draw}"
        );
    }
    assert!(
        rb.prestarts_begun() >= 3,
        "the runs did not take warm instances"
    );
    // An error reads the same from a warm instance as from a fresh one (another memory
    // cap runs the ordinary way).
    let error = "x = 1\n1 / 0\n";
    assert!(until_prestarted(&rb, "python").await);
    let warm = run_capped(&rb, "python", error, None).await;
    let fresh = run_capped(&rb, "python", error, Some(256 << 20)).await;
    assert_eq!(warm.exit_code, Some(1), "{}", warm.tty());
    assert_eq!(
        (warm.exit_code, warm.stdout(), warm.stderr()),
        (fresh.exit_code, fresh.stdout(), fresh.stderr())
    );
    assert!(
        warm.stderr().contains("ZeroDivisionError"),
        "{}",
        warm.tty()
    );
}

/// A call refused before it runs (here for an input path it may not use) leaves the
/// warm interpreter where it is: none is taken, none started in its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_calls_leave_the_prestarted_interpreter_alone() {
    runbox();
    let rb = common::own_runbox(RunboxOptions {
        only: vec!["ruby".into()],
        ..common::options()
    })
    .await;
    assert_eq!(ruby_run(&rb, "puts 'first'", None).await, "first\n");
    assert!(
        until_prestarted(&rb, "ruby").await,
        "no warm ruby was started"
    );
    let begun = rb.prestarts_begun();
    for _ in 0..20 {
        let refused = rb
            .run(
                RunRequest {
                    runtime: "ruby".into(),
                    code: "puts 1".into(),
                    files: vec![("../escape.txt".into(), b"x".to_vec())],
                    ..Default::default()
                },
                CancellationToken::new(),
            )
            .await
            .unwrap_err();
        assert!(refused.to_string().contains("escape.txt"), "{refused}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rb.prestarted("ruby"), 1, "the warm ruby was taken");
    assert_eq!(
        rb.prestarts_begun(),
        begun,
        "interpreters were started for refused calls"
    );
}

/// Calls that arrive while their runtime is still being prepared are admitted first: they
/// hold a queue place (and their memory) while they wait, so past `--max-queued` one more
/// is refused at once instead of waiting unaccounted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_waiting_for_preparation_are_admitted_first() {
    runbox(); // the artifacts are fetched
              // A cache with the shared artifacts but nothing compiled: php-cgi takes seconds to
              // prepare.
    let shared = common::cache_dir();
    let dir = tempfile::tempdir_in(shared.parent().unwrap()).unwrap();
    for part in ["artifacts", "packages", "mounts"] {
        let status = std::process::Command::new("cp")
            .arg("-al")
            .arg(shared.join(part))
            .arg(dir.path().join(part))
            .status()
            .unwrap();
        assert!(status.success(), "cp -al {part}");
    }
    let options = RunboxOptions {
        only: vec!["php-cgi".into()],
        max_concurrent: 1,
        max_queued: 2,
        ..common::options()
    };
    let manifest = Manifest::builtin().unwrap();
    let cache = runbox::plugin::artifact::Cache::at(dir.path().to_path_buf());
    let rb =
        std::sync::Arc::new(Runbox::start(&manifest, &cache, options, Progress::hidden()).unwrap());
    assert!(!rb.all_prepared(), "php-cgi was ready at once");
    let call = |rb: std::sync::Arc<Runbox>| async move {
        common::run_on(&rb, "php-cgi", "<?php echo 'ok';", Duration::from_secs(120)).await
    };
    let waiting: Vec<_> = (0..2).map(|_| tokio::spawn(call(rb.clone()))).collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let refused = call(rb.clone()).await.unwrap_err();
    assert!(
        refused.to_string().contains("busy") && started.elapsed() < Duration::from_secs(1),
        "{refused} after {:?}",
        started.elapsed()
    );
    assert!(
        !rb.all_prepared(),
        "php-cgi was prepared before the test could tell"
    );
    for call in waiting {
        let out = call.await.unwrap().unwrap();
        assert_eq!(out.stdout(), "ok", "{out:?}");
    }
}
