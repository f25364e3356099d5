//! `run_code`: its arguments (read into [`RunCodeInput`] and checked), its result
//! ([`RunCodeOutput`] and its readable text), its description, and its schemas, with what
//! start-up writes into them (the runtime names, the limits).

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::tool::schema_for_output;
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::arguments::{check_session_id, parse};
use super::units::{bytes, secs};
use crate::mcp::handler::schema::{for_the_wire, input_schema_for, standard_formats_only};
use crate::service::{escaped_name, FileError, MAX_INPUT_BYTES, MAX_INPUT_FILES};
use crate::service::{LimitSettings, RunStatus, RuntimeInfo};

/// The largest `code` a call may send; larger is a tool error saying so.
pub const MAX_CODE_BYTES: usize = 4 << 20;

/// The largest `stdin` a call may send.
pub const MAX_STDIN_BYTES: usize = 4 << 20;

/// The arguments of `run_code`. The descriptions are short: every client sends them to
/// its model in every conversation (the tools/list fixture test holds the size).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCodeInput {
    /// One of the runtimes above (not needed with `session_id`).
    pub runtime: Option<String>,
    /// The program's source text.
    pub code: String,
    /// Standard input (default: none).
    pub stdin: Option<String>,
    /// Time limit in seconds (its default and maximum are written at start-up).
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub timeout_seconds: Option<f64>,
    /// Input files, placed in the working directory first (caps written at start-up).
    #[schemars(extend("maxItems" = MAX_INPUT_FILES))]
    pub files: Option<Vec<FileInput>>,
    // (Descriptions that do not fit on one line are attributes: a doc comment's line
    // break would reach the schema.)
    #[schemars(
        description = "A session from create_session: its state and files carry over.",
        extend("x-mcp-header" = "Session")
    )]
    pub session_id: Option<String>,
}

// One input file of `run_code`, inlined: clients need not resolve `$ref`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct FileInput {
    /// A relative `/`-separated path without `..`, e.g. `data/in.csv`.
    pub path: String,
    /// Text, or base64 when `encoding` is `base64`.
    pub content: String,
    /// `utf-8` (the default) or `base64`.
    #[schemars(extend("enum" = ["utf-8", "base64"]))]
    pub encoding: Option<String>,
}

impl FileInput {
    /// The file's path and bytes, decoded as its `encoding` says.
    fn decode(self) -> Result<(String, Vec<u8>), String> {
        let bytes =
            crate::service::wire::decode(&self.path, self.content, self.encoding.as_deref())
                .map_err(|e| e.to_string())?;
        Ok((self.path, bytes))
    }
}

/// One output file in `run_code`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(inline)]
pub struct FileOutput {
    /// Relative to the working directory, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// The MIME type, from the file's extension (`text/plain` for other UTF-8 text,
    /// `application/octet-stream` for other bytes).
    pub mime_type: String,
    /// True when the file's bytes are in this result's `content` (an image, or an
    /// embedded resource); false when they are only linked (see `uri`).
    pub returned: bool,
    /// Where `resources/read` gets the whole file for a while after the run
    /// (`runbox://…`); null when it was too big to keep.
    pub uri: Option<String>,
}

/// How a run ended (docs/mcp.md, "`run_code`").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum Status {
    Completed,
    Crashed,
    Terminated,
    Timeout,
}

impl From<RunStatus> for Status {
    fn from(status: RunStatus) -> Self {
        match status {
            RunStatus::Completed => Status::Completed,
            RunStatus::Crashed => Status::Crashed,
            RunStatus::Terminated => Status::Terminated,
            RunStatus::Timeout => Status::Timeout,
        }
    }
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Completed => "completed",
            Status::Crashed => "crashed",
            Status::Terminated => "terminated",
            Status::Timeout => "timeout",
        }
    }
}

