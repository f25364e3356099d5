//! The shell run natively on a temporary directory, its output captured.

use std::sync::{Arc, Mutex};

use crate::commands::{Commands, Finished, NoCommands};
use crate::shell::{Output, Script, Shell};

#[derive(Default)]
struct Capture {
    stdout: Mutex<Vec<u8>>,
    stderr: Mutex<Vec<u8>>,
    /// Both, in the order they were written.
    both: Mutex<Vec<u8>>,
}

impl Output for Capture {
    fn stdout(&self, bytes: &[u8]) {
        self.stdout.lock().unwrap().extend_from_slice(bytes);
        self.both.lock().unwrap().extend_from_slice(bytes);
    }
    fn stderr(&self, bytes: &[u8]) {
        self.stderr.lock().unwrap().extend_from_slice(bytes);
        self.both.lock().unwrap().extend_from_slice(bytes);
    }
}

struct Session {
    dir: tempfile::TempDir,
    shell: Shell,
    capture: Arc<Capture>,
}

impl Session {
    fn new() -> Session {
        Session::with_commands(Arc::new(NoCommands))
    }

    fn with_commands(commands: Arc<dyn Commands>) -> Session {
        let dir = tempfile::tempdir().unwrap();
        let capture = Arc::new(Capture::default());
        let shell = Shell::new(dir.path(), capture.clone(), commands).unwrap();
        Session {
            dir,
            shell,
            capture,
        }
    }

    fn file(&self, name: &str, contents: &str) -> &Self {
        std::fs::write(self.dir.path().join(name), contents).unwrap();
        self
    }

    /// (exit status, stdout, stderr) of this script alone.
    fn run_with(
        &mut self,
        code: &str,
        stdin: Option<&str>,
        args: &[&str],
    ) -> (i32, String, String) {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let status = self.shell.run(&Script {
            code,
            args: &args,
            stdin: stdin.map(str::as_bytes),
        });
        let take = |m: &Mutex<Vec<u8>>| {
            String::from_utf8_lossy(&std::mem::take(&mut *m.lock().unwrap())).into_owned()
        };
        (
            status,
            take(&self.capture.stdout),
            take(&self.capture.stderr),
        )
    }

    fn run(&mut self, code: &str) -> (i32, String, String) {
        self.run_with(code, None, &[])
    }
}

fn ok(stdout: &str) -> (i32, String, String) {
    (0, stdout.to_string(), String::new())
}

#[test]
fn the_tools_of_the_issue_work_on_input_files() {
    let mut s = Session::new();
    s.file("data.csv", "a 1\nb 2\nc 39\n")
        .file("file.json", "{\"a\": {\"b\": [1, 2]}, \"c\": 3}\n")
        .file("log.txt", "ok\nerror: x\nok\nerror: y\n");
    assert_eq!(s.run("ls | wc -l"), ok("3\n"));
    assert_eq!(s.run("grep -c error log.txt"), ok("2\n"));
    assert_eq!(s.run("awk '{s+=$2} END {print s}' data.csv"), ok("42\n"));
    assert_eq!(s.run("jq -c .a file.json"), ok("{\"b\":[1,2]}\n"));
    assert_eq!(
        s.run("head -n 1 data.csv; tail -n 1 data.csv"),
        ok("a 1\nc 39\n")
    );
    assert_eq!(
        s.run("cut -d' ' -f1 data.csv | tr a-z A-Z | sort -r | uniq"),
        ok("C\nB\nA\n")
    );
    assert_eq!(s.run("sed -n 's/error: //p' log.txt"), ok("x\ny\n"));
    assert_eq!(s.run("find . -name '*.json'"), ok("./file.json\n"));
    assert_eq!(
        s.run("ls *.txt | xargs cat | sort | uniq -c | sort -rn | head -1"),
        ok("      2 ok\n")
    );
    assert_eq!(s.run("cat data.csv | wc -l"), ok("3\n"));
}

#[test]
fn the_language_works() {
    let mut s = Session::new();
    let script = "n=0\nfor f in a b c; do n=$((n + 1)); done\nif [ \"$n\" -eq 3 ]; then echo three; else echo other; fi\ngreet() { echo \"hi $1\"; }\ngreet you > out.txt\ncat < out.txt\nfalse || echo fallback\necho err >&2\n";
    let (status, stdout, stderr) = s.run(script);
    assert_eq!(
        (status, stdout.as_str(), stderr.as_str()),
        (0, "three\nhi you\nfallback\n", "err\n")
    );
    // Files it wrote are real ones.
    assert_eq!(
        std::fs::read_to_string(s.dir.path().join("out.txt")).unwrap(),
        "hi you\n"
    );
}

#[test]
fn exit_codes_args_and_stdin() {
    let mut s = Session::new();
    assert_eq!(
        s.run("echo bye; exit 3"),
        (3, "bye\n".into(), String::new())
    );
    assert_eq!(s.run("false").0, 1);
    assert_eq!(s.run("nosuchcommand").0, 127);
    assert_eq!(
        s.run_with("echo \"$#: $1 $2\"", None, &["x", "y z"]),
        ok("2: x y z\n")
    );
    assert_eq!(s.run_with("tr a-z A-Z", Some("abc\n"), &[]), ok("ABC\n"));
    assert_eq!(
        s.run_with(
            "while read -r line; do echo \"<$line>\"; done",
            Some("a\nb\n"),
            &[]
        ),
        ok("<a>\n<b>\n")
    );
}

