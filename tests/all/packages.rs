//! Pure-Python packages for operators (`--python-packages FILE`, docs/cli.md "Packages"): two
//! real wheels fetched from PyPI with pip, importable in a run, in a session, and listed
//! by `list_runtimes` (through the MCP Inspector); a wheel with compiled code and a
//! wrong hash are refused with messages that name them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

use crate::common;
use crate::mcp::{inspector, tool_call};

/// Neither is in the python runtime (its zip has many pure-Python packages already).
const HUMANIZE: &str = "humanize==4.11.0 --hash=sha256:b53caaec8532bcb2fff70c8826f904c35943f8cecaca29d272d9df38092736c0";
const IDNA: &str =
    "idna==3.10 --hash=sha256:946d195a0d259cbba61165e88e65941f16e9b36ea6ddb97f00452bae8b1287d3";

fn requirements(dir: &Path, lines: &[&str]) -> PathBuf {
    let path = dir.join("requirements.txt");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn runbox(packages: &Path, args: &[&str], stdin: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_runbox"));
    cmd.env("RUNBOX_CACHE_DIR", common::cache_dir())
        .arg("--quiet")
        .arg("--python-packages")
        .arg(packages)
        .args(args);
    common::output_with_stdin(&mut cmd, stdin)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn two_pure_wheels_import_in_runs_and_sessions_and_are_listed() {
    common::runbox();
    let dir = tempfile::tempdir().unwrap();
    let req = requirements(dir.path(), &["# pinned, pure-Python", HUMANIZE, IDNA]);
    let out = runbox(
        &req,
        &["run", "python", "-"],
        "import humanize, idna\nprint(humanize.intcomma(1234567), idna.encode('bücher.de'))",
    );
    assert_eq!(
        text(&out.stdout),
        "1,234,567 b'xn--bcher-kva.de'\n",
        "{}",
        text(&out.stderr)
    );
    // A session (the REPL is one): imported in one block, used in the next.
    let out = runbox(
        &req,
        &["repl", "python"],
        "import idna\nprint(idna.decode('xn--bcher-kva.de'))\n",
    );
    assert!(
        text(&out.stdout).contains("bücher.de"),
        "{}",
        text(&out.stderr)
    );
    // list_runtimes names them, over MCP.
    let req = req.to_str().unwrap();
    let mut args = vec![
        env!("CARGO_BIN_EXE_runbox"),
        "mcp",
        "--quiet",
        "--python-packages",
        req,
    ];
    args.extend(tool_call("list_runtimes", &[]));
    let listed = inspector(&args);
    let runtimes = listed["structuredContent"]["runtimes"].as_array().unwrap();
    let python = runtimes.iter().find(|r| r["name"] == "python").unwrap();
    assert_eq!(
        python["packages"],
        serde_json::json!(["humanize==4.11.0", "idna==3.10"])
    );
    let ruby = runtimes.iter().find(|r| r["name"] == "ruby").unwrap();
    assert!(ruby.get("packages").is_none(), "{ruby}");
}

#[test]
fn without_packages_they_are_not_there() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_runbox"));
    cmd.env("RUNBOX_CACHE_DIR", common::cache_dir())
        .args(["--quiet", "run", "python", "-"]);
    let out = common::output_with_stdin(&mut cmd, "import humanize");
    assert!(
        text(&out.stderr).contains("No module named 'humanize'"),
        "{}",
        text(&out.stderr)
    );
}

/// A wheel `name` holding `members`, and its sha256.
fn wheel(dir: &Path, name: &str, members: &[&str]) -> String {
    let path = dir.join(name);
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    for member in members {
        zip.start_file(*member, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(b"\x7fELF").unwrap();
    }
    zip.finish().unwrap();
    hex::encode(Sha256::digest(std::fs::read(&path).unwrap()))
}

#[test]
fn a_wheel_with_compiled_code_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let hash = wheel(
        dir.path(),
        "speedy-1.0-py3-none-any.whl",
        &[
            "speedy/__init__.py",
            "speedy/_c.cpython-311-x86_64-linux-gnu.so",
        ],
    );
    let req = requirements(
        dir.path(),
        &[&format!("speedy-1.0-py3-none-any.whl --hash=sha256:{hash}")],
    );
    let out = runbox(&req, &["run", "python", "-"], "print(1)");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(
        err.contains("speedy-1.0-py3-none-any.whl")
            && err.contains("compiled code")
            && err.contains("_c.cpython-311-x86_64-linux-gnu.so"),
        "{err}"
    );
}

#[test]
fn a_wrong_hash_or_an_unpinned_line_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let wrong = IDNA.replace("sha256:946d", "sha256:0000");
    let req = requirements(dir.path(), &[&wrong]);
    let out = runbox(&req, &["run", "python", "-"], "print(1)");
    let err = text(&out.stderr);
    assert!(
        err.contains("idna==3.10") && err.contains("sha256"),
        "{err}"
    );
    let req = requirements(dir.path(), &["idna==3.10"]);
    let out = runbox(&req, &["run", "python", "-"], "print(1)");
    let err = text(&out.stderr);
    assert!(
        err.contains("requirements.txt:1") && err.contains("--hash=sha256"),
        "{err}"
    );
}
