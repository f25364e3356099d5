//! The `runbox` binary as a person uses it: `run`, `runtimes`, and its errors.

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn runbox_cmd() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_runbox"));
    cmd.env("RUNBOX_CACHE_DIR", common::cache_dir())
        .env_remove("RUNBOX_PLUGINS")
        .arg("--quiet");
    cmd
}

fn run_piped(args: &[&str], stdin: &str) -> Output {
    common::output_with_stdin(runbox_cmd().args(args), stdin)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn hello_from_stdin_in_every_runtime() {
    let cases = [
        ("python", "print(sum(range(10)))"),
        ("ruby", "puts (0...10).sum"),
        ("php-cgi", "<?php echo array_sum(range(0, 9)), \"\\n\";"),
        (
            "quickjs",
            "console.log([...Array(10).keys()].reduce((a, b) => a + b))",
        ),
    ];
    for (runtime, code) in cases {
        let out = run_piped(&["run", runtime, "-"], code);
        assert_eq!(
            text(&out.stdout),
            "45\n",
            "{runtime}: {}",
            text(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{runtime}");
    }
}

#[test]
fn exit_code_and_stderr_pass_through() {
    let out = run_piped(
        &["run", "python"],
        "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)",
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(text(&out.stdout), "out\n");
    assert_eq!(text(&out.stderr), "err\n");
}

#[test]
fn program_file_and_stdin_file() {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("up.py");
    std::fs::write(&prog, "import sys\nprint(sys.stdin.read().upper(), end='')").unwrap();
    let input = dir.path().join("in.txt");
    std::fs::write(&input, "shout\n").unwrap();
    let out = runbox_cmd()
        .args(["run", "python"])
        .arg(&prog)
        .arg("--stdin")
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "SHOUT\n", "{}", text(&out.stderr));
}

/// `--file` places host files in the working directory (under their own name, or
/// NAME=PATH); `--out` receives what the program wrote, and only that.
#[test]
fn input_files_in_and_output_files_out() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.csv");
    std::fs::write(&data, "a,1\nb,2\n").unwrap();
    let extra = dir.path().join("whatever.txt");
    std::fs::write(&extra, "x").unwrap();
    let out_dir = dir.path().join("results");
    let out = run_piped(
        &[
            "run",
            "python",
            "-",
            "--file",
            data.to_str().unwrap(),
            "--file",
            &format!("in/notes.txt={}", extra.display()),
            "--out",
            out_dir.to_str().unwrap(),
        ],
        "import csv\ntotal = sum(int(r[1]) for r in csv.reader(open('data.csv')))\n\
         print(total, open('in/notes.txt').read())\nopen('sum.txt', 'w').write(str(total))\n\
         import os\nos.makedirs('deep/er')\nopen('deep/er/x.bin', 'wb').write(bytes(3))",
    );
    // The last line's value (the bytes written) is shown, as in the Python REPL.
    assert_eq!(text(&out.stdout), "3 x\n3\n", "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(out_dir.join("sum.txt")).unwrap(),
        "3"
    );
    assert_eq!(
        std::fs::read(out_dir.join("deep/er/x.bin")).unwrap(),
        [0, 0, 0]
    );
    // Unchanged inputs and the program's own source are not written back.
    assert!(!out_dir.join("data.csv").exists() && !out_dir.join("main.py").exists());
    assert!(text(&out.stderr).contains("wrote"), "{}", text(&out.stderr));

    // Without --out they are only named.
    let out = run_piped(&["run", "python", "-"], "open('r.txt', 'w').write('1')");
    assert!(text(&out.stderr).contains("r.txt") && text(&out.stderr).contains("--out"));
    // A missing host file is a runbox error.
    let out = run_piped(&["run", "python", "-", "--file", "/nonexistent/x.csv"], "1");
    assert_eq!(out.status.code(), Some(125));
    assert!(
        text(&out.stderr).contains("/nonexistent/x.csv"),
        "{}",
        text(&out.stderr)
    );
}

/// `runbox repl` runs each entered block in one session: what a model sees.
#[test]
fn repl_keeps_state_between_blocks() {
    let out = run_piped(
        &["repl", "python"],
        "x = 41\ndef f(a):\n    return a * 2\n\nprint(x + 1, f(21))\nraise ValueError('no')\n\
         print('still', x)\n:quit\nprint('not run')\n",
    );
    assert_eq!(
        text(&out.stdout),
        "42 42\nstill 41\n",
        "{}",
        text(&out.stderr)
    );
    let err = text(&out.stderr);
    assert!(
        err.contains("ValueError: no") && err.contains("[exit code 1]"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(0));
    let out = run_piped(
        &["repl", "quickjs"],
        "var n = 1;\nn += 1;\nconsole.log(n)\n",
    );
    assert_eq!(text(&out.stdout), "2\n", "{}", text(&out.stderr));
    let out = run_piped(&["repl", "cobol"], "");
    assert_eq!(out.status.code(), Some(125));
    assert!(text(&out.stderr).contains("unknown runtime `cobol`"));
}

/// `:fork` goes on in a copy of the session; `:back` returns to the source as it was.
#[test]
fn the_repl_forks_its_session() {
    let out = run_piped(
        &["repl", "python"],
        "x = 1\n:fork\nx = 2\nprint(x)\n:back\nprint(x)\n:back\n",
    );
    let err = text(&out.stderr);
    assert_eq!(text(&out.stdout), "2\n1\n", "{err}");
    assert!(err.contains("forked: now in session"), "{err}");
    assert!(err.contains("not in a fork"), "{err}");
    let out = run_piped(&["repl", "quickjs"], "var n = 1;\n:fork\nconsole.log(n)\n");
    let err = text(&out.stderr);
    assert_eq!(text(&out.stdout), "1\n", "{err}");
    assert!(
        err.contains("cannot fork") && err.contains("replay"),
        "{err}"
    );
}

/// What Tab and Ctrl-C do in `runbox repl` is said alike by its `:help` and docs/cli.md's
/// paragraph on it.
#[test]
fn the_repl_says_what_tab_and_ctrl_c_do() {
    let out = run_piped(&["repl", "python"], ":help\n");
    let help = text(&out.stderr);
    for said in [
        "Tab indents at the start of a line, elsewhere completes the word",
        "Ctrl-C stops a running block (the session keeps what earlier blocks made: it runs them\nagain, which takes as long as their computing took: their sleeps end at once)",
    ] {
        assert!(help.contains(said), "{said:?} not in :help:\n{help}");
    }
    let cli = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md"),
    )
    .unwrap();
    let section = &cli[cli.find("\n## `runbox repl`\n").unwrap()..];
    let section = &section[..section[1..].find("\n#").unwrap()].replace('\n', " ");
    for said in [
        "Tab at the start of a line (or after only spaces) indents by four spaces",
        "`math.sq` becomes `math.sqrt`",
        "a second Tab lists them",
        "rebuilt by running the blocks before again",
        "their sleeps end at once",
        "what the stopped block itself did to variables is undone",
    ] {
        assert!(
            section.contains(said),
            "{said:?} not in docs/cli.md's repl section"
        );
    }
}

#[test]
fn timeout_has_its_own_exit_status() {
    let out = run_piped(&["run", "quickjs", "--timeout", "0.5"], "while (true) {}");
    assert_eq!(out.status.code(), Some(124), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("timeout"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn unknown_runtime_is_a_clear_error() {
    let out = run_piped(&["run", "cobol"], "DISPLAY 'HI'.");
    assert_eq!(out.status.code(), Some(125));
    let err = text(&out.stderr);
    assert!(err.contains("unknown runtime `cobol`"), "{err}");
    assert!(err.contains("python") && err.contains("php-cgi"), "{err}");
}

#[test]
fn bad_plugins_file_names_file_entry_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plugins.toml");
    std::fs::write(
        &file,
        "[plugins.py]\nlanguage = \"Python\"\nversion = \"1\"\nextension = \"py\"\nadapter = \"command\"\n\
         [plugins.py.tools.python]\npath = \"python.wasm\"\nsha256 = \"xyz\"\n",
    )
    .unwrap();
    let out = runbox_cmd()
        .arg("--plugins")
        .arg(&file)
        .arg("runtimes")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    let err = text(&out.stderr);
    assert!(err.contains("plugins.toml"), "{err}");
    assert!(
        err.contains("`py`") && err.contains("tools.python.sha256"),
        "{err}"
    );
}

#[test]
fn wrong_sha256_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("fake.wasm"), b"\0asm\x01\0\0\0").unwrap();
    let file = dir.path().join("plugins.toml");
    std::fs::write(
        &file,
        format!(
            "[plugins.fake]\nlanguage = \"Fake\"\nversion = \"1\"\nextension = \"f\"\nadapter = \"command\"\n\
             [plugins.fake.settings]\nentry = \"main.f\"\nargv = [\"fake\", \"{{entry}}\"]\n\
             [plugins.fake.tools.fake]\npath = \"fake.wasm\"\nsha256 = \"{}\"\n",
            "0".repeat(64)
        ),
    )
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let out = runbox_cmd()
        .env("RUNBOX_CACHE_DIR", cache.path())
        .arg("--plugins")
        .arg(&file)
        .args(["run", "fake", "-"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    let err = text(&out.stderr).to_lowercase();
    assert!(err.contains("sha256"), "{err}");
    assert!(err.contains(&"0".repeat(64)), "{err}");
}

#[test]
fn runtimes_lists_every_runtime_with_cache_state() {
    // Make sure everything is fetched and compiled first.
    let _ = common::runbox();
    let out = runbox_cmd().arg("runtimes").output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    for name in ["python", "quickjs", "ruby", "php-cgi"] {
        let line = listing
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing:\n{listing}"));
        assert!(line.contains("yes"), "{line}");
    }
}

#[test]
fn help_describes_the_commands() {
    let out = runbox_cmd().arg("--help").output().unwrap();
    let help = text(&out.stdout);
    for word in ["run", "repl", "runtimes", "plugins", "mcp"] {
        assert!(help.contains(word), "{help}");
    }
}

#[test]
fn plugins_test_passes_a_good_plugin_and_fails_a_wrong_sample() {
    let _ = common::runbox();
    let out = runbox_cmd()
        .args(["plugins", "test", "quickjs"])
        .output()
        .unwrap();
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}{}", text(&out.stderr));
    assert!(report.contains("ok    quickjs describe"), "{report}");
    assert!(report.contains(" 0 failed"), "{report}");

    // The same runtime with a sample whose expectation is wrong must fail the suite: its
    // entry, beside a copy of the files it includes with that one sample changed.
    let builtin = runbox::manifest::DEFAULT_MANIFEST;
    let start = builtin.find("[plugins.quickjs]").unwrap();
    let end = builtin[start..].find("[plugins.ruby]").unwrap() + start;
    let dir = tempfile::tempdir().unwrap();
    let runtime_dir = dir.path().join("runtimes/quickjs");
    std::fs::create_dir_all(&runtime_dir).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtimes/quickjs");
    for file in std::fs::read_dir(&source).unwrap() {
        let file = file.unwrap();
        std::fs::copy(file.path(), runtime_dir.join(file.file_name())).unwrap();
    }
    let samples = std::fs::read_to_string(source.join("samples.toml")).unwrap();
    let wrong = samples.replacen("stdout = \"hello, world\\n\"", "stdout = \"goodbye\\n\"", 1);
    assert!(wrong.contains("goodbye"));
    std::fs::write(runtime_dir.join("samples.toml"), wrong).unwrap();
    let file = dir.path().join("plugins.toml");
    std::fs::write(&file, &builtin[start..end]).unwrap();
    let out = runbox_cmd()
        .arg("--plugins")
        .arg(&file)
        .args(["plugins", "test"])
        .output()
        .unwrap();
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(report.contains("FAIL  quickjs hello"), "{report}");
    assert!(report.contains("goodbye"), "{report}");
}

#[test]
fn a_missing_plugins_file_is_named_once_with_its_cause() {
    let out = runbox_cmd()
        .args(["--plugins", "/no/such/plugins.toml", "runtimes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    let err = text(&out.stderr);
    assert!(err.contains("/no/such/plugins.toml"), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

#[test]
fn absurd_limits_are_refused_not_panics() {
    for args in [
        ["run", "quickjs", "-", "--timeout", "1e20"],
        ["run", "quickjs", "-", "--timeout", "0"],
        ["run", "quickjs", "-", "--memory-mb", "18446744073709551615"],
        ["run", "quickjs", "-", "--memory-mb", "0"],
        ["run", "quickjs", "-", "--output-bytes", "0"],
    ] {
        let out = run_piped(&args, "console.log(1)");
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            stderr.contains(args[3]),
            "{args:?} names the flag: {stderr}"
        );
    }
}

/// One span per run, with what an operator needs, on stderr (stdout is the program's).
#[test]
fn every_run_is_logged_with_its_outcome() {
    let mut cmd = runbox_cmd();
    cmd.env("RUNBOX_LOG", "runbox=info");
    let mut child = cmd
        .args(["run", "quickjs", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"console.log('hi')")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(text(&out.stdout), "hi\n");
    let log = text(&out.stderr);
    let line = log
        .lines()
        .find(|l| l.contains("run finished"))
        .unwrap_or_else(|| panic!("no run line in {log}"));
    for field in [
        "runtime=quickjs",
        "status=\"completed\"",
        "duration_ms=",
        "peak_memory=",
        "scratch_bytes=",
    ] {
        assert!(line.contains(field), "{field} missing from {line}");
    }
}

/// A terminal gets everything: the whole output (no cap on what is shown, as a model's
/// result has) and, with `--out`, output files of any size.
#[test]
fn the_terminal_gets_the_whole_output_and_big_files() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = run_piped(
        &["run", "python", "-", "--out", out_dir.to_str().unwrap()],
        "import hashlib, os\ndata = os.urandom(12 << 20)\n\
         _ = open('big.bin', 'wb').write(data)\n\
         for i in range(20000):\n    print(f'line {i:05d}')\n\
         print(hashlib.sha256(data).hexdigest())",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 20001, "every line, none left out");
    assert_eq!(lines[12345], "line 12345");
    assert!(!stdout.contains("left out"));
    let big = std::fs::read(out_dir.join("big.bin")).unwrap();
    assert_eq!(big.len(), 12 << 20);
    use sha2::Digest;
    assert_eq!(hex::encode(sha2::Sha256::digest(&big)), lines[20000]);
}

/// What `--help` shows, by section.
struct Help {
    /// The first word of each line under `Commands:`, but `help`.
    commands: Vec<String>,
    /// The `--name` of each line under `Options:` (the command's own), but `--help` and
    /// `--version`.
    own: Vec<String>,
    /// The `--name` of each line under `Global options:`.
    global: Vec<String>,
}

fn help_of(args: &[&str]) -> Help {
    let out = runbox_cmd().args(args).arg("--help").output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let help = text(&out.stdout);
    let mut parsed = Help {
        commands: Vec::new(),
        own: Vec::new(),
        global: Vec::new(),
    };
    let mut section = "";
    for line in help.lines() {
        if line.ends_with(':') && !line.starts_with(' ') {
            section = line;
            continue;
        }
        let trimmed = line.trim_start();
        let flag = trimmed
            .split([' ', ','])
            .find(|w| w.starts_with("--") && w.len() > 2)
            .filter(|f| *f != "--help" && *f != "--version")
            .map(str::to_string);
        match section {
            "Commands:" if line.starts_with("  ") => {
                let name = trimmed.split_whitespace().next().unwrap_or_default();
                if name != "help" {
                    parsed.commands.push(name.to_string());
                }
            }
            "Options:" => parsed.own.extend(flag),
            "Global options:" => parsed.global.extend(flag),
            _ => {}
        }
    }
    parsed
}

/// docs/cli.md's command block and its global options, and docs/settings.md's settings
/// table, name every command and flag `--help` shows: the docs cannot drift from the code.
#[test]
fn the_docs_name_every_command_and_flag() {
    let read = |doc: &str| {
        std::fs::read_to_string(format!("{}/../{doc}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    };
    let (cli, settings) = (read("docs/cli.md"), read("docs/settings.md"));
    let after = |doc: &'static str, text: &str, marker: &str| -> usize {
        text.find(marker)
            .unwrap_or_else(|| panic!("{marker} not in {doc}"))
    };
    let block = &cli[after("docs/cli.md", &cli, "# Command line\n\n```\n")..];
    let block = &block[..block[20..].find("```").unwrap() + 20];
    let globals = &cli[after("docs/cli.md", &cli, "Global options:")..];
    let globals = &globals[..globals.find("\n\n").unwrap()];
    let settings = &settings[after("docs/settings.md", &settings, "## Settings")..];
    let top = help_of(&[]);
    let (commands, global_flags) = (top.commands, top.global);
    assert!(commands.len() >= 5, "{commands:?}");
    assert!(global_flags.len() >= 5, "{global_flags:?}");
    for command in &commands {
        if command == "plugins" {
            for sub in help_of(&["plugins"]).commands {
                assert!(
                    block.contains(&format!("runbox plugins {sub}")),
                    "`plugins {sub}` not in {block}"
                );
            }
        } else {
            assert!(
                block.contains(&format!("runbox {command}")),
                "`{command}` not in {block}"
            );
        }
    }
    for flag in &global_flags {
        assert!(
            globals.contains(&format!("`{flag}")),
            "global {flag} not in: {globals}"
        );
    }
    let run_line = block
        .lines()
        .find(|l| l.starts_with("runbox run "))
        .unwrap();
    for flag in &help_of(&["run"]).own {
        assert!(
            run_line.contains(flag.as_str()),
            "run's {flag} not in: {run_line}"
        );
    }
    let repl_line = block
        .lines()
        .find(|l| l.starts_with("runbox repl "))
        .unwrap();
    for flag in &help_of(&["repl"]).own {
        assert!(
            repl_line.contains(flag.as_str()),
            "repl's {flag} not in: {repl_line}"
        );
    }
    for flag in &help_of(&["mcp"]).own {
        assert!(
            settings.contains(&format!("| `{flag}")),
            "mcp's {flag} is not in docs/settings.md's settings table"
        );
    }
}

/// `--help` of every command shows the global flags under their own heading, apart from
/// the command's own: all of them there, none of them among the command's.
#[test]
fn help_keeps_global_options_apart() {
    let global = help_of(&[]).global;
    assert!(global.contains(&"--cache-dir".to_string()), "{global:?}");
    for args in [
        &["run"][..],
        &["repl"],
        &["mcp"],
        &["runtimes"],
        &["plugins", "fetch"],
    ] {
        let help = help_of(args);
        assert_eq!(help.global, global, "{args:?}");
        for flag in &help.own {
            assert!(
                !global.contains(flag),
                "{args:?}: global {flag} under Options"
            );
        }
    }
    assert!(help_of(&["run"]).own.contains(&"--timeout".to_string()));
    assert!(help_of(&["mcp"])
        .own
        .contains(&"--max-concurrent".to_string()));
}

/// A bad command line exits 125 ("runbox itself failed", as docs/cli.md and `--help` say),
/// not clap's 2, with clap's message naming the argument; `--help` and `--version` exit 0.
#[test]
fn bad_arguments_exit_125() {
    let cases: [(&[&str], &str); 7] = [
        (&["run", "python", "x.py", "--bogus"], "--bogus"),
        (&["mcp", "--max-concurrent", "abc"], "abc"),
        (&["repl", "python", "--timeout", "soon"], "soon"),
        (&["run"], "<RUNTIME>"),
        (&["frobnicate"], "frobnicate"),
        (&["--program-compiler", "gcc", "runtimes"], "gcc"),
        (&[], "Usage"),
    ];
    for (args, named) in cases {
        let out = runbox_cmd()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {err}");
        assert!(err.contains(named), "{args:?} names {named}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // A bad value from the environment is a bad argument too.
    let out = runbox_cmd()
        .arg("mcp")
        .env("RUNBOX_MAX_CONCURRENT", "many")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out.stderr));
    for args in [
        &["--help"][..],
        &["--version"],
        &["run", "--help"],
        &["help", "mcp"],
    ] {
        let out = runbox_cmd().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(!out.stdout.is_empty(), "{args:?}");
    }
    let help = text(&runbox_cmd().arg("--help").output().unwrap().stdout);
    assert!(help.contains("Bad arguments exit 125"), "{help}");
}

/// A program in a file reads what is piped into `runbox run`; `--stdin -` says so
/// explicitly, and is refused when the program itself comes from standard input.
#[test]
fn piped_stdin_reaches_a_program_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("greet.py");
    std::fs::write(
        &prog,
        "import sys\nprint('hello', sys.stdin.read().strip())",
    )
    .unwrap();
    let prog = prog.to_str().unwrap();
    let out = run_piped(&["run", "python", prog], "carol\n");
    assert_eq!(text(&out.stdout), "hello carol\n", "{}", text(&out.stderr));
    let out = run_piped(&["run", "python", prog, "--stdin", "-"], "dave\n");
    assert_eq!(text(&out.stdout), "hello dave\n", "{}", text(&out.stderr));
    // Nothing piped (stdin closed): end of input at once, not a hang.
    let out = runbox_cmd()
        .args(["run", "python", prog])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "hello \n", "{}", text(&out.stderr));
    let out = run_piped(&["run", "python", "--stdin", "-"], "print(1)");
    assert_eq!(out.status.code(), Some(125));
    assert!(
        text(&out.stderr).contains("both be read from standard input"),
        "{}",
        text(&out.stderr)
    );
}

/// `-- ARGS` reach the program in every runtime that has arguments, python included,
/// quoted as given.
#[test]
fn arguments_after_two_dashes_reach_every_runtime() {
    let cases = [
        (
            "python",
            "import sys\nprint(sys.argv[1:])",
            "['a', 'b c', '\"q\"']\n",
        ),
        ("ruby", "p ARGV", "[\"a\", \"b c\", \"\\\"q\\\"\"]\n"),
        (
            "quickjs",
            "console.log(JSON.stringify(scriptArgs.slice(1)))",
            "[\"a\",\"b c\",\"\\\"q\\\"\"]\n",
        ),
        (
            "javascript",
            "console.log(JSON.stringify(process.argv.slice(2)))",
            "[\"a\",\"b c\",\"\\\"q\\\"\"]\n",
        ),
    ];
    for (runtime, code, expected) in cases {
        let out = run_piped(&["run", runtime, "-", "--", "a", "b c", "\"q\""], code);
        assert_eq!(
            text(&out.stdout),
            expected,
            "{runtime}: {}",
            text(&out.stderr)
        );
    }
}

/// What a program hits in the sandbox is said in the sandbox's terms, with what to do.
#[test]
fn sandbox_messages_say_what_to_do() {
    // urllib, and runbox's own `requests` (docs/network.md), without a network policy.
    for program in [
        "import urllib.request\nurllib.request.urlopen('http://example.com')",
        "import requests\nrequests.get('http://example.com')",
    ] {
        let err = text(&run_piped(&["run", "python"], program).stderr);
        assert!(
            err.contains("this sandbox has no network") && err.contains("files"),
            "{err}"
        );
        assert!(!err.contains("getaddrinfo"), "{err}");
    }
    let out = run_piped(&["run", "python"], "import django");
    let err = text(&out.stderr);
    assert!(
        err.contains("No module named 'django'") && err.contains("cannot install packages"),
        "{err}"
    );
    assert!(!err.contains("site-packages"), "{err}");
    let out = run_piped(
        &["run", "javascript", "--memory-mb", "64"],
        "const a = [];\nfor (;;) a.push('x'.repeat(1 << 20) + a.length);",
    );
    let err = text(&out.stderr);
    assert!(
        err.contains("out of memory: the program reached the sandbox's memory cap"),
        "{err}"
    );
    assert!(
        !err.contains("RUST_BACKTRACE") && !err.contains("memory allocation of"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(127), "terminated: {err}");
}

/// `runbox runtimes` lines up, and `run --help` names every built-in runtime.
#[test]
fn the_runtimes_table_lines_up_and_help_names_every_runtime() {
    let _ = common::runbox();
    let out = runbox_cmd().arg("runtimes").output().unwrap();
    let listing = text(&out.stdout);
    let header = listing.lines().next().unwrap();
    let column = header.find("COMPILED").unwrap();
    for line in listing.lines().skip(1) {
        assert!(
            line[column..].starts_with("yes") || line[column..].starts_with("no"),
            "not under COMPILED: {line:?}\n{listing}"
        );
    }
    let help = text(
        &runbox_cmd()
            .args(["run", "--help"])
            .output()
            .unwrap()
            .stdout,
    );
    for name in [
        "python",
        "quickjs",
        "ruby",
        "php-cgi",
        "sqlite",
        "clang",
        "clangpp",
        "javascript",
    ] {
        assert!(help.contains(name), "{name} not in run --help:\n{help}");
    }
}

/// `runbox repl` in a real terminal: tests/terminal/repl.py drives it through a pty
/// (Ctrl-C keeping the session within a bound and saying what it rebuilds and lost, Tab
/// indenting and completing globals and attributes from the interpreter, or typed words,
/// history, :save, unknown commands, multi-line SQL).
#[test]
fn the_repl_in_a_terminal() {
    let _ = common::runbox();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/terminal/repl.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_runbox"))
        .env("RUNBOX_CACHE_DIR", common::cache_dir())
        .stdin(Stdio::null())
        .output()
        .expect("run python3 tests/terminal/repl.py");
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Each `--flag` line of a `--help`, with its `[env: NAME…]` and `[default: VALUE]`.
fn help_defaults(args: &[&str]) -> Vec<(String, Option<String>, Option<String>)> {
    let out = runbox_cmd().args(args).arg("--help").output().unwrap();
    let help = text(&out.stdout);
    let between = |line: &str, start: &str, end: char| {
        line.find(start).map(|i| {
            let rest = &line[i + start.len()..];
            rest[..rest.find(end).unwrap_or(rest.len())].to_string()
        })
    };
    help.lines()
        .filter_map(|line| {
            let flag = line
                .trim_start()
                .split([' ', ','])
                .find(|w| w.starts_with("--") && w.len() > 2)?;
            Some((
                flag.to_string(),
                between(line, "[env: ", ']')
                    .map(|e| e.split('=').next().unwrap_or_default().to_string()),
                between(line, "[default: ", ']'),
            ))
        })
        .collect()
}

/// What docs/settings.md, docs/cli.md and docs/scale-out.md say agrees with the code: the
/// settings table's variables and numeric defaults are those `runbox mcp --help` shows,
/// the idle HTTP session's end and the session store's lease are the code's constants,
/// replicas with a session store are not said to lose their sessions, and `runbox run`
/// and `runbox repl` are told under headings of their own in "Command line".
#[test]
fn the_docs_agree_with_the_code() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let settings_doc = std::fs::read_to_string(format!("{root}/docs/settings.md")).unwrap();
    let cli = std::fs::read_to_string(format!("{root}/docs/cli.md")).unwrap();
    let scale_out = std::fs::read_to_string(format!("{root}/docs/scale-out.md")).unwrap();

    // The settings table against `runbox mcp --help`.
    let settings = &settings_doc[settings_doc.find("\n## Settings\n").unwrap()..];
    let settings = &settings[..settings[1..]
        .find("\n## ")
        .map_or(settings.len(), |i| i + 1)];
    let mut checked = 0;
    for (flag, env, default) in help_defaults(&["mcp"]) {
        let Some(row) = settings.lines().find(|l| {
            l.starts_with(&format!("| `{flag}`")) || l.starts_with(&format!("| `{flag} "))
        }) else {
            continue; // the_docs_name_every_command_and_flag says which are missing
        };
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        if let Some(env) = env {
            assert_eq!(cells[2], format!("`{env}`"), "{flag}'s variable: {row}");
        }
        let (Some(default), Ok(documented)) = (default, cells[3].parse::<f64>()) else {
            continue;
        };
        let default: f64 = default
            .parse()
            .unwrap_or_else(|_| panic!("{flag}: {default}"));
        assert_eq!(documented, default, "{flag}'s default: {row}");
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} defaults checked");

    // An idle protocol session of a handshake-era HTTP client.
    let keep_alive = runbox::mcp::transport::http::protocol_sessions::KEEP_ALIVE.as_secs();
    assert!(
        settings_doc.contains(&format!(
            "idle protocol session is dropped after {keep_alive} s"
        )),
        "docs/settings.md must say an idle HTTP session is dropped after {keep_alive} s"
    );
    assert!(!settings_doc.contains("five minutes") && !readme.contains("five minutes"));

    // Replicas and the session store.
    assert!(!scale_out.contains("not durable"), "docs/scale-out.md");
    assert!(
        !scale_out.contains("There is no store"),
        "docs/scale-out.md"
    );
    let lease = runbox::session::directory::LEASE_FRESH.as_secs();
    assert!(
        scale_out.contains(&format!("lease is stale, {lease} s"))
            && scale_out.contains(&format!("go stale ({lease} s;")),
        "docs/scale-out.md must give the lease's {lease} s"
    );
    // ... and that a crashed process's own host does not wait for it (session/directory.rs).
    assert!(
        scale_out.contains("at once on a server restarted on the crashed one's host"),
        "docs/scale-out.md must say a restart on the same host resumes at once"
    );
    let failures = &scale_out[scale_out.find("## Failure modes").unwrap()..];
    let crash = failures
        .lines()
        .find(|l| l.starts_with("| a replica crashes"))
        .unwrap();
    let drain = failures
        .lines()
        .find(|l| l.starts_with("| a replica drains"))
        .unwrap();
    for row in [crash, drain] {
        assert!(row.contains("session store"), "{row}");
    }

    // `runbox run` and `runbox repl` under their own headings in "Command line".
    assert!(cli.starts_with("# Command line\n"), "docs/cli.md");
    let command_line = &cli[..];
    for (heading, opening) in [
        (
            "## `runbox run`",
            "`runbox run` prints the program's output",
        ),
        ("## `runbox repl`", "`runbox repl RUNTIME` opens a session"),
    ] {
        let section = &command_line[command_line
            .find(&format!("\n{heading}\n"))
            .unwrap_or_else(|| panic!("no {heading} in Command line"))..];
        let section = &section[..section[1..].find("\n#").map_or(section.len(), |i| i + 1)];
        assert!(
            section.contains(opening),
            "{heading} does not hold {opening:?}"
        );
        assert_eq!(cli.matches(opening).count(), 1, "{opening:?} once");
    }
}

/// `runbox run shell FILE` has the other runtimes as commands, as over MCP: each is
/// prepared when the script first runs it.
#[test]
fn the_shell_runs_the_other_runtimes_as_commands() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("hub.sh");
    std::fs::write(
        &script,
        "python -c 'print(6 * 7)'\n\
         echo 'select 1 + 1;' | sqlite3\n\
         printf 'int main(void) { return 3; }\\n' > r.c && cc r.c -o r && ./r; echo \"cc $?\"\n",
    )
    .unwrap();
    let out = runbox_cmd()
        .args(["run", "--timeout", "60", "shell"])
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "42\n2\ncc 3\n", "{}", text(&out.stderr));
    assert_eq!(out.status.code(), Some(0));
}

/// `runbox run` on a runtime whose snapshot is still to be taken answers from the
/// stand-in (as `runbox mcp` does), then finishes the snapshot before it exits, saying so;
/// the next run starts from the snapshot.
#[test]
fn a_first_run_answers_before_the_snapshot_and_then_takes_it() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = crate::custom_plugin::snapshot_plugin(dir.path());
    let cache = dir.path().join("cache");
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_runbox"))
            .env("RUNBOX_CACHE_DIR", &cache)
            .env("RUNBOX_LOG", "info")
            .arg("--plugins")
            .arg(&plugins)
            .args(["run", "snap", "-"])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let first = run();
    let stderr = text(&first.stderr);
    assert_eq!(text(&first.stdout), "Db\n", "{stderr}");
    assert_eq!(first.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("served before its snapshot is taken"),
        "{stderr}"
    );
    let second = run();
    let stderr = text(&second.stderr);
    assert_eq!(text(&second.stdout), "Db\n", "{stderr}");
    assert!(
        !stderr.contains("served before its snapshot is taken"),
        "{stderr}"
    );
    assert!(!stderr.contains("answered before its snapshot"), "{stderr}");
}
