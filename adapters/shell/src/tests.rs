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

/// `curl` and `wget`, with a regular file standing in for the device `net/fetch`: spaces
/// the request overwrites, then the answer (read from where the request ended, so the
/// spaces left over are whitespace before the answer's JSON).
mod network {
    use super::*;
    use crate::net::{base64_encode, NO_NETWORK};
    use serde_json::{json, Value};

    const ROOM: usize = 16 * 1024;

    fn with_net() -> Session {
        let s = Session::new();
        std::fs::create_dir(s.dir.path().join("net")).unwrap();
        s
    }

    /// The device answers `answer` to the next request.
    fn answer(s: &Session, answer: Value) {
        s.file("net/fetch", &format!("{}{answer}", " ".repeat(ROOM)));
    }

    /// An answer of the server's: `status`, `headers`, `body`.
    fn reply(s: &Session, status: u16, reason: &str, headers: Value, body: &[u8]) {
        answer(
            s,
            json!({"ok": true, "status": status, "reason": reason, "url": "https://api.example.com/v1/items",
                   "redirected": false, "headers": headers, "body_base64": base64_encode(body),
                   "truncated": false}),
        );
    }

    fn refuse(s: &Session, kind: &str, message: &str) {
        answer(s, json!({"ok": false, "error": kind, "message": message}));
    }

    /// The request the command wrote to the device.
    fn sent(s: &Session) -> Value {
        let text = std::fs::read_to_string(s.dir.path().join("net/fetch")).unwrap();
        serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .next()
            .unwrap()
            .unwrap()
    }

