//! A program a plugin produces (C, C++) is untrusted input to the compiler. Its compile
//! must stay inside the run's limits: stopped where its compile budget ends, refused past a size,
//! bounded server-wide, and never cached for a run that did not complete.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use runbox::manifest::Manifest;
use runbox::plugin::artifact::Progress;
use runbox::service::{LimitOverrides, LimitSettings, RunRequest, Runbox, RunboxOptions};
use runbox::service::{RunOutcome, RunStatus};
use tokio_util::sync::CancellationToken;

/// One function with `n` call results live at once: clang assembles it in a moment, but
/// Cranelift's register allocator needs about n^2.4 time for it (n = 64,000: minutes).
fn pathological(n: usize, salt: &str) -> String {
    format!(
        "__asm__(\".functype g () -> (i32)\\n.globl big\\n.type big,@function\\nbig:\\n\
         .functype big () -> (i32)\\n.rept {n}\\ncall g\\n.endr\\n.rept {}\\ni32.add\\n.endr\\n\
         end_function\\n\");\n/* {salt} */\nint g(void) {{ return 1; }}\nint big(void);\n\
         int main(void) {{ return big() == {n} ? 0 : 1; }}\n",
        n - 1
    )
}

/// The tests count this process's compile children, so they must not overlap.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn load(max_compiles: usize) -> Runbox {
    load_with(max_compiles, LimitSettings::default().compile_timeout)
}

/// clang alone, with `max_compiles` compiles at once and `compile_timeout` for a run's
/// build steps.
fn load_with(max_compiles: usize, compile_timeout: Duration) -> Runbox {
    let manifest = Manifest::builtin().expect("built-in plugins.toml");
    let options = RunboxOptions {
        only: vec!["clang".into()],
        max_compiles,
        limits: LimitSettings {
            compile_timeout,
            ..LimitSettings::default()
        },
        compiler_exe: Some(own_compiler()),
        ..common::options()
    };
    Runbox::load(&manifest, &common::cache(), options, &Progress::stderr()).expect("load clang")
}

async fn run_c(rb: &Runbox, code: &str, timeout: Duration) -> RunOutcome {
    rb.run(
        RunRequest {
            runtime: "clang".into(),
            code: code.into(),
            limits: LimitOverrides {
                timeout: Some(timeout),
                memory_bytes: None,
                max_timeout: None,
            },
            ..RunRequest::default()
        },
        CancellationToken::new(),
    )
    .await
    .expect("run")
}

/// runbox under a name of this file's own, as the compiler of its runboxes: their
/// compile children are told from those of other tests (through the shared runbox) by
/// their command line.
fn own_compiler() -> PathBuf {
    static LINK: OnceLock<PathBuf> = OnceLock::new();
    LINK.get_or_init(|| {
        let link = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compile-limits-runbox");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_runbox"), &link).unwrap();
        link
    })
    .clone()
}

/// The pids of the compile children of this file's runboxes.
fn compile_child_pids() -> Vec<String> {
    let me = std::process::id().to_string();
    let ours = format!("{}\0__compile-program", own_compiler().display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            let dir = e.path();
            let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
            // pid (comm) state ppid ...: the comm may hold spaces, so split after ')'.
            let ppid = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().nth(1));
            let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
            ppid == Some(me.as_str()) && String::from_utf8_lossy(&cmdline).starts_with(&ours)
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// When each compile child of this process was first and last seen, looked at every
/// 20 ms from `watch` until `seen` (a pid is not reused before the numbers wrap around).
struct CompileChildren {
    done: Arc<AtomicBool>,
    seen: Arc<Mutex<BTreeMap<String, (Instant, Instant)>>>,
    watcher: std::thread::JoinHandle<()>,
}

impl CompileChildren {
    fn watch() -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(BTreeMap::<String, (Instant, Instant)>::new()));
        let watcher = {
            let (done, seen) = (done.clone(), seen.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    let now = Instant::now();
                    let mut seen = seen.lock().unwrap();
                    for pid in compile_child_pids() {
                        seen.entry(pid).or_insert((now, now)).1 = now;
                    }
                    drop(seen);
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        CompileChildren {
            done,
            seen,
            watcher,
        }
    }

    /// Stops watching: each child seen, with when it was first and last seen.
    fn seen(self) -> Vec<(String, (Instant, Instant))> {
        self.done.store(true, Ordering::SeqCst);
        self.watcher.join().unwrap();
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .map(|(pid, span)| (pid.clone(), *span))
            .collect()
    }
}

fn programs_dir() -> PathBuf {
    common::cache_dir().join("compiled").join("programs")
}

fn cached_programs() -> BTreeSet<String> {
    std::fs::read_dir(programs_dir())
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".cwasm"))
                .collect()
        })
        .unwrap_or_default()
}

