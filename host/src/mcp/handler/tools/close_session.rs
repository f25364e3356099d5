//! `close_session`: its arguments, result, description and schemas.

use std::sync::Arc;

use rmcp::handler::server::tool::schema_for_output;
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::arguments::{check_session_id, parse};
use crate::mcp::handler::schema::{input_schema_for, standard_formats_only};

/// What close_session does, as its tools/list entry says it.
pub const DESCRIPTION: &str = "End a session and remove its files.";

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

/// `close_session`'s arguments: the session id.
pub fn check_close_session(arguments: JsonObject) -> Result<String, String> {
    let input: CloseSessionInput =
        parse(arguments, &close_session_input_schema()).map_err(|e| {
            format!("invalid arguments: {e}; close_session takes {{\"session_id\": string}}")
        })?;
    check_session_id(&input.session_id)?;
    Ok(input.session_id)
}

pub fn close_session_input_schema() -> Arc<JsonObject> {
    input_schema_for::<CloseSessionInput>()
}

pub fn close_session_output_schema() -> Arc<JsonObject> {
    standard_formats_only(&schema_for_output::<CloseSessionOutput>())
}
