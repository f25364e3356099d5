//! `run_code`'s arguments, checked: what a tool error names when they are wrong.

use std::time::Duration;

use rmcp::model::JsonObject;

use super::schema::RunCodeInput;
use crate::files::{self, FileError, MAX_INPUT_FILES};

/// The largest `code` a call may send; larger is a tool error saying so.
pub const MAX_CODE_BYTES: usize = 4 << 20;
/// The largest `stdin` a call may send.
pub const MAX_STDIN_BYTES: usize = 4 << 20;

/// `run_code`'s arguments, checked.
pub struct CheckedInput {
    /// Empty in a session that leaves it out.
    pub runtime: String,
    pub code: String,
    pub stdin: Option<String>,
    pub timeout: Option<Duration>,
    /// Decoded, not yet checked against the runtime's own files (the run does that).
    pub files: Vec<(String, Vec<u8>)>,
    pub session_id: Option<String>,
}

/// Checks `run_code`'s arguments against the loaded runtimes `names` and the server's
/// `max_timeout`; the error names the valid runtimes.
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
    let input: RunCodeInput = serde_json::from_value(arguments.into())
        .map_err(|e| format!("invalid arguments: {e}; {}", usage()))?;
    let runtime = match (&input.runtime, &input.session_id) {
        (Some(runtime), _) if !names.contains(runtime) => {
            return Err(format!(
                "unknown runtime `{runtime}`; valid runtimes: {}",
                names.join(", ")
            ))
        }
        (Some(runtime), _) => runtime.clone(),
        (None, Some(_)) => String::new(),
        (None, None) => {
            return Err(format!(
                "invalid arguments: missing field `runtime` (one of {}); it may be left out \
                 only with a `session_id`; {}",
                names.join(", "),
                usage()
            ))
        }
    };
    if let Some(id) = &input.session_id {
        if id.is_empty() || id.len() > 256 || !id.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!(
                "invalid arguments: `session_id` `{}` is not a session id (create_session \
                 returns one)",
                id.escape_default()
            ));
        }
    }
    let too_big = |field: &str, len: usize, max: usize| {
        format!(
            "invalid arguments: `{field}` is {len} bytes; the limit is {} MiB",
            max >> 20
        )
    };
    if input.code.len() > MAX_CODE_BYTES {
        return Err(too_big("code", input.code.len(), MAX_CODE_BYTES));
    }
    if let Some(stdin) = input.stdin.as_ref().filter(|s| s.len() > MAX_STDIN_BYTES) {
        return Err(too_big("stdin", stdin.len(), MAX_STDIN_BYTES));
    }
    let timeout = match input.timeout_seconds {
        None => None,
        Some(secs) if secs > 0.0 && secs.is_finite() => {
            Some(Duration::from_secs_f64(secs.min(max_timeout.as_secs_f64())))
        }
        Some(secs) => {
            return Err(format!(
                "invalid arguments: timeout_seconds must be a number of seconds above 0, \
                 not {secs}; {}",
                usage()
            ))
        }
    };
    let files = input.files.unwrap_or_default();
    if files.len() > MAX_INPUT_FILES {
        return Err(FileError::TooMany { count: files.len() }.to_string());
    }
    let files = files
        .into_iter()
        .map(|f| {
            let bytes = files::decode(&f.path, f.content, f.encoding.as_deref())?;
            Ok((f.path, bytes))
        })
        .collect::<Result<Vec<_>, FileError>>()
        .map_err(|e| e.to_string())?;
    Ok(CheckedInput {
        runtime,
        code: input.code,
        stdin: input.stdin,
        timeout,
        files,
        session_id: input.session_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert!(check(json!({"code": "1", "runtime": "python", "timeout_seconds": 0})).is_err());
    }
}
