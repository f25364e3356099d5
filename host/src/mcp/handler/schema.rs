//! The shapes clients see: `run_code`'s arguments and result, `list_runtimes`' result, and
//! their JSON schemas. The schemas are generated from these types; what is only known once
//! the plugins are loaded (the runtime names, the limits) is written into them at start-up.

use std::sync::Arc;

use rmcp::handler::server::tool::{schema_for_input, schema_for_output};
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::service::RunStatus;
use crate::service::{escaped_name, MAX_INPUT_BYTES, MAX_INPUT_FILES};
use crate::service::{LimitSettings, RuntimeInfo};

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

/// The arguments of `create_session`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSessionInput {
    /// The session's runtime.
    pub runtime: String,
}

/// The `structuredContent` of `create_session`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CreateSessionOutput {
    /// Pass this as `session_id` to run_code (and to close_session).
    pub session_id: String,
    /// The session's runtime.
    pub runtime: String,
    /// The session ends after this many seconds without calls.
    pub idle_timeout_seconds: f64,
    /// Whether variables, functions and imports carry over between calls (files always do).
    pub session_state: bool,
}

/// The arguments of `close_session`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseSessionInput {
    /// The session to end.
    #[schemars(extend("x-mcp-header" = "Session"))]
    pub session_id: String,
}

/// The `structuredContent` of `close_session`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CloseSessionOutput {
    /// The session that ended.
    pub session_id: String,
    /// Always true: the session and its files are gone.
    pub closed: bool,
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

/// One runtime in `list_runtimes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RuntimeEntry {
    /// The name `run_code` takes.
    pub name: String,
    /// The language it runs.
    pub language: String,
    /// The interpreter's version.
    pub version: String,
    /// The usual file extension of its programs, without the dot.
    pub extension: String,
    /// A short program that runs in it.
    pub sample: Option<String>,
    /// Whether a session keeps variables, functions and imports between calls (files
    /// carry over in every session).
    pub session_state: bool,
    /// What a model should know about the runtime beyond its name and version, if anything.
    pub note: Option<String>,
    /// Packages the server's operator added (`NAME==VERSION`): importable in every run
    /// and session. Only present when there are some.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<String>,
    /// Only while it is not ready yet (first start): what is being done, e.g.
    /// "preparing: compiling … (for 40 s)"; a call waits for it. Or "failed: why".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preparation: Option<String>,
}

impl From<RuntimeInfo> for RuntimeEntry {
    fn from(info: RuntimeInfo) -> Self {
        RuntimeEntry {
            name: info.name,
            language: info.language,
            version: info.version,
            extension: info.extension,
            sample: info.sample,
            session_state: info.session_state,
            note: info.note,
            packages: info.packages,
            preparation: info.preparation,
        }
    }
}

/// The limits every run gets, in `list_runtimes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Limits {
    /// The time limit of a run that asks for none.
    pub default_timeout_seconds: f64,
    /// The most `timeout_seconds` may ask for; larger values are capped.
    pub max_timeout_seconds: f64,
    /// What compiling and linking may take, apart from the program's time limit.
    pub compile_timeout_seconds: f64,
    /// Memory a run may use, in MiB.
    pub memory_mb: u64,
    /// Output kept per stream, in bytes.
    pub output_bytes: u64,
    /// Sessions open at once, at most.
    pub max_sessions: u64,
    /// A session ends after this many seconds without calls.
    pub session_idle_timeout_seconds: f64,
}

impl Limits {
    pub fn new(
        limits: &LimitSettings,
        max_sessions: usize,
        session_idle: std::time::Duration,
    ) -> Self {
        Limits {
            default_timeout_seconds: limits.default_timeout.as_secs_f64(),
            max_timeout_seconds: limits.max_timeout.as_secs_f64(),
            compile_timeout_seconds: limits.compile_timeout.as_secs_f64(),
            memory_mb: limits.memory_bytes >> 20,
            output_bytes: limits.output_bytes as u64,
            max_sessions: max_sessions as u64,
            session_idle_timeout_seconds: session_idle.as_secs_f64(),
        }
    }
}

/// The `structuredContent` of `list_runtimes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListRuntimesOutput {
    /// The runtimes `run_code` accepts.
    pub runtimes: Vec<RuntimeEntry>,
    /// The limits of every run.
    pub limits: Limits,
    /// Upstream servers whose tools programs may call (code mode, docs/tools.md); absent
    /// without `--tools-config`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolServerEntry>>,
}

