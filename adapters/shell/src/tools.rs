//! The `tool` command: one call of a tool of code mode (docs/tools.md) through the device
//! `/tools/call`.
//!
//! ```text
//! tool SERVER TOOL [--NAME VALUE | --NAME=VALUE]... [--json '{"NAME": VALUE, ...}']
//! ```
//!
//! The arguments object is built from the flags: a value whose property the tool's
//! `inputSchema` (in `/tools/tools.json`) types as a number, integer, boolean, object,
//! array or null is parsed as JSON, any other is a string; `--json` merges a whole object.
//! The answer's `value` is printed as one line of JSON (a string as a JSON string), so
//! `tool everything echo --message hi | jq -r .` prints the text. A failed call prints
//! `tool: SERVER.TOOL: MESSAGE` on stderr and exits 1 when the tool reported the error
//! (`tool_error`), 2 otherwise. `tool --help` lists the servers and their tools.
//!
//! Everything but the exchange itself ([`runbox_adapter_support::tools::call`]) is plain
//! functions of the arguments, the manifest and the answer's text.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult};
use runbox_adapter_support::tools as device;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The `tool` builtin, over the tools directory `dir` (`/tools` in the component).
pub struct ToolCommand {
    dir: PathBuf,
}

impl ToolCommand {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ToolCommand { dir: dir.into() }
    }
}

#[async_trait]
impl Builtin for ToolCommand {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let outcome = run(&self.dir, ctx.args);
        Ok(ExecResult {
            stdout: outcome.stdout.into(),
            stderr: outcome.stderr.into(),
            exit_code: outcome.status,
            ..ExecResult::default()
        })
    }
}

/// What a `tool` command printed, and its exit status.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub stdout: String,
    pub stderr: String,
    pub status: i32,
}

impl Outcome {
    fn out(stdout: String) -> Outcome {
        Outcome {
            stdout,
            ..Outcome::default()
        }
    }

    fn fail(stderr: String, status: i32) -> Outcome {
        Outcome {
            stderr,
            status,
            ..Outcome::default()
        }
    }
}

const USAGE: &str = "usage: tool SERVER TOOL [--NAME VALUE]... [--json '{\"NAME\": VALUE, ...}']";

/// `tool ARGS...` with the tools directory `dir`.
pub fn run(dir: &Path, args: &[String]) -> Outcome {
    let manifest = Manifest::read(dir);
    let help = |arg: &String| arg == "--help" || arg == "-h";
    match args {
        [] => Outcome::fail(usage(&manifest, None), 2),
        [arg] if help(arg) => Outcome::out(usage(&manifest, None)),
        [server] => Outcome::fail(usage(&manifest, Some(server)), 2),
        [server, arg] if help(arg) => Outcome::out(usage(&manifest, Some(server))),
        [server, tool, arg] if help(arg) => Outcome::out(tool_help(&manifest, server, tool)),
        [server, tool, flags @ ..] => {
            let schema = manifest.input_schema(server, tool);
            let arguments = match arguments(schema, flags) {
                Ok(arguments) => arguments,
                Err(e) => return Outcome::fail(format!("tool: {server}.{tool}: {e}\n"), 2),
            };
            let answer = device::call(dir, request(server, tool, &arguments).as_bytes());
            outcome(server, tool, &answer)
        }
    }
}

/// The request's JSON text: `{"server":…,"tool":…,"arguments":{…}}`.
pub fn request(server: &str, tool: &str, arguments: &Map<String, Value>) -> String {
    format!(
        r#"{{"server":{},"tool":{},"arguments":{}}}"#,
        device::json_string(server),
        device::json_string(tool),
        Value::Object(arguments.clone())
    )
}

/// What the command prints for the answer `answer` of a call of `server.tool`.
pub fn outcome(server: &str, tool: &str, answer: &str) -> Outcome {
    let fail = |message: &str, status| {
        Outcome::fail(format!("tool: {server}.{tool}: {message}\n"), status)
    };
    let fields: BTreeMap<String, &RawValue> = match serde_json::from_str(answer) {
        Ok(fields) => fields,
        Err(e) => return fail(&format!("the host's answer is not a JSON object: {e}"), 2),
    };
    let field = |name: &str| fields.get(name).map(|raw| raw.get());
    if field("ok") == Some("true") {
        let mut stdout = compact(field("value").unwrap_or("null"));
        stdout.push('\n');
        return Outcome::out(stdout);
    }
    let text = |name: &str| {
        field(name).and_then(|raw| match serde_json::from_str::<Value>(raw) {
            Ok(Value::String(text)) => Some(text),
            _ => None,
        })
    };
    let kind = text("error").unwrap_or_else(|| "unavailable".into());
    let message = text("message").unwrap_or_else(|| format!("the call failed ({kind})"));
    fail(&message, if kind == "tool_error" { 1 } else { 2 })
}

