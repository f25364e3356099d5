//! The programs runbox ships with its runtimes, files under `runtimes/NAME/` that
//! plugins.toml includes: each passes its own language's check where this machine has one
//! (python: compiled by CPython; JavaScript: `node --check`; C++: `g++ -fsyntax-only` on
//! the header list, the exception runtime being compiled by the runtime's own clang when it
//! is prepared), and the sqlite shell's unit tests run in runbox's python runtime. PHP, Ruby
//! and Prolog have no checker here: their files run in every run of their runtime (the
//! samples).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The files under runtimes/ whose name ends in `extension`.
fn files(extension: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, extension: &str, into: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, extension, into);
            } else if path.extension().is_some_and(|e| e == extension) {
                into.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&repo().join("runtimes"), extension, &mut found);
    found.sort();
    found
}

fn check(command: &mut Command, what: &Path) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        out.status.success(),
        "{} fails its check ({command:?}):\n{}{}",
        what.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn python_files_compile() {
    let python = files("py");
    assert!(python.len() >= 3, "{python:?}");
    for file in python {
        check(
            Command::new("python3").args([
                "-c",
                "import sys; compile(open(sys.argv[1], encoding='utf-8').read(), sys.argv[1], 'exec')",
            ]).arg(&file),
            &file,
        );
    }
}

#[test]
fn javascript_files_parse() {
    let scripts = files("js");
    assert!(scripts.len() >= 4, "{scripts:?}");
    let dir = tempfile::tempdir().unwrap();
    for file in scripts {
        let text = std::fs::read_to_string(&file).unwrap();
        // A module (`export …`) is checked as one: node reads a `.mjs` file so.
        let checked = if text.contains("export ") {
            let copy = dir
                .path()
                .join(file.with_extension("mjs").file_name().unwrap());
            std::fs::write(&copy, &text).unwrap();
            copy
        } else {
            file.clone()
        };
        check(Command::new("node").arg("--check").arg(&checked), &file);
    }
}

#[test]
fn the_cplusplus_header_list_compiles() {
    let header = repo().join("runtimes/clangpp/std.hpp");
    check(
        Command::new("g++")
            .args(["-fsyntax-only", "-std=gnu++20", "-x", "c++"])
            .arg(&header),
        &header,
    );
}

/// runtimes/sqlite/test_shell.py, run by runbox's python runtime with the shell beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_shells_unit_tests_pass_in_the_python_runtime() {
    let dir = repo().join("runtimes/sqlite");
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let out = common::runbox()
        .run(
            runbox::service::RunRequest {
                runtime: "python".into(),
                code: "import sys, unittest\n\
                       result = unittest.main(module='test_shell', argv=['test_shell', '-v'], exit=False).result\n\
                       sys.exit(0 if result.wasSuccessful() and result.testsRun >= 8 else 1)\n"
                    .into(),
                files: vec![
                    ("shell.py".into(), read("shell.py")),
                    ("test_shell.py".into(), read("test_shell.py")),
                ],
                limits: runbox::service::LimitOverrides {
                    timeout: Some(std::time::Duration::from_secs(60)),
                    ..Default::default()
                },
                ..Default::default()
            },
            tokio_util::sync::CancellationToken::new(),
        )
        .await
        .expect("run");
    assert_eq!(out.exit_code, Some(0), "{}", out.tty());
}