/// The `structuredContent` of a `run_code` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunCodeOutput {
    #[schemars(
        description = "completed: the program ran to its end (any exit code); crashed: a trap \
                       or a runtime that failed to start; terminated: stopped for another reason \
                       (output or memory cap, cancellation); timeout: the time limit passed."
    )]
    pub status: Status,
    /// The program's exit code when `status` is completed, else null.
    pub exit_code: Option<i32>,
    /// Standard output and error interleaved in the order written, when both wrote; null
    /// when at most one did (it would only repeat that one).
    pub tty: Option<String>,
    /// Standard output (its head and tail, when it is long; see `output_uri`).
    pub stdout: String,
    /// Standard error (its head and tail, when it is long; see `output_uri`).
    pub stderr: String,
    /// What went wrong, for every status but completed; else null.
    pub error: Option<String>,
    /// True when the output cap stopped the program (its output was cut). Showing only
    /// the head and tail of a long output is not truncation.
    pub truncated: bool,
    /// How long the run took, in milliseconds.
    pub duration_ms: f64,
    /// The files the run created or changed in its working directory, in path order.
    pub files: Vec<FileOutput>,
    /// The session the run belongs to, or null.
    pub session_id: Option<String>,
    /// Where `resources/read` gets the whole output for a while after the run, when the
    /// result shows only part of it; else null.
    pub output_uri: Option<String>,
    /// What a session lost when it was resumed from the session store (work of a replica
    /// that stopped without storing it, or state that could not be rebuilt exactly);
    /// given once, in the first result after the resume, and absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

impl RunCodeOutput {
    /// The result as a person (or a model) reads it: status, exit code, then the output
    /// (each byte once) and the files. File names are escaped, so none can forge a line.
    pub fn to_text(&self) -> String {
        let mut text = format!("status: {}", self.status.as_str());
        if let Some(code) = self.exit_code {
            text.push_str(&format!("\nexit code: {code}"));
        }
        if let Some(error) = &self.error {
            text.push_str(&format!("\nerror: {}", one_line(error)));
        }
        if self.truncated {
            text.push_str("\nnote: the output cap stopped the program");
        }
        if let Some(notice) = &self.notice {
            text.push_str(&format!("\nnotice: {}", one_line(notice)));
        }
        text.push_str(&format!("\nduration: {} ms\n", self.duration_ms));
        for (name, stream) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            if !stream.is_empty() {
                text.push_str(&format!("--- {name} ---\n{stream}"));
                if !stream.ends_with('\n') {
                    text.push('\n');
                }
            }
        }
        if self.stdout.is_empty() && self.stderr.is_empty() {
            text.push_str("(no output)\n");
        }
        if let Some(uri) = &self.output_uri {
            text.push_str(&format!(
                "--- the output is long: the whole of it is at {uri} (resources/read) ---\n"
            ));
        }
        if !self.files.is_empty() {
            text.push_str("--- files ---\n");
            for f in &self.files {
                let how = match (f.returned, &f.uri) {
                    (true, _) => String::new(),
                    (false, Some(uri)) => format!(", linked: {uri}"),
                    (false, None) => ", not returned: too big to keep".to_string(),
                };
                text.push_str(&format!(
                    "{} ({} bytes, {}{how})\n",
                    escaped_name(&f.path),
                    f.size,
                    f.mime_type
                ));
            }
        }
        let linked =
            self.output_uri.is_some() || self.files.iter().any(|f| !f.returned && f.uri.is_some());
        if linked {
            // Links are unguessable handles, listed to no one: say where they are read.
            text.push_str(
                "(runbox:// links are read with resources/read for a while; resources/list \
                 does not show them)\n",
            );
        }
        text
    }
}

/// Host messages on one line.
fn one_line(text: &str) -> String {
    if text.contains(['\n', '\r']) {
        text.escape_debug().to_string()
    } else {
        text.to_string()
    }
}

/// `run_code`'s arguments, checked.
pub struct CheckedInput {
    /// Empty in a session that leaves it out.
    pub runtime: String,
    pub code: String,
    pub stdin: Option<String>,
    pub timeout: Option<Duration>,
    /// The `timeout_seconds` asked for, when it was above the maximum and capped.
    pub timeout_capped_from: Option<f64>,
    /// Decoded, not yet checked against the runtime's own files (the run does that).
    pub files: Vec<(String, Vec<u8>)>,
    pub session_id: Option<String>,
}