#[test]
fn a_syntax_error_is_reported() {
    let (status, stdout, stderr) = Session::new().run("if then fi");
    assert_eq!((status, stdout.as_str()), (2, ""));
    assert!(!stderr.is_empty());
}

#[test]
fn a_session_keeps_variables_functions_and_directory() {
    let mut s = Session::new();
    assert_eq!(
        s.run("count=41; inc() { count=$((count + 1)); }; mkdir -p work; cd work")
            .0,
        0
    );
    assert_eq!(s.run("inc; echo $count; pwd"), ok("42\n/work\n"));
}

#[test]
fn loops_are_not_cut_short_by_bashkit_limits() {
    let (status, stdout, stderr) =
        Session::new().run("n=0; while [ $n -lt 200000 ]; do n=$((n + 1)); done; echo $n");
    assert_eq!(
        (status, stdout.as_str(), stderr.as_str()),
        (0, "200000\n", "")
    );
}

#[test]
fn stdout_and_stderr_keep_the_order_of_the_commands() {
    let mut s = Session::new();
    s.run("echo out; echo err >&2; seq 3 | wc -l; echo err2 >&2");
    let both = std::mem::take(&mut *s.capture.both.lock().unwrap());
    assert_eq!(String::from_utf8_lossy(&both), "out\nerr\n3\nerr2\n");
}

/// The `tool` command, with `tools/tools.json` and a regular file standing in for the
/// device `tools/call` (the request overwrites its start; the answer is what follows).
mod tool_command {
    use super::*;

    const MANIFEST: &str = r#"{"servers": {
      "everything": {"available": true, "tools": [
        {"name": "add", "description": "Adds two numbers\nand more",
         "inputSchema": {"type": "object", "required": ["a", "b"],
                         "properties": {"a": {"type": "number", "description": "first"}, "b": {"type": "number"}}}},
        {"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}
      ]},
      "github": {"available": false, "message": "connection refused", "tools": []}
    }}"#;

    fn with_tools(manifest: &str) -> Session {
        let s = Session::new();
        std::fs::create_dir(s.dir.path().join("tools")).unwrap();
        s.file("tools/tools.json", manifest);
        s
    }

    /// The device answers `answer` to a request of `request`'s length.
    fn answer(s: &Session, request: &str, answer: &str) {
        s.file(
            "tools/call",
            &format!("{}{answer}", " ".repeat(request.len())),
        );
    }

    fn written(s: &Session, len: usize) -> String {
        std::fs::read_to_string(s.dir.path().join("tools/call")).unwrap()[..len].to_string()
    }

    #[test]
    fn a_call_prints_the_value_as_json() {
        let mut s = with_tools(MANIFEST);
        let request = r#"{"server":"everything","tool":"add","arguments":{"a":2,"b":3}}"#;
        answer(
            &s,
            request,
            r#"{"ok": true, "value": 5, "structured": true, "content": []}"#,
        );
        assert_eq!(s.run("tool everything add --a 2 --b=3"), ok("5\n"));
        assert_eq!(written(&s, request.len()), request);

        let request = r#"{"server":"everything","tool":"echo","arguments":{"message":"hi there"}}"#;
        answer(
            &s,
            request,
            r#"{"ok":true,"value":"Echo: hi there","structured":false}"#,
        );
        assert_eq!(
            s.run("tool everything echo --message 'hi there' | jq -r ."),
            ok("Echo: hi there\n")
        );
        assert_eq!(written(&s, request.len()), request);
        answer(
            &s,
            request,
            r#"{"ok":true,"value":"Echo: hi there","structured":false}"#,
        );
        assert_eq!(
            s.run("v=$(tool everything echo --json '{\"message\": \"hi there\"}'); echo \"$v\""),
            ok("\"Echo: hi there\"\n")
        );
    }

    #[test]
    fn a_failed_call_says_why_and_exits_1_or_2() {
        let mut s = with_tools(MANIFEST);
        let request = r#"{"server":"everything","tool":"echo","arguments":{"message":"x"}}"#;
        answer(
            &s,
            request,
            r#"{"ok":false,"error":"tool_error","message":"it broke","content":[]}"#,
        );
        assert_eq!(
            s.run("tool everything echo --message x"),
            (1, String::new(), "tool: everything.echo: it broke\n".into())
        );
        answer(
            &s,
            request,
            r#"{"ok":false,"error":"not_allowed","message":"allowed: add"}"#,
        );
        assert_eq!(
            s.run("tool everything echo --message x || echo status $?"),
            (
                0,
                "status 2\n".into(),
                "tool: everything.echo: allowed: add\n".into()
            )
        );
        let (status, stdout, stderr) = s.run("tool everything add --a x");
        assert_eq!((status, stdout.as_str()), (2, ""));
        assert_eq!(
            stderr,
            "tool: everything.add: --a takes a number (as JSON), not `x`\n"
        );
    }

    #[test]
    fn without_tools_a_call_is_unavailable() {
        let mut s = Session::new();
        assert_eq!(
            s.run("tool everything echo --message hi"),
            (
                2,
                String::new(),
                "tool: everything.echo: no tools are configured on this server (runbox mcp --tools-config)\n".into()
            )
        );
        let (status, _, stderr) = s.run("tool");
        assert_eq!(status, 2);
        assert!(stderr.contains("no tools are configured"), "{stderr}");
    }

    #[test]
    fn usage_lists_the_servers_and_tools() {
        let mut s = with_tools(MANIFEST);
        let (status, stdout, stderr) = s.run("tool");
        assert_eq!((status, stdout.as_str()), (2, ""));
        assert!(stderr.starts_with("usage: tool SERVER TOOL"), "{stderr}");
        assert!(
            stderr.contains(
                "servers and their tools:\n  everything\n    add: Adds two numbers\n    echo\n  github (unavailable: connection refused)\n    (no tools)\n"
            ),
            "{stderr}"
        );
        let (status, stdout, stderr) = s.run("tool --help");
        assert_eq!((status, stderr.as_str()), (0, ""));
        assert!(stdout.starts_with("usage: tool SERVER TOOL"), "{stdout}");
        // One server: only its tools.
        let (status, _, stderr) = s.run("tool everything");
        assert_eq!(status, 2);
        assert!(
            stderr.contains("  everything\n") && !stderr.contains("github"),
            "{stderr}"
        );
        // One tool: its flags.
        assert_eq!(
            s.run("tool everything add --help"),
            ok("usage: tool everything add --a NUMBER --b NUMBER\nAdds two numbers\nand more\n  --a (number, required): first\n  --b (number, required)\n")
        );
    }
}