    fn header<'a>(request: &'a Value, name: &str) -> Option<&'a str> {
        request["headers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|pair| pair[0].as_str().unwrap().eq_ignore_ascii_case(name))
            .map(|pair| pair[1].as_str().unwrap())
    }

    fn read(s: &Session, name: &str) -> Vec<u8> {
        std::fs::read(s.dir.path().join(name)).unwrap()
    }

    const URL: &str = "https://api.example.com/v1/items";

    #[test]
    fn curl_gets_a_url_and_prints_the_body() {
        let mut s = with_net();
        reply(
            &s,
            200,
            "OK",
            json!([["content-type", "application/json"]]),
            br#"{"a": [1, 2]}"#,
        );
        assert_eq!(s.run(&format!("curl {URL}")), ok(r#"{"a": [1, 2]}"#));
        let request = sent(&s);
        assert_eq!(request["method"], "GET");
        assert_eq!(request["url"], URL);
        assert_eq!(request["follow_redirects"], false);
        assert!(request.get("body").is_none() && request.get("body_base64").is_none());
        assert_eq!(header(&request, "accept"), Some("*/*"));
        assert!(header(&request, "user-agent").unwrap().starts_with("curl/"));
        // In a pipe, and -L follows redirects.
        reply(&s, 200, "OK", json!([]), br#"{"a": [1, 2]}"#);
        assert_eq!(
            s.run(&format!("curl -sSL {URL} | jq -c '.a'")),
            ok("[1,2]\n")
        );
        assert_eq!(sent(&s)["follow_redirects"], true);
    }

    #[test]
    fn curl_sends_methods_headers_and_data() {
        let mut s = with_net();
        reply(&s, 201, "Created", json!([]), b"made");
        let (status, stdout, _) = s.run(&format!(
            "curl -s -X put -H 'X-Token: __RUNBOX_SECRET_API_TOKEN__' -H 'Accept: text/plain' -d a=1 --data 'b=2 3' {URL}"
        ));
        assert_eq!((status, stdout.as_str()), (0, "made"));
        let request = sent(&s);
        assert_eq!(request["method"], "PUT");
        assert_eq!(request["body"], "a=1&b=2 3");
        assert_eq!(
            header(&request, "content-type"),
            Some("application/x-www-form-urlencoded")
        );
        assert_eq!(header(&request, "accept"), Some("text/plain"));
        assert_eq!(
            header(&request, "x-token"),
            Some("__RUNBOX_SECRET_API_TOKEN__")
        );

        // -d alone makes a POST; `-H 'Name:'` removes curl's own header; --json.
        reply(&s, 200, "OK", json!([]), b"");
        s.run(&format!(
            "curl -H 'User-Agent:' --json '{{\"a\": 1}}' {URL}"
        ));
        let request = sent(&s);
        assert_eq!(request["method"], "POST");
        assert_eq!(request["body"], "{\"a\": 1}");
        assert_eq!(header(&request, "content-type"), Some("application/json"));
        assert_eq!(header(&request, "accept"), Some("application/json"));
        assert_eq!(header(&request, "user-agent"), None);

        // -G puts the data in the query; -u and -A.
        reply(&s, 200, "OK", json!([]), b"");
        s.run(&format!(
            "curl -G -d q=x --data-urlencode 'name=a b&c' -u user:pass -A agent/1 {URL}?page=2"
        ));
        let request = sent(&s);
        assert_eq!(request["method"], "GET");
        assert_eq!(request["url"], format!("{URL}?page=2&q=x&name=a%20b%26c"));
        assert!(request.get("body").is_none());
        assert_eq!(
            header(&request, "authorization"),
            Some("Basic dXNlcjpwYXNz")
        );
        assert_eq!(header(&request, "user-agent"), Some("agent/1"));
        assert_eq!(header(&request, "content-type"), None);
    }

    #[test]
    fn curl_reads_data_from_files_and_stdin() {
        let mut s = with_net();
        std::fs::write(s.dir.path().join("blob.bin"), [0u8, 0xff, b'\n', 1]).unwrap();
        s.file("form.txt", "a=1\r\nb=2\n");
        reply(&s, 200, "OK", json!([]), b"");
        assert_eq!(
            s.run(&format!("curl -s --data-binary @blob.bin {URL}")).0,
            0
        );
        let request = sent(&s);
        assert_eq!(request["body_base64"], base64_encode(&[0, 0xff, b'\n', 1]));
        reply(&s, 200, "OK", json!([]), b"");
        s.run(&format!("curl -s -d @form.txt {URL}"));
        assert_eq!(sent(&s)["body"], "a=1b=2");
        reply(&s, 200, "OK", json!([]), b"");
        s.run_with(
            &format!("curl -s --data-binary @- {URL}"),
            Some("line 1\nline 2\n"),
            &[],
        );
        assert_eq!(sent(&s)["body"], "line 1\nline 2\n");
        reply(&s, 200, "OK", json!([]), b"");
        s.run(&format!("curl -s --data-raw @form.txt {URL}"));
        assert_eq!(sent(&s)["body"], "@form.txt");
        // A file that is not there: curl's exit 26, nothing sent.
        reply(&s, 200, "OK", json!([]), b"");
        let (status, _, stderr) = s.run(&format!("curl -d @missing.txt {URL}"));
        assert_eq!(status, 26, "{stderr}");
        assert!(stderr.starts_with("curl: (26) "), "{stderr}");
    }

    #[test]
    fn curl_writes_bodies_as_bytes() {
        let mut s = with_net();
        let bytes = [0x89u8, b'P', b'N', b'G', 0, 0xff, 0xfe, b'\n'];
        reply(
            &s,
            200,
            "OK",
            json!([["content-type", "image/png"]]),
            &bytes,
        );
        assert_eq!(s.run(&format!("curl -s -o out.png {URL}")), ok(""));
        assert_eq!(read(&s, "out.png"), bytes);
        reply(&s, 200, "OK", json!([]), &bytes);
        assert_eq!(s.run(&format!("curl -s {URL} > redirected.png")).0, 0);
        assert_eq!(read(&s, "redirected.png"), bytes);
        // -O: the URL's last segment, in the working directory.
        reply(&s, 200, "OK", json!([]), &bytes);
        assert_eq!(
            s.run(&format!("mkdir d && cd d && curl -sO {URL}?x=1")).0,
            0
        );
        assert_eq!(read(&s, "d/items"), bytes);
        s.run("cd /");
        // A file that cannot be written: 23.
        reply(&s, 200, "OK", json!([]), &bytes);
        let (status, _, stderr) = s.run(&format!("curl -sS -o nodir/x {URL}"));
        assert_eq!(status, 23);
        assert!(stderr.starts_with("curl: (23) "), "{stderr}");
        // --create-dirs makes it.
        reply(&s, 200, "OK", json!([]), &bytes);
        assert_eq!(
            s.run(&format!("curl -s --create-dirs -o nodir/x {URL}")).0,
            0
        );
        assert_eq!(read(&s, "nodir/x"), bytes);
    }

    #[test]
    fn curl_shows_headers_and_write_out() {
        let mut s = with_net();
        let headers = json!([["content-type", "text/plain"], ["x-id", "7"]]);
        reply(&s, 200, "OK", headers.clone(), b"body");
        assert_eq!(
            s.run(&format!("curl -si {URL}")),
            ok("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-id: 7\r\n\r\nbody")
        );
        reply(&s, 200, "OK", headers.clone(), b"");
        assert_eq!(
            s.run(&format!("curl -sI {URL}")),
            ok("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-id: 7\r\n\r\n")
        );
        assert_eq!(sent(&s)["method"], "HEAD");
        reply(&s, 404, "Not Found", headers, b"missing");
        assert_eq!(
            s.run(&format!(
                "curl -s -o /dev/null -w '%{{http_code}}\\n' {URL}"
            )),
            ok("404\n")
        );
        reply(&s, 200, "OK", json!([]), b"x");
        assert_eq!(
            s.run(&format!(
                "code=$(curl -s -o /dev/null -w '%{{http_code}}' {URL}); echo \"got $code\""
            )),
            ok("got 200\n")
        );
    }

    #[test]
    fn curl_without_location_shows_a_redirect_as_it_is() {
        let mut s = with_net();
        reply(
            &s,
            301,
            "Moved Permanently",
            json!([["location", "/v2/items"]]),
            b"moved",
        );
        assert_eq!(
            s.run(&format!(
                "curl -s -w ' %{{http_code}} %{{redirect_url}}' {URL}"
            )),
            ok("moved 301 https://api.example.com/v2/items")
        );
        assert_eq!(sent(&s)["follow_redirects"], false);
    }

    #[test]
    fn curl_fail_exits_22_without_the_body() {
        let mut s = with_net();
        reply(&s, 404, "Not Found", json!([]), b"no such item");
        assert_eq!(
            s.run(&format!("curl -f {URL}")),
            (
                22,
                String::new(),
                "curl: (22) The requested URL returned error: 404\n".into()
            )
        );
        reply(&s, 404, "Not Found", json!([]), b"no such item");
        assert_eq!(
            s.run(&format!("curl -sf {URL}")),
            (22, String::new(), String::new())
        );
        reply(&s, 500, "Internal Server Error", json!([]), b"oops");
        assert_eq!(
            s.run(&format!("curl -sSf {URL} || echo failed $?")),
            (
                0,
                "failed 22\n".into(),
                "curl: (22) The requested URL returned error: 500\n".into()
            )
        );
        // Without -f an error status is an answer like any other.
        reply(&s, 404, "Not Found", json!([]), b"no such item");
        assert_eq!(s.run(&format!("curl -s {URL}")), ok("no such item"));
    }

    #[test]
    fn curl_fails_like_curl_when_the_host_refuses_or_times_out() {
        let mut s = with_net();
        let refused = "https://evil.example.net/ is not allowed by the network policy";
        refuse(&s, "not_allowed", refused);
        assert_eq!(
            s.run("curl https://evil.example.net/"),
            (7, String::new(), format!("curl: (7) {refused}\n"))
        );
        refuse(&s, "not_allowed", refused);
        assert_eq!(
            s.run("curl -s https://evil.example.net/"),
            (7, String::new(), String::new())
        );
        refuse(&s, "not_allowed", refused);
        assert_eq!(
            s.run("curl -sS https://evil.example.net/").2,
            format!("curl: (7) {refused}\n")
        );
        refuse(&s, "unavailable", "connection refused");
        assert_eq!(s.run(&format!("curl {URL}")).0, 7);
        refuse(&s, "timeout", "the request took longer than 30000 ms");
        assert_eq!(
            s.run(&format!("curl -w '%{{http_code}}' {URL}")),
            (
                28,
                "000".into(),
                "curl: (28) the request took longer than 30000 ms\n".into()
            )
        );
    }

    #[test]
    fn curl_and_wget_without_a_network_policy() {
        let mut s = Session::new();
        let message = format!("curl: (7) {NO_NETWORK}\n");
        assert_eq!(
            s.run("curl https://example.com/"),
            (7, String::new(), message.clone())
        );
        // Said even with -s: nothing else would say why.
        assert_eq!(
            s.run("curl -s https://example.com/"),
            (7, String::new(), message)
        );
        assert_eq!(
            s.run("wget -q https://example.com/"),
            (4, String::new(), format!("wget: {NO_NETWORK}\n"))
        );
        let (status, _, stderr) = s.run("wget https://example.com/");
        assert_eq!(status, 4);
        assert!(
            stderr.ends_with(&format!("wget: {NO_NETWORK}\n")),
            "{stderr}"
        );
        assert!(!s.dir.path().join("index.html").exists());
    }

    #[test]
    fn a_cut_answer_says_so() {
        let mut s = with_net();
        answer(
            &s,
            json!({"ok": true, "status": 200, "reason": "OK", "url": URL, "redirected": false,
                   "headers": [], "body_base64": base64_encode(b"abcd"), "truncated": true}),
        );
        assert_eq!(
            s.run(&format!("curl -s {URL}")),
            (
                0,
                "abcd".into(),
                format!("runbox: the answer from {URL} was cut at 4 bytes (the network policy's answer cap)\n")
            )
        );
        answer(
            &s,
            json!({"ok": true, "status": 200, "reason": "OK", "url": URL, "redirected": false,
                   "headers": [], "body_base64": base64_encode(b"abcd"), "truncated": true}),
        );
        let (status, stdout, stderr) = s.run(&format!("wget -q -O - {URL}"));
        assert_eq!((status, stdout.as_str()), (0, "abcd"));
        assert_eq!(
            stderr,
            format!("runbox: the answer from {URL} was cut at 4 bytes (the network policy's answer cap)\n")
        );
    }

    #[test]
    fn curl_usage_errors_exit_2() {
        let mut s = with_net();
        let (status, _, stderr) = s.run(&format!("curl --frobnicate {URL}"));
        assert_eq!(status, 2);
        assert!(
            stderr.starts_with("curl: option --frobnicate: is unknown\n"),
            "{stderr}"
        );
        let (status, _, stderr) = s.run("curl -s");
        assert_eq!(status, 2);
        assert!(stderr.starts_with("curl: no URL specified\n"), "{stderr}");
        let (status, _, stderr) = s.run("curl ftp://example.com/f");
        assert_eq!(
            (status, stderr.as_str()),
            (1, "curl: (1) Protocol \"ftp\" not supported\n")
        );
        // `--`: what follows is a URL, even with a leading dash.
        reply(&s, 200, "OK", json!([]), b"x");
        assert_eq!(s.run("curl -s -- -weird.example.com").0, 0);
        assert_eq!(sent(&s)["url"], "http://-weird.example.com");
        let (status, stdout, _) = s.run("curl --help");
        assert_eq!(status, 0);
        assert!(stdout.starts_with("Usage: curl"), "{stdout}");
    }

    #[test]
    fn curl_takes_several_urls_and_dumps_headers() {
        let mut s = with_net();
        reply(&s, 200, "OK", json!([["x-id", "7"]]), b"same");
        assert_eq!(
            s.run(&format!("curl -s -o one -o two {URL} {URL} && cat one two")),
            ok("samesame")
        );
        reply(&s, 200, "OK", json!([["x-id", "7"]]), b"body");
        assert_eq!(
            s.run(&format!("curl -s -D - {URL}")),
            ok("HTTP/1.1 200 OK\r\nx-id: 7\r\n\r\nbody")
        );
        reply(&s, 200, "OK", json!([]), b"x");
        s.file("fmt.txt", "code=%{http_code} size=%{size_download}\\n");
        assert_eq!(
            s.run(&format!("curl -s -o /dev/null -w @fmt.txt {URL}")),
            ok("code=200 size=1\n")
        );
    }

    #[test]
    fn wget_takes_a_directory_prefix() {
        let mut s = with_net();
        reply(&s, 200, "OK", json!([]), b"saved");
        assert_eq!(s.run(&format!("wget -q -P downloads/today {URL}")), ok(""));
        assert_eq!(read(&s, "downloads/today/items"), b"saved");
    }

    #[test]
    fn wget_saves_to_the_urls_file() {
        let mut s = with_net();
        reply(
            &s,
            200,
            "OK",
            json!([["content-type", "application/json"]]),
            b"[1]",
        );
        let (status, stdout, stderr) = s.run(&format!("wget {URL}"));
        assert_eq!((status, stdout.as_str()), (0, ""), "{stderr}");
        assert!(stderr.contains("200 OK"), "{stderr}");
        assert!(stderr.contains("'items' saved [3/3]"), "{stderr}");
        assert_eq!(read(&s, "items"), b"[1]");
        let request = sent(&s);
        assert_eq!(request["method"], "GET");
        assert_eq!(request["follow_redirects"], true);
        assert!(header(&request, "user-agent").unwrap().starts_with("Wget/"));
        // The file is there: the next download is items.1.
        reply(&s, 200, "OK", json!([]), b"[2]");
        assert_eq!(s.run(&format!("wget -q {URL}")), ok(""));
        assert_eq!(read(&s, "items.1"), b"[2]");
        // No path: index.html.
        reply(&s, 200, "OK", json!([]), b"<html>");
        assert_eq!(s.run("wget -q https://example.com"), ok(""));
        assert_eq!(read(&s, "index.html"), b"<html>");
        // -O FILE and -O -.
        reply(&s, 200, "OK", json!([]), &[0, 0xff]);
        assert_eq!(s.run(&format!("wget -q -O data.bin {URL}")), ok(""));
        assert_eq!(read(&s, "data.bin"), [0, 0xff]);
        reply(&s, 200, "OK", json!([]), b"to stdout");
        assert_eq!(s.run(&format!("wget -qO- {URL}")), ok("to stdout"));
        reply(&s, 200, "OK", json!([]), b"to stdout");
        assert_eq!(
            s.run(&format!("wget -q -O - {URL} | tr a-z A-Z")),
            ok("TO STDOUT")
        );
    }

    #[test]
    fn wget_sends_headers_data_and_methods() {
        let mut s = with_net();
        reply(&s, 200, "OK", json!([["x-id", "7"]]), b"done");
        let (status, stdout, stderr) = s.run(&format!(
            "wget -q -S -O - --header='X-A: 1' --header 'Accept: text/plain' --post-data='a=1&b=2' {URL}"
        ));
        assert_eq!((status, stdout.as_str()), (0, "done"));
        assert_eq!(stderr, "  HTTP/1.1 200 OK\n  x-id: 7\n");
        let request = sent(&s);
        assert_eq!(request["method"], "POST");
        assert_eq!(request["body"], "a=1&b=2");
        assert_eq!(header(&request, "x-a"), Some("1"));
        assert_eq!(header(&request, "accept"), Some("text/plain"));
        assert_eq!(
            header(&request, "content-type"),
            Some("application/x-www-form-urlencoded")
        );
        reply(&s, 204, "No Content", json!([]), b"");
        assert_eq!(
            s.run(&format!("wget -q -O - --method=DELETE {URL}")),
            ok("")
        );
        assert_eq!(sent(&s)["method"], "DELETE");
    }

    #[test]
    fn wget_fails_with_4_or_8() {
        let mut s = with_net();
        reply(&s, 404, "Not Found", json!([]), b"nope");
        let (status, stdout, stderr) = s.run(&format!("wget {URL}"));
        assert_eq!((status, stdout.as_str()), (8, ""));
        assert!(stderr.contains("ERROR 404 Not Found."), "{stderr}");
        assert!(!s.dir.path().join("items").exists());
        reply(&s, 500, "Internal Server Error", json!([]), b"nope");
        assert_eq!(
            s.run(&format!("wget -q {URL}")),
            (8, String::new(), String::new())
        );
        refuse(&s, "not_allowed", "not allowed by the network policy");
        let (status, _, stderr) = s.run(&format!("wget {URL}"));
        assert_eq!(status, 4);
        assert!(
            stderr.ends_with("wget: not allowed by the network policy\n"),
            "{stderr}"
        );
        refuse(&s, "timeout", "too slow");
        assert_eq!(s.run(&format!("wget -q {URL}")).0, 4);
        let (status, _, stderr) = s.run(&format!("wget --bogus {URL}"));
        assert_eq!(status, 2);
        assert!(
            stderr.starts_with("wget: unrecognized option '--bogus'"),
            "{stderr}"
        );
        let (status, _, stderr) = s.run("wget");
        assert_eq!(status, 1);
        assert!(stderr.starts_with("wget: missing URL"), "{stderr}");
    }

    /// The device's answer to an install: wheels (name, version) with their files.
    fn installed(s: &Session, wheels: &[(&str, &str)], files: Value) {
        let wheels: Vec<Value> = wheels
            .iter()
            .map(|(name, version)| {
                json!({"name": name, "version": version, "sha256": format!("{name}-sum"),
                       "wheel": format!("{name}-{version}-py3-none-any.whl")})
            })
            .collect();
        answer(s, json!({"ok": true, "installed": wheels, "files": files}));
    }

    #[test]
    fn pip_installs_the_hosts_files_under_site_packages() {
        let mut s = with_net();
        let init = base64_encode(b"def naturalsize(n):\n    return f'{n} B'\n");
        installed(
            &s,
            &[("humanize", "4.11.0"), ("tabulate", "0.9.0")],
            json!([
                ["humanize/__init__.py", init],
                ["humanize-4.11.0.dist-info/METADATA", "TmFtZTogaHVtYW5pemUK"],
                ["tabulate.py", base64_encode(b"X = 9\n")],
                ["tabulate-0.9.0.dist-info/RECORD", ""]
            ]),
        );
        assert_eq!(
            s.run("pip install -U humanize 'tabulate==0.9.0'"),
            ok("Successfully installed humanize-4.11.0 tabulate-0.9.0\n  \
                humanize-4.11.0-py3-none-any.whl sha256=humanize-sum\n  \
                tabulate-0.9.0-py3-none-any.whl sha256=tabulate-sum\n")
        );
        assert_eq!(
            sent(&s),
            json!({"install": ["humanize", "tabulate==0.9.0"]})
        );
        assert_eq!(
            read(&s, ".runbox/site-packages/humanize/__init__.py"),
            b"def naturalsize(n):\n    return f'{n} B'\n"
        );
        assert_eq!(read(&s, ".runbox/site-packages/tabulate.py"), b"X = 9\n");
        assert_eq!(
            s.run("pip list"),
            ok("Package  Version\n-------- -------\nhumanize 4.11.0\ntabulate 0.9.0\n")
        );
        assert_eq!(
            s.run("pip3 freeze | sort -r"),
            ok("tabulate==0.9.0\nhumanize==4.11.0\n")
        );
        // -q prints nothing; -r reads requirements (comments, blank lines and options
        // left out).
        s.file(
            "requirements.txt",
            "# deps\nhumanize>=4  # sizes\n\n--index-url x\nrich\n",
        );
        installed(&s, &[("humanize", "4.11.0")], json!([]));
        assert_eq!(s.run("pip3 -q install -r requirements.txt extra"), ok(""));
        assert_eq!(
            sent(&s),
            json!({"install": ["extra", "humanize>=4", "rich"]})
        );
        let (status, stdout, _) = s.run("pip --version");
        assert!(status == 0 && stdout.starts_with("pip (runbox"), "{stdout}");
        let (status, stdout, _) = s.run("pip");
        assert!(
            status == 0 && stdout.starts_with("Usage: pip install"),
            "{stdout}"
        );
    }

    #[test]
    fn pip_fails_with_the_hosts_message() {
        let mut s = with_net();
        refuse(&s, "not_allowed", "leftpad is not in [packages] allow");
        assert_eq!(
            s.run("pip install leftpad"),
            (
                1,
                String::new(),
                "ERROR: leftpad is not in [packages] allow\n".into()
            )
        );
        // A path outside site-packages: refused, and nothing written.
        for bad in ["/etc/x.py", "../x.py", "a/../../x.py", "a\\x.py", ""] {
            installed(&s, &[], json!([["ok.py", "eA=="], [bad, "eA=="]]));
            let (status, _, stderr) = s.run("pip install evil");
            assert_eq!(status, 1, "{bad}: {stderr}");
            assert!(
                stderr.starts_with("ERROR: the host's answer names a file outside site-packages"),
                "{stderr}"
            );
            assert!(!s.dir.path().join(".runbox/site-packages/ok.py").exists());
        }
        answer(
            &s,
            json!({"ok": true, "installed": [], "files": [["a.py", "!"]]}),
        );
        assert_eq!(
            s.run("pip install x"),
            (
                1,
                String::new(),
                "ERROR: the host's answer is not an install's\n".into()
            )
        );
        // Usage: no requirement, an unknown option or command.
        let (status, _, stderr) = s.run("pip install");
        assert_eq!(status, 1);
        assert!(stderr.starts_with("ERROR: You must give"), "{stderr}");
        let (status, _, stderr) = s.run("pip install --index-url http://x y");
        assert_eq!(status, 2);
        assert!(
            stderr.starts_with("ERROR: no such option: --index-url"),
            "{stderr}"
        );
        let (status, _, stderr) = s.run("pip uninstall y");
        assert_eq!(status, 1);
        assert!(
            stderr.starts_with("ERROR: unknown command \"uninstall\""),
            "{stderr}"
        );
        let (status, _, stderr) = s.run("pip install -r missing.txt");
        assert_eq!(status, 1);
        assert!(
            stderr.starts_with("ERROR: Could not open requirements file"),
            "{stderr}"
        );
        // Without a network policy.
        let mut s = Session::new();
        assert_eq!(
            s.run("pip install humanize"),
            (1, String::new(), format!("ERROR: {NO_NETWORK}\n"))
        );
        assert_eq!(s.run("pip list"), ok(""));
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

#[test]
fn python_dash_m_pip_is_the_python_runtimes() {
    // `python -m pip` is the host's `python` command (the python runtime's pip), not the
    // shell's `pip`.
    struct Python(Mutex<Vec<String>>);
    impl Commands for Python {
        fn available(&self) -> Vec<(String, String)> {
            vec![("python".into(), "python".into())]
        }
        fn run(
            &self,
            name: &str,
            args: &[String],
            _: Option<&[u8]>,
            _: &str,
        ) -> Result<Finished, String> {
            self.0
                .lock()
                .unwrap()
                .push(format!("{name} {}", args.join(" ")));
            Ok(Finished::default())
        }
    }
    let host = Arc::new(Python(Mutex::default()));
    let mut s = Session::with_commands(host.clone());
    assert_eq!(s.run("python -m pip install -q humanize"), ok(""));
    assert_eq!(
        *host.0.lock().unwrap(),
        ["python -m pip install -q humanize"]
    );
}