/// Reads `run_code`'s arguments against the loaded runtimes `names`; a timeout above
/// `max_timeout` is capped to it. The error says what was wrong and how the call looks.
pub fn check_run_code(
    arguments: JsonObject,
    names: &[String],
    max_timeout: Duration,
) -> Result<CheckedInput, String> {
    let usage = || {
        format!(
            "run_code takes {{\"runtime\": one of {} (unless \"session_id\" is given), \"code\": \
             string, \"stdin\"?: string, \"timeout_seconds\"?: number, \"files\"?: [{{\"path\": \
             string, \"content\": string, \"encoding\"?: \"utf-8\" or \"base64\"}}], \
             \"session_id\"?: string}}",
            names.join(", ")
        )
    };
    let invalid = |e: String| format!("invalid arguments: {e}; {}", usage());
    // More than the cap is refused before any file is read.
    if let Some(Value::Array(files)) = arguments.get("files") {
        if files.len() > MAX_INPUT_FILES {
            return Err(FileError::TooMany { count: files.len() }.to_string());
        }
    }
    let input: RunCodeInput = parse(arguments, &run_code_base_input_schema()).map_err(invalid)?;
    let RunCodeInput {
        runtime,
        code,
        stdin,
        timeout_seconds,
        files,
        session_id,
    } = input;
    let runtime = match (runtime, &session_id) {
        (Some(runtime), _) if !names.contains(&runtime) => {
            return Err(crate::service::CallError::UnknownRuntime {
                name: runtime.escape_debug().to_string(),
                valid: names.to_vec(),
            }
            .to_string())
        }
        (Some(runtime), _) => runtime,
        (None, Some(_)) => String::new(),
        (None, None) => {
            return Err(invalid(format!(
                "missing field `runtime` (one of {}); it may be left out only with a \
                 `session_id`",
                names.join(", ")
            )))
        }
    };
    if let Some(id) = &session_id {
        check_session_id(id)?;
    }
    let too_big = |field: &str, len: usize, max: usize| {
        format!(
            "invalid arguments: `{field}` is {len} bytes; the limit is {} MiB",
            max >> 20
        )
    };
    if code.len() > MAX_CODE_BYTES {
        return Err(too_big("code", code.len(), MAX_CODE_BYTES));
    }
    if let Some(stdin) = stdin.as_ref().filter(|s| s.len() > MAX_STDIN_BYTES) {
        return Err(too_big("stdin", stdin.len(), MAX_STDIN_BYTES));
    }
    let timeout_capped_from = timeout_seconds.filter(|secs| *secs > max_timeout.as_secs_f64());
    let timeout = match timeout_seconds {
        None => None,
        Some(secs) if secs > 0.0 && secs.is_finite() => {
            Some(Duration::from_secs_f64(secs.min(max_timeout.as_secs_f64())))
        }
        Some(secs) => {
            return Err(invalid(format!(
                "`timeout_seconds` must be a number of seconds above 0, not {secs}"
            )))
        }
    };
    let files = files
        .unwrap_or_default()
        .into_iter()
        .map(FileInput::decode)
        .collect::<Result<Vec<_>, String>>()?;
    Ok(CheckedInput {
        runtime,
        code,
        stdin,
        timeout,
        timeout_capped_from,
        files,
        session_id,
    })
}

impl CheckedInput {
    /// What the result says when the time limit asked for was capped.
    pub fn timeout_note(&self, max_timeout: Duration) -> Option<String> {
        self.timeout_capped_from.map(|asked| {
            format!(
                "timeout_seconds {asked} is above this server's maximum: the run had {} s",
                max_timeout.as_secs_f64()
            )
        })
    }
}

/// `run_code`'s input schema as generated from [`RunCodeInput`], before start-up adds the
/// runtime names (see [`run_code_input_schema`]).
pub fn run_code_base_input_schema() -> Arc<JsonObject> {
    input_schema_for::<RunCodeInput>()
}

/// `run_code`'s input schema: `runtime` becomes an enum of the loaded runtimes.
pub fn run_code_input_schema(runtimes: &[RuntimeInfo], limits: &LimitSettings) -> Arc<JsonObject> {
    let mut schema = run_code_base_input_schema().as_ref().clone();
    let properties = schema.get_mut("properties").and_then(Value::as_object_mut);
    let properties = properties.expect("RunCodeInput has properties");
    let names: Vec<&str> = runtimes.iter().map(|r| r.name.as_str()).collect();
    if let Some(Value::Object(runtime)) = properties.get_mut("runtime") {
        runtime.insert("enum".into(), json!(names));
    }
    if let Some(Value::Object(timeout)) = properties.get_mut("timeout_seconds") {
        timeout.insert(
            "description".into(),
            json!(format!(
                "Time limit in seconds (default {}, at most {}).",
                secs(limits.default_timeout.as_secs_f64()),
                secs(limits.max_timeout.as_secs_f64())
            )),
        );
    }
    if let Some(Value::Object(files)) = properties.get_mut("files") {
        files.insert(
            "description".into(),
            json!(format!(
                "Input files put in the working directory (at most {MAX_INPUT_FILES}, {} MiB).",
                MAX_INPUT_BYTES >> 20
            )),
        );
    }
    Arc::new(schema)
}