/// JSON text without the whitespace between its tokens (the keys keep their order).
fn compact(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if !c.is_ascii_whitespace() {
            out.push(c);
            in_string = c == '"';
        }
    }
    out
}

/// The arguments object of the flags `flags` (all after SERVER TOOL), their values typed by
/// the tool's input schema `schema`.
pub fn arguments(schema: Option<&Value>, flags: &[String]) -> Result<Map<String, Value>, String> {
    let properties = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let property = |name: &str| properties.and_then(|p| p.get(name));
    let mut arguments = Map::new();
    let mut rest = flags.iter().peekable();
    while let Some(flag) = rest.next() {
        let Some(spec) = flag.strip_prefix("--").filter(|s| !s.is_empty()) else {
            return Err(format!(
                "unexpected argument `{flag}` (arguments are --NAME VALUE or --json OBJECT)"
            ));
        };
        let (flag_name, inline) = match spec.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (spec, None),
        };
        if flag_name == "json" {
            let Some(text) = inline.or_else(|| rest.next().cloned()) else {
                return Err("--json needs a JSON object".into());
            };
            match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(object)) => arguments.extend(object),
                Ok(_) => return Err(format!("--json needs a JSON object, not {text}")),
                Err(e) => return Err(format!("--json: not JSON ({e}): {text}")),
            }
            continue;
        }
        let name = property_name(flag_name, |name| property(name).is_some());
        let kind = json_kind(property(&name));
        let value = match inline {
            Some(value) => value,
            // A boolean flag alone (at the end, or before the next flag) is `true`.
            None if kind == Some("boolean")
                && rest.peek().is_none_or(|next| next.starts_with("--")) =>
            {
                "true".into()
            }
            None => match rest.next() {
                Some(value) => value.clone(),
                None => return Err(format!("--{flag_name} needs a value")),
            },
        };
        arguments.insert(name, convert(flag_name, kind, &value)?);
    }
    Ok(arguments)
}

/// The property a flag names: itself, or with its dashes as underscores when only that
/// is a property of the schema.
fn property_name(flag: &str, has: impl Fn(&str) -> bool) -> String {
    if !has(flag) && flag.contains('-') {
        let underscored = flag.replace('-', "_");
        if has(&underscored) {
            return underscored;
        }
    }
    flag.to_string()
}

/// The JSON type a flag's value is parsed as, from its property's schema: `None` for a
/// string (or a property whose type is unknown, or that may be a string).
fn json_kind(property: Option<&Value>) -> Option<&str> {
    const JSON: [&str; 6] = ["number", "integer", "boolean", "object", "array", "null"];
    match property?.get("type")? {
        Value::String(kind) => JSON.contains(&kind.as_str()).then_some(kind.as_str()),
        Value::Array(kinds) => {
            let kinds: Vec<&str> = kinds.iter().filter_map(Value::as_str).collect();
            if kinds.contains(&"string") {
                return None;
            }
            kinds.into_iter().find(|kind| JSON.contains(kind))
        }
        _ => None,
    }
}

/// `value` of the flag `--flag` as the JSON type `kind`, or as a string.
fn convert(flag: &str, kind: Option<&str>, value: &str) -> Result<Value, String> {
    let Some(kind) = kind else {
        return Ok(Value::String(value.to_string()));
    };
    serde_json::from_str(value).map_err(|_| {
        let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        format!("--{flag} takes {article} {kind} (as JSON), not `{value}`")
    })
}

/// `/tools/tools.json`, when there is one.
pub struct Manifest(Option<Value>);

impl Manifest {
    pub fn read(dir: &Path) -> Manifest {
        Manifest(device::manifest(dir).and_then(|text| serde_json::from_str(&text).ok()))
    }

    fn servers(&self) -> Option<&Map<String, Value>> {
        self.0.as_ref()?.get("servers")?.as_object()
    }

    fn tools(&self, server: &str) -> Vec<&Value> {
        self.servers()
            .and_then(|servers| servers.get(server))
            .and_then(|s| s.get("tools"))
            .and_then(Value::as_array)
            .map(|tools| tools.iter().collect())
            .unwrap_or_default()
    }

    fn tool(&self, server: &str, tool: &str) -> Option<&Value> {
        self.tools(server)
            .into_iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(tool))
    }

    fn input_schema(&self, server: &str, tool: &str) -> Option<&Value> {
        self.tool(server, tool)?.get("inputSchema")
    }
}