/// Compiling the produced program is a build step: it is stopped where the run's
/// compile budget ends (3 s here), whatever the program's own time limit, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compile_is_stopped_at_the_compile_budget() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let rb = load_with(1, Duration::from_secs(3));
    let salt = format!("deadline {}", std::process::id());
    let children = CompileChildren::watch();
    let started = Instant::now();
    let out = run_c(&rb, &pathological(32_000, &salt), Duration::from_secs(30)).await;
    let took = started.elapsed();
    let ours = children.seen();
    assert_eq!(out.status, RunStatus::Timeout, "{out:?}");
    let error = out.error.as_deref().unwrap_or_default();
    assert!(
        error.starts_with("compiling took longer than 3.0 s"),
        "{out:?}"
    );
    assert!(
        took < Duration::from_millis(4500),
        "answered after {took:?}"
    );
    // The compiler is gone by the time the run answers, reaped and not even a zombie:
    // not still burning a core for the cache or holding memory past its slot.
    assert!(!ours.is_empty(), "no compile child was seen");
    for (pid, _) in ours {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
        assert!(stat.is_err(), "a compile child outlived its run: {stat:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_program_is_refused_before_it_is_compiled() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let rb = load(1);
    // 40 MiB of initialised data: a 40 MiB program, past the 32 MiB cap.
    let code = "static volatile char big[40 << 20] = {1};\n\
                int main(int argc, char **argv) { (void)argv; return big[argc * 12345]; }\n";
    let out = run_c(&rb, code, Duration::from_secs(60)).await;
    assert_eq!(out.status, RunStatus::Crashed, "{out:?}");
    let error = out.error.as_deref().unwrap_or_default();
    assert!(error.contains("larger than 32 MiB"), "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_completed_runs_leave_programs_in_the_cache() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let rb = load(1);
    let salt = std::process::id();
    // 1 MiB of initialised data, starting with a marker: the program, and so its cache
    // file, is unique, and can be told from what other suites compile meanwhile.
    let marker = |n: u32| format!("runbox compile_limits {salt} {n}");
    let program = |body: &str, n: u32| {
        format!(
            "static volatile char data[1 << 20] = \"{}\";\n\
             int main(void) {{ {body} return data[0] == 0; }}\n",
            marker(n)
        )
    };
    let before = cached_programs();
    let out = run_c(
        &rb,
        &program("for (;;) data[1]++;", 1),
        Duration::from_secs(3),
    )
    .await;
    assert_eq!(out.status, RunStatus::Timeout, "{out:?}");
    let left = new_programs_holding(&before, &marker(1));
    assert!(left.is_empty(), "a timed-out run left a program: {left:?}");
    // The same kind of program, completing, is cached (so the check above can fail).
    let out = run_c(&rb, &program("", 2), Duration::from_secs(30)).await;
    assert_eq!(
        (out.status, out.exit_code),
        (RunStatus::Completed, Some(0)),
        "{out:?}"
    );
    assert_eq!(new_programs_holding(&before, &marker(2)).len(), 1);
}

/// The programs cached since `before` whose bytes hold `marker`.
fn new_programs_holding(before: &BTreeSet<String>, marker: &str) -> Vec<String> {
    cached_programs()
        .difference(before)
        .filter(|name| {
            std::fs::read(programs_dir().join(name))
                .is_ok_and(|bytes| bytes.windows(marker.len()).any(|w| w == marker.as_bytes()))
        })
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compiles_queue_for_the_servers_compile_slots() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let rb = Arc::new(load(1));
    let children = CompileChildren::watch();
    let runs: Vec<_> = (0..3)
        .map(|i| {
            let rb = rb.clone();
            tokio::spawn(async move {
                let code = pathological(32_000, &format!("queue {} {i}", std::process::id()));
                run_c(&rb, &code, Duration::from_secs(4)).await
            })
        })
        .collect();
    for run in runs {
        let out = run.await.unwrap();
        assert_eq!(out.status, RunStatus::Timeout, "{out:?}");
    }
    // Never two at once: no child was seen before the one before it was gone.
    let seen = children.seen();
    assert!(!seen.is_empty(), "no compile child was seen");
    let mut spans: Vec<_> = seen.into_iter().map(|(_, span)| span).collect();
    spans.sort();
    for pair in spans.windows(2) {
        assert!(pair[0].1 < pair[1].0, "two compiles at once: {spans:?}");
    }
}