/// `run_code`'s output schema, generated from [`RunCodeOutput`].
pub fn run_code_output_schema() -> Arc<JsonObject> {
    standard_formats_only(&schema_for_output::<RunCodeOutput>())
}

/// `run_code`'s output schema as tools/list sends it: top-level only, with `required`,
/// since a client reads its result field by field (the other tools' fields are always
/// there too, unlisted).
pub fn run_code_output_on_the_wire() -> Arc<JsonObject> {
    let full = run_code_output_schema();
    let mut wire = for_the_wire(&full, true).as_ref().clone();
    if let Some(required) = full.get("required") {
        wire.insert("required".into(), required.clone());
    }
    Arc::new(wire)
}

/// The tool description, written for a model: what runs, what the sandbox allows, the
/// limits. The one place the runtimes are listed (the `runtime` enum names them, the
/// instructions point here): every conversation carries it, so it says each thing once.
pub fn run_code_description(
    runtimes: &[RuntimeInfo],
    limits: &LimitSettings,
    max_task_timeout: Option<std::time::Duration>,
) -> String {
    let listed: Vec<String> = runtimes
        .iter()
        .map(|r| {
            let note = r
                .note
                .as_deref()
                .map_or(String::new(), |n| format!(". {n}"));
            format!("- {}: {} {}{note}", r.name, r.language, r.version)
        })
        .collect();
    let longer = max_task_timeout.map_or(String::new(), |t| {
        format!("; clients with MCP tasks up to {} s", secs(t.as_secs_f64()))
    });
    format!(
        "Run a program in a WebAssembly sandbox. Runtimes:\n{}\n\n\
         No network, no host files, nothing to install, no command-line arguments; each call \
         starts fresh unless in a session (create_session, fork_session). Input via `stdin` \
         and `files`; files it writes come back (images as images). Limits: {} s \
         (`timeout_seconds` up to {} s{longer}; compiling has {} s of its own), {} memory, \
         {} output per stream. A non-zero exit is still `completed`; `error` says why a run \
         ended `timeout`, `crashed` or `terminated`. Long output shows head and tail; the rest is linked (runbox:// \
         URIs, for resources/read).",
        listed.join("\n"),
        secs(limits.default_timeout.as_secs_f64()),
        secs(limits.max_timeout.as_secs_f64()),
        secs(limits.compile_timeout.as_secs_f64()),
        bytes(limits.memory_bytes),
        bytes(limits.output_bytes as u64),
    )
}

/// What run_code's description adds with code mode: a line per tool, and how to call one.
pub fn tools_description(catalog: &crate::service::Catalog) -> String {
    let all = catalog.summary_lines();
    let mut lines: Vec<String> = all
        .iter()
        .take(DESCRIBED_TOOLS)
        .map(|l| format!("- {l}"))
        .collect();
    // Every conversation carries the description: past a few dozen tools, the rest
    // are where a program or a list_runtimes call finds them.
    if all.len() > DESCRIBED_TOOLS {
        lines.push(format!(
            "- … and {} more (list_runtimes and /tools/README.md list them all)",
            all.len() - DESCRIBED_TOOLS
        ));
    }
    format!(
        "\n\nPrograms may call these tools (list_runtimes has the current list; /tools/README.md \
         in the sandbox has it all, /tools/tools.json the schemas); after `->`, what a call \
         returns: `text` is a string, anything else that structure (a dict in python, an \
         object in javascript):\n{}\n\
         python: `import tools; tools.SERVER.TOOL(arg=value)`; javascript/typescript: \
         `import {{ SERVER }} from \"runbox:tools\"; await SERVER.TOOL({{arg: value}})`; shell: \
         `tool SERVER TOOL --arg value` (JSON out); any runtime: /tools/call (see the README).",
        if lines.is_empty() {
            "- (none yet)".to_string()
        } else {
            lines.join("\n")
        }
    )
}

