//! The device's answers (docs/tools.md): one JSON object per call, the same for every
//! runtime's binding.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Value};

/// Why a call did not give the tool's own result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The tool reported an error (`isError`).
    ToolError,
    NotAllowed,
    UnknownServer,
    /// The run's call cap, or a request or answer past its size cap.
    Limit,
    /// The server is down, or went away mid-call.
    Unavailable,
    /// The run's deadline came while the call was under way.
    Timeout,
    /// Not one JSON request object.
    BadRequest,
}

impl Failure {
    pub fn as_str(self) -> &'static str {
        match self {
            Failure::ToolError => "tool_error",
            Failure::NotAllowed => "not_allowed",
            Failure::UnknownServer => "unknown_server",
            Failure::Limit => "limit",
            Failure::Unavailable => "unavailable",
            Failure::Timeout => "timeout",
            Failure::BadRequest => "bad_request",
        }
    }
}

/// One call's answer, and how it is counted in /metrics.
#[derive(Debug, Clone)]
pub struct Answer {
    pub bytes: Vec<u8>,
    /// `ok` or the failure's name.
    pub status: &'static str,
}

impl Answer {
    pub fn failed(kind: Failure, message: impl Into<String>) -> Answer {
        let body = json!({"ok": false, "error": kind.as_str(), "message": message.into()});
        Answer {
            bytes: body.to_string().into_bytes(),
            status: kind.as_str(),
        }
    }

    /// The answer for a tool's result: its value, or its error.
    pub fn from_result(result: CallToolResult) -> Answer {
        let text = text_of(&result);
        let content = serde_json::to_value(&result.content).unwrap_or(Value::Array(Vec::new()));
        if result.is_error == Some(true) {
            let message = if text.is_empty() {
                "the tool reported an error without a message".to_string()
            } else {
                text
            };
            let body =
                json!({"ok": false, "error": "tool_error", "message": message, "content": content});
            return Answer {
                bytes: body.to_string().into_bytes(),
                status: Failure::ToolError.as_str(),
            };
        }
        let (value, structured) = match result.structured_content {
            Some(v) => (v, true),
            None => (Value::String(text), false),
        };
        let body =
            json!({"ok": true, "value": value, "structured": structured, "content": content});
        Answer {
            bytes: body.to_string().into_bytes(),
            status: "ok",
        }
    }
}

/// The text of a result's text blocks, joined with newlines.
fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &Answer) -> Value {
        serde_json::from_slice(&a.bytes).unwrap()
    }

    #[test]
    fn structured_content_is_the_value() {
        let mut r = CallToolResult::success(vec![ContentBlock::text("{\"sum\":5}")]);
        r.structured_content = Some(json!({"sum": 5}));
        let a = parse(&Answer::from_result(r));
        assert_eq!(a["ok"], true);
        assert_eq!(a["value"], json!({"sum": 5}));
        assert_eq!(a["structured"], true);
    }

    #[test]
    fn text_is_the_value_otherwise_and_errors_say_so() {
        let r = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        let a = parse(&Answer::from_result(r));
        assert_eq!(a["value"], "a\nb");
        assert_eq!(a["structured"], false);
        let e = Answer::from_result(CallToolResult::error(vec![ContentBlock::text("boom")]));
        assert_eq!(e.status, "tool_error");
        let e = parse(&e);
        assert_eq!(
            (e["ok"].clone(), e["error"].clone(), e["message"].clone()),
            (json!(false), json!("tool_error"), json!("boom"))
        );
        let f = parse(&Answer::failed(Failure::Limit, "too many"));
        assert_eq!(f["error"], "limit");
    }
}