/// One upstream server, as `list_runtimes` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolServerEntry {
    /// What programs call it by (`tools.SERVER.TOOL` in python).
    pub server: String,
    /// Connected, with its tools listed.
    pub available: bool,
    /// Why it is unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Its allowed tools, a line each: `name(args): what it does`.
    pub tools: Vec<String>,
}

impl ToolServerEntry {
    pub fn listing(catalog: &crate::service::Catalog) -> Vec<ToolServerEntry> {
        catalog
            .servers
            .iter()
            .map(|s| ToolServerEntry {
                server: s.name.clone(),
                available: s.available,
                message: s.message.clone(),
                tools: s
                    .tools
                    .iter()
                    .map(|t| crate::service::tool_line(t, 120))
                    .collect(),
            })
            .collect()
    }
}

/// An input schema generated from `T`, in the shape every client accepts: standard
/// formats only, and one JSON `type` per property (an optional property is simply not
/// `required`). The MCP revision 2026-07-28 allows `x-mcp-header` only on a property
/// whose `type` is one string, and the Inspector converts a value only for a single type.
fn input_schema_for<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let schema = schema_for_input::<T>().expect("tool arguments are an object");
    let mut value = Value::Object(standard_formats_only(&schema).as_ref().clone());
    drop_null_types(&mut value);
    match value {
        Value::Object(object) => Arc::new(object),
        _ => unreachable!("an object stays an object"),
    }
}

/// Removes `null` from every `type` list (`["string", "null"]` becomes `"string"`) and
/// every `{"type": "null"}` branch of an `anyOf`/`oneOf`, at any depth.
fn drop_null_types(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if let Some(Value::Array(types)) = object.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let single = types.remove(0);
                    object.insert("type".into(), single);
                }
            }
            for key in ["anyOf", "oneOf"] {
                let Some(Value::Array(branches)) = object.get_mut(key) else {
                    continue;
                };
                branches.retain(|b| b.get("type").is_none_or(|t| t != "null"));
                if branches.len() == 1 {
                    let Some(Value::Object(only)) = branches.pop() else {
                        continue;
                    };
                    object.remove(key);
                    for (k, v) in only {
                        object.entry(k).or_insert(v);
                    }
                }
            }
            object.values_mut().for_each(drop_null_types);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null_types),
        _ => {}
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

/// `create_session`'s input schema: `runtime` is an enum of the loaded runtimes.
pub fn create_session_input_schema(runtimes: &[RuntimeInfo]) -> Arc<JsonObject> {
    let mut schema = create_session_base_input_schema().as_ref().clone();
    let names: Vec<&str> = runtimes.iter().map(|r| r.name.as_str()).collect();
    if let Some(Value::Object(runtime)) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut("runtime"))
    {
        runtime.insert("enum".into(), json!(names));
    }
    Arc::new(schema)
}

/// `create_session`'s input schema before start-up adds the runtime names.
pub fn create_session_base_input_schema() -> Arc<JsonObject> {
    input_schema_for::<CreateSessionInput>()
}

pub fn create_session_output_schema() -> Arc<JsonObject> {
    standard_formats_only(&schema_for_output::<CreateSessionOutput>())
}

pub fn close_session_input_schema() -> Arc<JsonObject> {
    input_schema_for::<CloseSessionInput>()
}

pub fn close_session_output_schema() -> Arc<JsonObject> {
    standard_formats_only(&schema_for_output::<CloseSessionOutput>())
}

/// `run_code`'s output schema, generated from [`RunCodeOutput`].
pub fn run_code_output_schema() -> Arc<JsonObject> {
    standard_formats_only(&schema_for_output::<RunCodeOutput>())
}

/// A schema as tools/list sends it: standard formats only and no `$schema` (2020-12 is
/// MCP's default dialect); an output schema names its top-level fields with their types
/// (and an enum's values) and nothing deeper or wordier. Every client puts tools/list
/// in every conversation: what the fields mean is in the tool's description and
/// docs/mcp.md, and an output schema is there for clients to validate the result.
pub fn for_the_wire(schema: &JsonObject, output: bool) -> Arc<JsonObject> {
    let mut schema = standard_formats_only(schema).as_ref().clone();
    schema.remove("$schema");
    if output {
        schema = top_level_only(&schema);
    }
    Arc::new(schema)
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

/// `schema`'s `type` and properties, each property only its `type` (an object where it
/// was a `$ref`) and its `enum`.
fn top_level_only(schema: &JsonObject) -> JsonObject {
    let mut out = JsonObject::new();
    if let Some(kind) = schema.get("type") {
        out.insert("type".into(), kind.clone());
    }
    let properties: JsonObject = schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, property)| {
            let mut kept = JsonObject::new();
            let kind = property.get("type").cloned().unwrap_or(json!("object"));
            kept.insert("type".into(), kind);
            if let Some(values) = property.get("enum") {
                kept.insert("enum".into(), values.clone());
            }
            (name.clone(), Value::Object(kept))
        })
        .collect();
    out.insert("properties".into(), Value::Object(properties));
    out
}

