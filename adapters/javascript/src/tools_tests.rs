//! `runbox:tools` run natively, its directory a temporary one: a regular file stands in
//! for the device `call` (the request overwrites its start, the answer is what follows).

use std::path::{Path, PathBuf};

use crate::engine::Language;
use crate::tests::Session;

const MANIFEST: &str = r#"{"servers": {
  "everything": {"available": true, "tools": [
    {"name": "add", "description": "Adds two numbers",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}},
    {"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}},
    {"name": "get-sum", "inputSchema": {"type": "object"}},
    {"name": "2fa.check", "inputSchema": {"type": "object"}}
  ]},
  "github": {"available": false, "message": "connection refused", "tools": []}
}}"#;

/// A temporary tools directory, removed when dropped.
struct Tools(PathBuf);

impl Tools {
    fn new(name: &str, manifest: Option<&str>) -> Tools {
        let dir =
            std::env::temp_dir().join(format!("runbox-js-tools-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(manifest) = manifest {
            std::fs::write(dir.join("tools.json"), manifest).unwrap();
        }
        Tools(dir)
    }

    /// The device answers `answer` to a request of `request`'s length.
    fn answer(&self, request: &str, answer: &str) {
        let contents = format!("{}{answer}", " ".repeat(request.len()));
        std::fs::write(self.0.join("call"), contents).unwrap();
    }

    /// What the last call wrote.
    fn request(&self, len: usize) -> String {
        let contents = std::fs::read_to_string(self.0.join("call")).unwrap();
        contents[..len].to_string()
    }

    fn session(&self, language: Language) -> Session {
        let mut session = Session::of(language);
        session.set_tools_dir(&self.0);
        session
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tools {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_tool_resolves_to_the_answers_value() {
    let tools = Tools::new("value", Some(MANIFEST));
    let request = r#"{"server":"everything","tool":"add","arguments":{"a":2,"b":3}}"#;
    tools.answer(
        request,
        r#"{"ok": true, "value": 5, "structured": true, "content": []}"#,
    );
    let code = "import { everything } from 'runbox:tools';\nconst r = await everything.add({a: 2, b: 3});\nconst p = everything.add(1);\np.catch(() => {});\nconsole.log(r, p instanceof Promise);\n";
    let mut session = tools.session(Language::JavaScript);
    let (status, stdout, stderr) = session.run(code);
    assert_eq!((status, stderr.as_str()), (0, ""), "{stdout}");
    // The second call (`add(1)`) failed as a rejected promise, not synchronously.
    assert_eq!(stdout, "5 true\n");
    assert_eq!(tools.request(request.len()), request);
}

#[test]
fn tools_are_functions_named_after_the_manifest() {
    let tools = Tools::new("names", Some(MANIFEST));
    let code = r#"import tools, { everything, github, callTool, ToolError } from "runbox:tools";
console.log(Object.keys(everything).join(","));
console.log(everything.get_sum === everything["get-sum"], everything._2fa_check === everything["2fa.check"]);
console.log(everything.add.name, everything.add.description, JSON.stringify(everything.add.inputSchema.properties.a));
console.log(Object.keys(tools).join(","), tools.everything === everything, typeof github.anything);
console.log(typeof callTool, typeof ToolError, everything.then, typeof tools.other.tool);
"#;
    let (status, stdout, stderr) = tools.session(Language::JavaScript).run(code);
    assert_eq!((status, stderr.as_str()), (0, ""));
    assert_eq!(
        stdout,
        "add,echo,get-sum,2fa.check\n\
         true true\n\
         add Adds two numbers {\"type\":\"number\"}\n\
         everything,github true function\n\
         function function undefined function\n"
    );
}

#[test]
fn any_other_tool_name_is_sent_to_the_host() {
    let tools = Tools::new("other", Some(MANIFEST));
    let request = r#"{"server":"everything","tool":"secret","arguments":{}}"#;
    tools.answer(
        request,
        r#"{"ok":false,"error":"not_allowed","message":"everything.secret is not allowed (allowed: add, echo)"}"#,
    );
    let code = "import { everything, ToolError } from 'runbox:tools';\ntry { await everything.secret(); } catch (e) { console.log(e instanceof ToolError, e.kind, e.message); }\n";
    let (status, stdout, stderr) = tools.session(Language::JavaScript).run(code);
    assert_eq!((status, stderr.as_str()), (0, ""));
    assert_eq!(
        stdout,
        "true not_allowed everything.secret is not allowed (allowed: add, echo)\n"
    );
    assert_eq!(tools.request(request.len()), request);
}

#[test]
fn a_tool_error_rejects_with_its_kind_message_and_content() {
    let tools = Tools::new("error", Some(MANIFEST));
    let request = r#"{"server":"everything","tool":"echo","arguments":{"message":"hi"}}"#;
    tools.answer(
        request,
        r#"{"ok":false,"error":"tool_error","message":"it broke","content":[{"type":"text","text":"it broke"}]}"#,
    );
    let code = "const { callTool, ToolError } = require('runbox:tools');\n\
                callTool('everything', 'echo', {message: 'hi'}).catch((e) => {\n\
                  console.log(e instanceof ToolError, e instanceof Error, e.name, e.kind, e.message, e.server, e.tool, e.content[0].text);\n\
                });\n";
    let (status, stdout, stderr) = tools.session(Language::JavaScript).run(code);
    assert_eq!((status, stderr.as_str()), (0, ""));
    assert_eq!(
        stdout,
        "true true ToolError tool_error it broke everything echo it broke\n"
    );
    // Uncaught, it ends the program like any error.
    let code =
        "import { everything } from 'runbox:tools';\nawait everything.echo({message: 'hi'});\n";
    let (status, _, stderr) = tools.session(Language::JavaScript).run(code);
    assert_eq!(status, 1);
    assert!(stderr.contains("ToolError: it broke"), "{stderr}");
}

#[test]
fn without_tools_the_module_is_empty_and_calls_are_unavailable() {
    let tools = Tools::new("none", None);
    let code = "import tools, { callTool, ToolError } from 'runbox:tools';\n\
                console.log(Object.keys(tools).length);\n\
                try { await callTool('everything', 'add', {a: 1}); } catch (e) { console.log(e instanceof ToolError, e.kind, e.message); }\n";
    let (status, stdout, stderr) = tools.session(Language::JavaScript).run(code);
    assert_eq!((status, stderr.as_str()), (0, ""));
    assert_eq!(
        stdout,
        "0\ntrue unavailable no tools are configured on this server (runbox mcp --tools-config)\n"
    );
}

#[test]
fn arguments_must_be_an_object() {
    let tools = Tools::new("arguments", Some(MANIFEST));
    let code = "import { everything } from 'runbox:tools';\ntry { await everything.add([1, 2]); } catch (e) { console.log(e.name, e.message); }\n";
    let (status, stdout, stderr) = tools.session(Language::JavaScript).run(code);
    assert_eq!((status, stderr.as_str()), (0, ""));
    assert_eq!(
        stdout,
        "TypeError the arguments of everything.add must be an object, not an array\n"
    );
}

#[test]
fn typescript_imports_the_module() {
    let tools = Tools::new("typescript", Some(MANIFEST));
    let request = r#"{"server":"everything","tool":"echo","arguments":{"message":"hi"}}"#;
    tools.answer(
        request,
        r#"{"ok":true,"value":"Echo: hi","structured":false}"#,
    );
    let code = "import type { ToolError as E } from 'runbox:tools';\n\
                import { everything, ToolError } from 'runbox:tools';\n\
                const text: string = await everything.echo({ message: 'hi' });\n\
                const check = (e: E): string => e.kind;\n\
                console.log(text, typeof check, typeof ToolError);\n";
    let (status, stdout, stderr) = tools.session(Language::TypeScript).run(code);
    assert_eq!((status, stderr.as_str()), (0, ""));
    assert_eq!(stdout, "Echo: hi function function\n");
}

#[test]
fn a_session_reads_the_manifest_again_at_each_run() {
    let tools = Tools::new("session", Some(r#"{"servers": {"a": {"tools": []}}}"#));
    let mut session = tools.session(Language::JavaScript);
    let code = "import tools from 'runbox:tools';\nconsole.log(Object.keys(tools).join(','));\n";
    assert_eq!(session.run(code), (0, "a\n".into(), String::new()));
    std::fs::write(
        tools.path().join("tools.json"),
        r#"{"servers": {"a": {"tools": []}, "b": {"tools": []}}}"#,
    )
    .unwrap();
    assert_eq!(session.run(code), (0, "a,b\n".into(), String::new()));
}
