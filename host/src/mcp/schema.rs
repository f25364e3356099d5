//! The shapes clients see: `run_code`'s arguments and result, `list_runtimes`' result, and
//! their JSON schemas. The schemas are generated from these types; what is only known once
//! the plugins are loaded (the runtime names, the limits) is written into them at start-up.

use std::sync::Arc;

use rmcp::handler::server::tool::{schema_for_input, schema_for_output};
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::outcome::{RunOutcome, RunStatus};
use crate::service::{LimitSettings, RuntimeInfo};

/// The arguments of `run_code`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCodeInput {
    /// The runtime to run the code in.
    pub runtime: String,
    /// The program's source text, as it would be written to a file.
    pub code: String,
    #[schemars(
        description = "Text given to the program as standard input. Without it the program \
                       sees end of input at once."
    )]
    pub stdin: Option<String>,
    /// Wall-clock limit in seconds; fractions allowed.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub timeout_seconds: Option<f64>,
}

/// How a run ended (SPEC.md).
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
    /// Standard output and error interleaved in the order written.
    pub tty: String,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// What went wrong, for every status but completed; else null.
    pub error: Option<String>,
    /// True when the output cap cut the output.
    pub truncated: bool,
    /// How long the run took, in milliseconds.
    pub duration_ms: f64,
}

impl From<RunOutcome> for RunCodeOutput {
    fn from(outcome: RunOutcome) -> Self {
        RunCodeOutput {
            status: outcome.status.into(),
            exit_code: outcome.exit_code,
            tty: outcome.tty,
            stdout: outcome.stdout,
            stderr: outcome.stderr,
            error: outcome.error,
            truncated: outcome.truncated,
            // Microsecond precision is plenty, and keeps the number short.
            duration_ms: (outcome.duration.as_secs_f64() * 1e6).round() / 1e3,
        }
    }
}

impl RunCodeOutput {
    /// The result as a person (or a model) reads it: status, exit code, then the output.
    pub fn to_text(&self) -> String {
        let mut text = format!("status: {}", self.status.as_str());
        if let Some(code) = self.exit_code {
            text.push_str(&format!("\nexit code: {code}"));
        }
        if let Some(error) = &self.error {
            text.push_str(&format!("\nerror: {error}"));
        }
        if self.truncated {
            text.push_str("\nnote: the output cap cut the output");
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
        text
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
}

impl From<RuntimeInfo> for RuntimeEntry {
    fn from(info: RuntimeInfo) -> Self {
        RuntimeEntry {
            name: info.name,
            language: info.language,
            version: info.version,
            extension: info.extension,
            sample: info.sample,
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
    /// Memory a run may use, in MiB.
    pub memory_mb: u64,
    /// Output kept per stream, in bytes.
    pub output_bytes: u64,
}

impl From<&LimitSettings> for Limits {
    fn from(limits: &LimitSettings) -> Self {
        Limits {
            default_timeout_seconds: limits.default_timeout.as_secs_f64(),
            max_timeout_seconds: limits.max_timeout.as_secs_f64(),
            memory_mb: limits.memory_bytes >> 20,
            output_bytes: limits.output_bytes as u64,
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
}

/// `run_code`'s input schema as generated from [`RunCodeInput`], before start-up adds the
/// runtime names (see [`run_code_input_schema`]).
pub fn run_code_base_input_schema() -> Arc<JsonObject> {
    schema_for_input::<RunCodeInput>().expect("RunCodeInput is an object")
}

/// `run_code`'s input schema: `runtime` becomes an enum of the loaded runtimes.
pub fn run_code_input_schema(runtimes: &[RuntimeInfo], limits: &LimitSettings) -> Arc<JsonObject> {
    let mut schema = run_code_base_input_schema().as_ref().clone();
    let properties = schema.get_mut("properties").and_then(Value::as_object_mut);
    let properties = properties.expect("RunCodeInput has properties");
    let names: Vec<&str> = runtimes.iter().map(|r| r.name.as_str()).collect();
    let listed: Vec<String> = runtimes
        .iter()
        .map(|r| format!("{} ({} {})", r.name, r.language, r.version))
        .collect();
    if let Some(Value::Object(runtime)) = properties.get_mut("runtime") {
        runtime.insert("enum".into(), json!(names));
        runtime.insert(
            "description".into(),
            json!(format!(
                "The runtime to run the code in: {}.",
                listed.join(", ")
            )),
        );
    }
    if let Some(Value::Object(timeout)) = properties.get_mut("timeout_seconds") {
        timeout.insert(
            "description".into(),
            json!(format!(
                "Wall-clock limit in seconds; fractions allowed. Default {}, at most {} \
                 (larger values are capped).",
                secs(limits.default_timeout.as_secs_f64()),
                secs(limits.max_timeout.as_secs_f64())
            )),
        );
    }
    Arc::new(schema)
}

/// `run_code`'s output schema, generated from [`RunCodeOutput`].
pub fn run_code_output_schema() -> Arc<JsonObject> {
    schema_for_output::<RunCodeOutput>()
}

/// A number of seconds as people write it: `10`, `0.5`.
pub(crate) fn secs(s: f64) -> String {
    format!("{s}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn runtime(name: &str) -> RuntimeInfo {
        RuntimeInfo {
            name: name.into(),
            language: "Lang".into(),
            version: "1.0".into(),
            extension: "x".into(),
            sample: None,
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
        assert_eq!(schema["required"], json!(["runtime", "code"]));
        assert_eq!(schema["additionalProperties"], json!(false));
        assert_eq!(
            schema["properties"]["timeout_seconds"]["exclusiveMinimum"],
            json!(0)
        );
        assert!(schema["properties"]["timeout_seconds"]["description"]
            .as_str()
            .unwrap()
            .contains("at most 60"));
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
        for field in ["tty", "stdout", "stderr"] {
            assert_eq!(props[field]["type"], "string", "{field}");
        }
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
            tty: "hi\noops\n".into(),
            stdout: "hi\n".into(),
            stderr: "oops\n".into(),
            error: None,
            truncated: false,
            duration_ms: 1.5,
        };
        assert_eq!(
            out.to_text(),
            "status: completed\nexit code: 3\nduration: 1.5 ms\n--- stdout ---\nhi\n--- stderr ---\noops\n"
        );
        let timeout = RunCodeOutput {
            status: Status::Timeout,
            exit_code: None,
            tty: String::new(),
            stdout: String::new(),
            stderr: String::new(),
            error: Some("time limit reached".into()),
            truncated: false,
            duration_ms: 1000.0,
        };
        assert_eq!(
            timeout.to_text(),
            "status: timeout\nerror: time limit reached\nduration: 1000 ms\n(no output)\n"
        );
    }

    #[test]
    fn durations_are_milliseconds() {
        let outcome = RunOutcome {
            status: RunStatus::Completed,
            exit_code: Some(0),
            stdout: String::new(),
            stderr: String::new(),
            tty: String::new(),
            error: None,
            truncated: false,
            duration: Duration::from_micros(12_345),
            raw: Default::default(),
        };
        assert_eq!(RunCodeOutput::from(outcome).duration_ms, 12.345);
    }
}