/// The `format` values JSON Schema (2020-12, section 7.3) defines. schemars also writes
/// OpenAPI's (`uint64`, `int32`, `double`), which validators such as AJV in strict mode
/// refuse or warn about on every call.
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// `schema` with every non-standard `format` removed, at any depth.
pub fn standard_formats_only(schema: &JsonObject) -> Arc<JsonObject> {
    let mut value = Value::Object(schema.clone());
    drop_nonstandard_formats(&mut value);
    match value {
        Value::Object(object) => Arc::new(object),
        _ => unreachable!("an object stays an object"),
    }
}

fn drop_nonstandard_formats(value: &mut Value) {
    match value {
        Value::Object(object) => {
            let nonstandard = matches!(
                object.get("format"),
                Some(Value::String(f)) if !STANDARD_FORMATS.contains(&f.as_str())
            );
            if nonstandard {
                object.remove("format");
            }
            // `properties` maps names to schemas: a property may itself be called `format`.
            object.values_mut().for_each(drop_nonstandard_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nonstandard_formats),
        _ => {}
    }
}

/// A number of seconds as people write it: `10`, `0.5`.
pub(crate) fn secs(s: f64) -> String {
    format!("{s}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime(name: &str) -> RuntimeInfo {
        RuntimeInfo {
            name: name.into(),
            language: "Lang".into(),
            version: "1.0".into(),
            extension: "x".into(),
            sample: None,
            session_state: false,
            note: None,
            packages: Vec::new(),
            preparation: None,
        }
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

    /// Every property at any depth has exactly one JSON `type`; `x-mcp-header` sits only
    /// on a top-level string property (the rules clients of 2026-07-28 enforce).
    fn check_client_rules(schema: &Value, path: &str, top: bool) {
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, prop) in props {
                let here = format!("{path}.{name}");
                assert!(
                    prop.get("type").is_some_and(Value::is_string),
                    "{here} has no single type: {prop}"
                );
                for key in ["anyOf", "oneOf", "allOf"] {
                    assert!(prop.get(key).is_none(), "{here} has {key}: {prop}");
                }
                if prop.get("x-mcp-header").is_some() {
                    assert!(top && prop["type"] == "string", "{here}: {prop}");
                }
                check_client_rules(prop, &here, false);
            }
        }
        if let Some(items) = schema.get("items") {
            check_client_rules(items, &format!("{path}[]"), false);
        }
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
    fn output_schemas_go_on_the_wire_top_level_only() {
        let full = schema_for_output::<ListRuntimesOutput>();
        let wire = Value::Object(for_the_wire(&full, true).as_ref().clone());
        assert_eq!(
            wire,
            json!({"type": "object", "properties": {
                "runtimes": {"type": "array"}, "limits": {"type": "object"},
                "tools": {"type": ["array", "null"]}}})
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

    #[test]
    fn nonstandard_formats_are_dropped_at_any_depth() {
        let raw = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "format": "uint64", "minimum": 0},
                "when": {"type": "string", "format": "date-time"},
                "format": {"type": "string"},
                "list": {"type": "array", "items": {"type": "number", "format": "double"}},
                "either": {"anyOf": [{"type": "integer", "format": "int32"}, {"type": "null"}]}
            },
            "$defs": {"X": {"type": "integer", "format": "uint8"}}
        });
        let cleaned = Value::Object(
            standard_formats_only(raw.as_object().unwrap())
                .as_ref()
                .clone(),
        );
        let props = &cleaned["properties"];
        assert_eq!(props["n"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(props["when"]["format"], "date-time");
        assert_eq!(props["format"], json!({"type": "string"}));
        assert_eq!(props["list"]["items"], json!({"type": "number"}));
        assert_eq!(props["either"]["anyOf"][0], json!({"type": "integer"}));
        assert_eq!(cleaned["$defs"]["X"], json!({"type": "integer"}));
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
}