/// The most tool lines run_code's description holds.
pub const DESCRIBED_TOOLS: usize = 40;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::handler::schema::check_client_rules;
    use crate::mcp::handler::tools::close_session::close_session_input_schema;
    use crate::mcp::handler::tools::create_session::{
        create_session_description, create_session_input_schema,
    };
    use crate::mcp::handler::tools::list_runtimes::ListRuntimesOutput;
    use crate::service::{Catalog, ServerView};

    fn runtime(name: &str) -> RuntimeInfo {
        RuntimeInfo {
            name: name.into(),
            language: "Lang".into(),
            version: "1.0".into(),
            extension: "x".into(),
            sample: None,
            session_state: false,
            session_mode: None,
            note: None,
            packages: Vec::new(),
            preparation: None,
        }
    }

    fn python() -> RuntimeInfo {
        RuntimeInfo {
            name: "python".into(),
            language: "Python".into(),
            version: "3.15.0".into(),
            extension: "py".into(),
            sample: None,
            session_state: true,
            session_mode: Some(crate::service::SessionMode::Snapshot),
            note: Some("plt.show() saves each figure as figure-N.png".into()),
            packages: Vec::new(),
            preparation: None,
        }
    }

    fn check(args: serde_json::Value) -> Result<CheckedInput, String> {
        let names = ["python".to_string(), "ruby".to_string()];
        check_run_code(
            args.as_object().unwrap().clone(),
            &names,
            Duration::from_secs(60),
        )
    }

    #[test]
    fn a_runtime_is_needed_unless_there_is_a_session() {
        let e = check(json!({"code": "1"})).err().unwrap();
        assert!(
            e.contains("missing field `runtime`") && e.contains("python, ruby"),
            "{e}"
        );
        let ok = check(json!({"code": "1", "session_id": "abc"})).unwrap();
        assert_eq!(
            (ok.runtime.as_str(), ok.session_id.as_deref()),
            ("", Some("abc"))
        );
        let e = check(json!({"code": "1", "runtime": "cobol"}))
            .err()
            .unwrap();
        assert!(
            e.contains("unknown runtime `cobol`; valid runtimes: python, ruby"),
            "{e}"
        );
        let e = check(json!({"code": "1", "session_id": "a b\n"}))
            .err()
            .unwrap();
        assert!(e.contains("not a session id"), "{e}");
    }

    #[test]
    fn timeouts_are_capped_and_checked() {
        let ok = check(json!({"code": "1", "runtime": "python", "timeout_seconds": 600})).unwrap();
        assert_eq!(ok.timeout, Some(Duration::from_secs(60)));
        let note = ok.timeout_note(Duration::from_secs(60)).unwrap();
        assert!(note.contains("600") && note.contains("60 s"), "{note}");
        let within =
            check(json!({"code": "1", "runtime": "python", "timeout_seconds": 60})).unwrap();
        assert_eq!(within.timeout_note(Duration::from_secs(60)), None);
        assert!(check(json!({"code": "1", "runtime": "python", "timeout_seconds": 0})).is_err());
    }

    #[test]
    fn wrong_types_are_named_in_plain_words() {
        let e = check(json!({"code": "1", "runtime": "python", "timeout_seconds": "5"}))
            .err()
            .unwrap();
        assert!(
            e.contains("`timeout_seconds` must be a number, not a string"),
            "{e}"
        );
        assert!(!e.contains("f64"), "{e}");
        let e = check(json!({"code": 3, "runtime": "python"}))
            .err()
            .unwrap();
        assert!(e.contains("`code` must be a string, not a number"), "{e}");
        let e = check(json!({"code": "1", "runtime": "python", "files": "a.txt"}))
            .err()
            .unwrap();
        assert!(e.contains("`files` must be an array, not a string"), "{e}");
        let e = check(json!({"code": "1", "runtime": "python",
                             "files": [{"path": "a", "content": 1}]}))
        .err()
        .unwrap();
        assert!(
            e.contains("`files[0].content` must be a string, not a number"),
            "{e}"
        );
        let e = check(json!({"code": "1", "runtime": "python",
                             "files": [{"path": "a", "content": "x", "mode": 7}]}))
        .err()
        .unwrap();
        assert!(e.contains("unknown field `files[0].mode`"), "{e}");
        let e = check(json!({"code": "1", "runtime": "python", "langauge": "x"}))
            .err()
            .unwrap();
        assert!(e.contains("unknown field `langauge`"), "{e}");
    }

    #[test]
    fn null_means_left_out() {
        let ok = check(json!({"code": "1", "runtime": "python", "stdin": null,
                              "timeout_seconds": null, "files": null, "session_id": null}))
        .unwrap();
        assert!(ok.stdin.is_none() && ok.timeout.is_none() && ok.files.is_empty());
    }

    #[test]
    fn files_are_decoded() {
        let ok = check(json!({"code": "1", "runtime": "python", "files": [
            {"path": "a.txt", "content": "hi"},
            {"path": "b.bin", "content": "AAE=", "encoding": "base64"},
            // Runno's name for utf-8, which prompts written for @runno/mcp send.
            {"path": "c.txt", "content": "hé", "encoding": "text"}]}))
        .unwrap();
        assert_eq!(
            ok.files,
            [
                ("a.txt".into(), b"hi".to_vec()),
                ("b.bin".into(), vec![0, 1]),
                ("c.txt".into(), "hé".as_bytes().to_vec())
            ]
        );
    }

    #[test]
    fn input_schema_lists_the_runtimes_as_an_enum() {
        let schema = run_code_input_schema(
            &[runtime("python"), runtime("ruby")],
            &LimitSettings::default(),
        );
        let schema = Value::Object(schema.as_ref().clone());
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["runtime"]["type"], "string");
        assert_eq!(
            schema["properties"]["runtime"]["enum"],
            json!(["python", "ruby"])
        );
        // `runtime` may be left out in a session.
        assert_eq!(schema["required"], json!(["code"]));
        assert_eq!(schema["additionalProperties"], json!(false));
        assert_eq!(
            schema["properties"]["timeout_seconds"]["exclusiveMinimum"],
            json!(0)
        );
        assert!(schema["properties"]["timeout_seconds"]["description"]
            .as_str()
            .unwrap()
            .contains("at most 40"));
    }

    #[test]
    fn output_schema_matches_the_spec() {
        let schema = Value::Object(run_code_output_schema().as_ref().clone());
        assert_eq!(schema["type"], "object");
        let props = &schema["properties"];
        assert_eq!(
            props["status"]["enum"],
            json!(["completed", "crashed", "terminated", "timeout"])
        );
        assert_eq!(props["exit_code"]["type"], json!(["integer", "null"]));
        assert_eq!(props["error"]["type"], json!(["string", "null"]));
        assert_eq!(props["truncated"]["type"], "boolean");
        assert_eq!(props["duration_ms"]["type"], "number");
        for field in ["stdout", "stderr"] {
            assert_eq!(props[field]["type"], "string", "{field}");
        }
        for field in ["tty", "output_uri"] {
            assert_eq!(props[field]["type"], json!(["string", "null"]), "{field}");
        }
        let file = &props["files"]["items"]["properties"];
        assert_eq!(file["uri"]["type"], json!(["string", "null"]));
        let mut required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        required.sort();
        assert_eq!(
            required,
            [
                "duration_ms",
                "error",
                "exit_code",
                "files",
                "output_uri",
                "session_id",
                "status",
                "stderr",
                "stdout",
                "truncated",
                "tty"
            ]
        );
    }

    #[test]
    fn text_shows_status_code_and_output() {
        let out = RunCodeOutput {
            status: Status::Completed,
            exit_code: Some(3),
            tty: Some("hi\noops\n".into()),
            stdout: "hi\n".into(),
            stderr: "oops\n".into(),
            error: None,
            truncated: false,
            duration_ms: 1.5,
            files: Vec::new(),
            session_id: None,
            output_uri: None,
            notice: None,
        };
        assert_eq!(
            out.to_text(),
            "status: completed\nexit code: 3\nduration: 1.5 ms\n--- stdout ---\nhi\n--- stderr ---\noops\n"
        );
        let timeout = RunCodeOutput {
            status: Status::Timeout,
            exit_code: None,
            tty: None,
            stdout: String::new(),
            stderr: String::new(),
            error: Some("time limit reached".into()),
            truncated: false,
            duration_ms: 1000.0,
            files: vec![
                FileOutput {
                    path: "big.bin".into(),
                    size: 9 << 20,
                    mime_type: "application/octet-stream".into(),
                    returned: false,
                    uri: Some("runbox://ab/files/big.bin".into()),
                },
                FileOutput {
                    path: "x\nstatus: completed".into(),
                    size: 1,
                    mime_type: "text/plain".into(),
                    returned: true,
                    uri: Some("runbox://ab/files/x%0Astatus%3A%20completed".into()),
                },
            ],
            session_id: None,
            output_uri: None,
            notice: None,
        };
        assert_eq!(
            timeout.to_text(),
            "status: timeout\nerror: time limit reached\nduration: 1000 ms\n(no output)\n\
             --- files ---\nbig.bin (9437184 bytes, application/octet-stream, linked: \
             runbox://ab/files/big.bin)\n\"x\\nstatus: completed\" (1 bytes, text/plain)\n\
             (runbox:// links are read with resources/read for a while; resources/list does \
             not show them)\n"
        );
    }

    #[test]
    fn description_names_runtimes_and_limits() {
        let text = run_code_description(
            &[python()],
            &LimitSettings::default(),
            Some(std::time::Duration::from_secs(3600)),
        );
        for needle in [
            "- python: Python 3.15.0",
            "No network",
            "starts fresh unless in a session",
            "figure-N.png",
            "Limits: 10 s",
            "up to 40 s; clients with MCP tasks up to 3600 s",
            "compiling has 15 s of its own",
            "512 MiB memory",
            "1 MiB output",
        ] {
            assert!(text.contains(needle), "{needle:?} not in {text}");
        }
        let text = create_session_description(&[python()], 600.0, 16);
        assert!(
            text.contains("carries over in python;") && text.contains("600 s"),
            "{text}"
        );
    }

    #[test]
    fn the_description_lists_a_few_dozen_tools_at_most() {
        let tools = (0..100)
            .map(|i| {
                let mut t = rmcp::model::Tool::default();
                t.name = format!("tool{i}").into();
                t
            })
            .collect();
        let catalog = Catalog {
            servers: vec![ServerView {
                name: "big".into(),
                available: true,
                message: None,
                tools,
            }],
        };
        let d = tools_description(&catalog);
        assert!(d.contains("- big.tool39() -> text: "), "{d}");
        assert!(!d.contains("tool40("), "{d}");
        assert!(d.contains("… and 60 more"), "{d}");
    }

    #[test]
    fn input_schemas_have_one_type_per_property() {
        let runtimes = [runtime("python")];
        let schemas = [
            run_code_input_schema(&runtimes, &LimitSettings::default()),
            create_session_input_schema(&runtimes),
            close_session_input_schema(),
        ];
        for schema in schemas {
            let schema = Value::Object(schema.as_ref().clone());
            check_client_rules(&schema, "", true);
        }
        let run = Value::Object(run_code_base_input_schema().as_ref().clone());
        let props = &run["properties"];
        assert_eq!(props["timeout_seconds"]["type"], "number");
        assert_eq!(props["files"]["type"], "array");
        assert_eq!(
            props["files"]["items"]["properties"]["encoding"]["type"],
            "string"
        );
        assert_eq!(props["session_id"]["type"], "string");
        assert_eq!(props["session_id"]["x-mcp-header"], "Session");
    }

    #[test]
    fn output_schemas_go_on_the_wire_top_level_only() {
        let full = schema_for_output::<ListRuntimesOutput>();
        let wire = Value::Object(for_the_wire(&full, true).as_ref().clone());
        assert_eq!(
            wire,
            json!({"type": "object", "properties": {
                "runtimes": {"type": "array"}, "limits": {"type": "object"},
                "tools": {"type": ["array", "null"]}, "network": {"type": "string"}}})
        );
        let run = Value::Object(run_code_output_on_the_wire().as_ref().clone());
        assert_eq!(
            run["properties"]["status"]["enum"],
            json!(["completed", "crashed", "terminated", "timeout"])
        );
        assert_eq!(
            run["properties"]["exit_code"]["type"],
            json!(["integer", "null"])
        );
        assert_eq!(run["required"].as_array().map(Vec::len), Some(11));
        assert!(!run.to_string().contains("description"), "{run}");
        // Input schemas keep their descriptions, lose only `$schema`.
        let input = for_the_wire(&run_code_base_input_schema(), false);
        assert!(input.get("$schema").is_none());
        assert!(input["properties"]["code"]["description"].is_string());
        // No description holds a line break (a doc comment's would).
        assert!(!Value::Object(input.as_ref().clone())
            .to_string()
            .contains("\\n"));
    }
}