/// The first line of a description, or nothing.
fn summary(item: &Value) -> &str {
    item.get("description")
        .and_then(Value::as_str)
        .and_then(|d| d.lines().find(|line| !line.trim().is_empty()))
        .map_or("", str::trim)
}

/// The usage text, with the servers and their tools (only `server`'s when given).
fn usage(manifest: &Manifest, server: Option<&str>) -> String {
    let mut text = format!(
        "{USAGE}\n\
         Calls a tool of an MCP server and prints its value as JSON (a string as a JSON\n\
         string: `| jq -r .` prints its text). A flag's value is parsed as JSON when the\n\
         tool's schema types it as a number, integer, boolean, object, array or null;\n\
         --json merges a whole object. `tool SERVER TOOL --help` describes a tool.\n\
         Exit status: 0 done, 1 the tool reported an error, 2 any other failure.\n"
    );
    let Some(servers) = manifest.servers() else {
        text.push_str(&format!("\n{}\n", device::NOT_CONFIGURED));
        return text;
    };
    if let Some(name) = server.filter(|name| !servers.contains_key(*name)) {
        text.push_str(&format!("\nno server `{name}`"));
    }
    text.push_str("\nservers and their tools:\n");
    if servers.is_empty() {
        text.push_str("  (none)\n");
    }
    for (name, info) in servers {
        if server.is_some_and(|s| s != name && servers.contains_key(s)) {
            continue;
        }
        text.push_str(&format!("  {name}"));
        if info.get("available").and_then(Value::as_bool) == Some(false) {
            let why = info.get("message").and_then(Value::as_str).unwrap_or("");
            text.push_str(&format!(
                " (unavailable{}{why})",
                if why.is_empty() { "" } else { ": " }
            ));
        }
        text.push('\n');
        let tools = manifest.tools(name);
        if tools.is_empty() {
            text.push_str("    (no tools)\n");
        }
        for tool in tools {
            let Some(tool_name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let about = summary(tool);
            if about.is_empty() {
                text.push_str(&format!("    {tool_name}\n"));
            } else {
                text.push_str(&format!("    {tool_name}: {about}\n"));
            }
        }
    }
    text
}

/// `tool SERVER TOOL --help`: the tool's description and flags.
fn tool_help(manifest: &Manifest, server: &str, tool: &str) -> String {
    let Some(info) = manifest.tool(server, tool) else {
        return format!(
            "tool {server} {tool}: not in /tools/tools.json (`tool --help` lists the tools)\n"
        );
    };
    let mut text = format!("usage: tool {server} {tool}");
    let schema = info.get("inputSchema");
    let properties = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let type_of = |property: &Value| match property.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ => "value".into(),
    };
    for (name, property) in properties.into_iter().flatten() {
        let flag = format!("--{name} {}", type_of(property).to_uppercase());
        if required.contains(&name.as_str()) {
            text.push_str(&format!(" {flag}"));
        } else {
            text.push_str(&format!(" [{flag}]"));
        }
    }
    text.push('\n');
    if let Some(description) = info.get("description").and_then(Value::as_str) {
        text.push_str(description.trim_end());
        text.push('\n');
    }
    for (name, property) in properties.into_iter().flatten() {
        let about = summary(property);
        let kind = type_of(property);
        let need = if required.contains(&name.as_str()) {
            ", required"
        } else {
            ""
        };
        text.push_str(&format!("  --{name} ({kind}{need})"));
        if !about.is_empty() {
            text.push_str(&format!(": {about}"));
        }
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "message": {"type": "string"},
            "a": {"type": "number"},
            "n": {"type": "integer"},
            "flag": {"type": "boolean"},
            "tags": {"type": "array"},
            "opts": {"type": "object"},
            "nothing": {"type": "null"},
            "maybe": {"type": ["number", "null"]},
            "either": {"type": ["string", "number"]},
            "untyped": {},
            "max_results": {"type": "integer"},
            "dry-run": {"type": "boolean"},
            "dry_run": {"type": "string"}
        }})
    }

    fn args(flags: &[&str]) -> Result<Value, String> {
        arguments(Some(&schema()), &strings(flags)).map(Value::Object)
    }

    #[test]
    fn values_are_typed_by_the_schema() {
        assert_eq!(
            args(&["--message", "42", "--a", "2.5", "--n=3", "--flag", "false"]),
            Ok(json!({"message": "42", "a": 2.5, "n": 3, "flag": false}))
        );
        assert_eq!(
            args(&[
                "--tags",
                "[1, \"x\"]",
                "--opts={\"k\": [true]}",
                "--nothing",
                "null"
            ]),
            Ok(json!({"tags": [1, "x"], "opts": {"k": [true]}, "nothing": null}))
        );
        assert_eq!(
            args(&[
                "--maybe",
                "7",
                "--either",
                "7",
                "--untyped",
                "7",
                "--unknown",
                "7"
            ]),
            Ok(json!({"maybe": 7, "either": "7", "untyped": "7", "unknown": "7"}))
        );
        // No schema at all: strings.
        assert_eq!(
            arguments(None, &strings(&["--a", "1"])).map(Value::Object),
            Ok(json!({"a": "1"}))
        );
    }

    #[test]
    fn a_value_that_does_not_parse_is_an_error() {
        assert_eq!(
            args(&["--a", "two"]),
            Err("--a takes a number (as JSON), not `two`".into())
        );
        assert_eq!(
            args(&["--n", "1", "--opts", "{oops"]),
            Err("--opts takes an object (as JSON), not `{oops`".into())
        );
        assert_eq!(args(&["--message"]), Err("--message needs a value".into()));
        assert!(args(&["stray"])
            .unwrap_err()
            .contains("unexpected argument `stray`"));
        assert!(args(&["--"])
            .unwrap_err()
            .contains("unexpected argument `--`"));
    }

    #[test]
    fn a_boolean_flag_alone_is_true() {
        assert_eq!(
            args(&["--flag", "--a", "1"]),
            Ok(json!({"flag": true, "a": 1}))
        );
        assert_eq!(args(&["--flag"]), Ok(json!({"flag": true})));
    }

    #[test]
    fn dashes_become_underscores_only_for_a_property_that_has_them() {
        assert_eq!(args(&["--max-results", "5"]), Ok(json!({"max_results": 5})));
        // Both exist: the flag names the dashed one.
        assert_eq!(args(&["--dry-run", "true"]), Ok(json!({"dry-run": true})));
        assert_eq!(args(&["--other-name", "x"]), Ok(json!({"other-name": "x"})));
    }

    #[test]
    fn json_merges_a_whole_object() {
        assert_eq!(
            args(&[
                "--a",
                "1",
                "--json",
                "{\"a\": 2, \"b\": [3]}",
                "--message",
                "m"
            ]),
            Ok(json!({"a": 2, "b": [3], "message": "m"}))
        );
        assert_eq!(args(&["--json={}"]), Ok(json!({})));
        assert!(args(&["--json", "[1]"])
            .unwrap_err()
            .contains("needs a JSON object"));
        assert!(args(&["--json", "{"]).unwrap_err().contains("not JSON"));
        assert!(args(&["--json"])
            .unwrap_err()
            .contains("needs a JSON object"));
    }

    #[test]
    fn the_request_names_the_server_tool_and_arguments() {
        let arguments = args(&["--a", "1"]).unwrap();
        assert_eq!(
            request("s", "t\"x", arguments.as_object().unwrap()),
            r#"{"server":"s","tool":"t\"x","arguments":{"a":1}}"#
        );
    }

    #[test]
    fn an_answer_prints_its_value_or_fails() {
        assert_eq!(
            outcome(
                "s",
                "t",
                r#"{"ok": true, "value": "a \"b\"", "structured": false}"#
            ),
            Outcome::out("\"a \\\"b\\\"\"\n".into())
        );
        // The value's keys keep their order and lose the whitespace between tokens.
        assert_eq!(
            outcome(
                "s",
                "t",
                "{\"ok\":true,\"value\":{\"z\": 1,\n \"a\": [\"x y\", 2]}}"
            ),
            Outcome::out("{\"z\":1,\"a\":[\"x y\",2]}\n".into())
        );
        assert_eq!(
            outcome("s", "t", r#"{"ok":true}"#),
            Outcome::out("null\n".into())
        );
        assert_eq!(
            outcome(
                "s",
                "t",
                r#"{"ok":false,"error":"tool_error","message":"bad input","content":[]}"#
            ),
            Outcome::fail("tool: s.t: bad input\n".into(), 1)
        );
        for kind in [
            "not_allowed",
            "unknown_server",
            "limit",
            "unavailable",
            "bad_request",
        ] {
            let answer = format!(r#"{{"ok":false,"error":"{kind}","message":"no"}}"#);
            assert_eq!(
                outcome("s", "t", &answer),
                Outcome::fail("tool: s.t: no\n".into(), 2),
                "{kind}"
            );
        }
        let broken = outcome("s", "t", "not json");
        assert_eq!(broken.status, 2);
        assert!(broken
            .stderr
            .starts_with("tool: s.t: the host's answer is not a JSON object"));
    }

    #[test]
    fn without_the_device_the_call_is_unavailable() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            run(dir.path(), &strings(&["everything", "echo", "--message", "hi"])),
            Outcome::fail(
                "tool: everything.echo: no tools are configured on this server (runbox mcp --tools-config)\n".into(),
                2
            )
        );
    }
}
