//! `create_session`: its arguments, result, description and schemas (the runtime names
//! written in at start-up).

use std::sync::Arc;

use rmcp::handler::server::tool::schema_for_output;
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::arguments::parse;
use super::units::secs;
use crate::mcp::handler::schema::{input_schema_for, standard_formats_only};
use crate::service::RuntimeInfo;

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

/// `create_session`'s arguments: the runtime, one of `names`.
pub fn check_create_session(arguments: JsonObject, names: &[String]) -> Result<String, String> {
    let usage = format!(
        "create_session takes {{\"runtime\": one of {}}}",
        names.join(", ")
    );
    let input: CreateSessionInput = parse(arguments, &create_session_base_input_schema())
        .map_err(|e| format!("invalid arguments: {e}; {usage}"))?;
    Ok(input.runtime)
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

/// `create_session`'s description: which runtimes keep state, and how sessions end.
pub fn create_session_description(
    runtimes: &[RuntimeInfo],
    idle_secs: f64,
    max_sessions: usize,
) -> String {
    let keeping: Vec<&str> = runtimes
        .iter()
        .filter(|r| r.session_state)
        .map(|r| r.name.as_str())
        .collect();
    format!(
        "Start a session; pass its session_id to run_code. State carries over in {}; files \
         in all. A timeout or crash resets the interpreter, not the files. Ends with \
         close_session or after {} s idle; at most {} open.",
        if keeping.is_empty() {
            "no runtime".to_string()
        } else {
            keeping.join(", ")
        },
        secs(idle_secs),
        max_sessions
    )
}