/// A host with one command, `upper` (its stdin in capitals, its arguments on stderr), and
/// programs: a path it runs by printing what it was asked.
struct FakeHost {
    calls: Mutex<Vec<String>>,
}

impl Commands for FakeHost {
    fn available(&self) -> Vec<(String, String)> {
        vec![("upper".into(), "fake".into())]
    }

    fn run(
        &self,
        name: &str,
        args: &[String],
        stdin: Option<&[u8]>,
        cwd: &str,
    ) -> Result<Finished, String> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("{name} {args:?} in {cwd}"));
        match name {
            "upper" => Ok(Finished {
                exit_code: args.len() as i32,
                stdout: stdin.unwrap_or_default().to_ascii_uppercase(),
                stderr: format!("args: {}\n", args.join(",")).into_bytes(),
            }),
            path if path.contains('/') => Ok(Finished {
                exit_code: 0,
                stdout: format!("ran {path} {}\n", args.join(" ")).into_bytes(),
                stderr: Vec::new(),
            }),
            _ => Err(format!("{name}: command not found")),
        }
    }
}

#[test]
fn the_hosts_commands_sit_in_pipes_and_redirects() {
    let host = Arc::new(FakeHost {
        calls: Mutex::default(),
    });
    let mut s = Session::with_commands(host.clone());
    assert_eq!(
        s.run("printf 'b\\na\\n' | upper 2>/dev/null | sort"),
        ok("A\nB\n")
    );
    // Its exit code, its stderr, a redirect of its stdout into a file.
    let (status, stdout, stderr) = s.run("echo x | upper one two > out.txt; echo $?; cat out.txt");
    assert_eq!(
        (status, stdout.as_str(), stderr.as_str()),
        (0, "2\nX\n", "args: one,two\n")
    );
    // Found by `command -v`, and run from the working directory.
    assert_eq!(
        s.run("command -v upper >/dev/null && echo found"),
        ok("found\n")
    );
    s.run("mkdir sub && cd sub && upper </dev/null 2>/dev/null");
    assert!(
        host.calls
            .lock()
            .unwrap()
            .last()
            .unwrap()
            .ends_with("in /sub"),
        "{:?}",
        host.calls.lock().unwrap()
    );
    // A program `cc` made runs by its path, through its `#!` line.
    s.file("p", "#!/usr/bin/env runbox-wasm\n\0asm");
    s.run("cd /");
    assert_eq!(s.run("chmod +x p; ./p 10 | cat"), ok("ran ./p 10\n"));
    assert_eq!(s.run("/p"), ok("ran /p \n"));
    // `find -exec` and a `#!/usr/bin/env` script reach the host's commands too.
    s.run("rm -rf sub");
    let (_, _, stderr) = s.run("find . -name p -exec upper {} \\;");
    assert_eq!(stderr, "args: ./p\n");
    s.file("s.sh", "#!/usr/bin/env upper\nignored");
    let (_, _, stderr) = s.run("./s.sh x </dev/null");
    assert_eq!(stderr, "args: ./s.sh,x\n");
    // An unknown command is still not found.
    let (status, _, stderr) = s.run("nosuch");
    assert_eq!(status, 127, "{stderr}");
}
