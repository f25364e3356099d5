//! `fork_session`: its arguments, result, description and schemas.

use std::sync::Arc;

use rmcp::handler::server::tool::schema_for_output;
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::arguments::{check_session_id, parse};
use crate::mcp::handler::schema::{input_schema_for, standard_formats_only};
use crate::service::MAX_FORKS;

/// What fork_session does, as its tools/list entry says it.
pub const DESCRIPTION: &str = "Copy a session into new ones, each with its variables and files, \
                               then on its own. For runtimes whose session_mode is \
                               \"snapshot\".";

/// The arguments of `fork_session`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkSessionInput {
    /// The session to copy.
    #[schemars(extend("x-mcp-header" = "Session"))]
    pub session_id: String,
    /// Copies to make (1-16).
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 16), default = "one")]
    pub count: i64,
}

fn one() -> i64 {
    1
}

/// The `structuredContent` of `fork_session`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ForkSessionOutput {
    /// The new sessions, one per copy: pass each as `session_id` to run_code.
    pub session_ids: Vec<String>,
    /// The session they were copied from.
    pub source: String,
}

/// `fork_session`'s arguments: the session id and the count.
pub fn check_fork_session(arguments: JsonObject) -> Result<(String, usize), String> {
    let usage = format!(
        "fork_session takes {{\"session_id\": string, \"count\": 1 to {MAX_FORKS} (default 1)}}"
    );
    let input: ForkSessionInput = parse(arguments, &fork_session_input_schema())
        .map_err(|e| format!("invalid arguments: {e}; {usage}"))?;
    check_session_id(&input.session_id)?;
    if !(1..=MAX_FORKS as i64).contains(&input.count) {
        return Err(format!(
            "invalid arguments: `count` must be from 1 to {MAX_FORKS}, not {}; {usage}",
            input.count
        ));
    }
    Ok((input.session_id, input.count as usize))
}

pub fn fork_session_input_schema() -> Arc<JsonObject> {
    input_schema_for::<ForkSessionInput>()
}

pub fn fork_session_output_schema() -> Arc<JsonObject> {
    standard_formats_only(&schema_for_output::<ForkSessionOutput>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: serde_json::Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn count_defaults_to_one_and_is_bounded() {
        assert_eq!(
            check_fork_session(args(json!({"session_id": "abc"}))).unwrap(),
            ("abc".to_string(), 1)
        );
        assert_eq!(
            check_fork_session(args(json!({"session_id": "abc", "count": 16}))).unwrap(),
            ("abc".to_string(), 16)
        );
        for bad in [json!(0), json!(17), json!(-1)] {
            let e =
                check_fork_session(args(json!({"session_id": "abc", "count": bad}))).unwrap_err();
            assert!(e.contains("`count`"), "{e}");
        }
        let e = check_fork_session(args(json!({"session_id": "abc", "count": "2"}))).unwrap_err();
        assert!(e.contains("`count` must be"), "{e}");
        let e = check_fork_session(args(json!({}))).unwrap_err();
        assert!(e.contains("session_id"), "{e}");
    }

    #[test]
    fn the_schema_names_the_range_and_the_header() {
        let schema = fork_session_input_schema();
        let count = &schema["properties"]["count"];
        assert_eq!(count["minimum"], 1);
        assert_eq!(count["maximum"], 16);
        assert_eq!(count["default"], 1);
        assert_eq!(
            schema["properties"]["session_id"]["x-mcp-header"],
            "Session"
        );
        assert_eq!(schema["required"], json!(["session_id"]));
    }
}
