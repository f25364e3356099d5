//! The tools' arguments, checked field by field: what a tool error names when they are
//! wrong, in words a user (or a model) understands ("must be a number, not a string"),
//! never a Rust type name.

use std::time::Duration;

use rmcp::model::JsonObject;
use serde_json::Value;

use crate::service::{FileError, MAX_INPUT_FILES};

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
    /// The `timeout_seconds` asked for, when it was above the maximum and capped.
    pub timeout_capped_from: Option<f64>,
    /// Decoded, not yet checked against the runtime's own files (the run does that).
    pub files: Vec<(String, Vec<u8>)>,
    pub session_id: Option<String>,
}

/// How a JSON value is called in a message: "a string", "a number", …
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One object's fields, taken one by one; `where_` says where the object is
/// (`""` for the arguments themselves, `files[2].` for an input file).
struct Fields {
    object: JsonObject,
    where_: String,
}

impl Fields {
    /// Refuses any field not in `allowed`.
    fn new(object: JsonObject, where_: String, allowed: &[&str]) -> Result<Fields, String> {
        if let Some(unknown) = object.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(format!(
                "unknown field `{where_}{}`; expected {}",
                unknown.escape_debug(),
                allowed
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(Fields { object, where_ })
    }

    /// The field's value; an explicit `null` counts as left out.
    fn take(&mut self, name: &str) -> Option<Value> {
        self.object.remove(name).filter(|v| !v.is_null())
    }

    fn wrong(&self, name: &str, expected: &str, got: &Value) -> String {
        format!(
            "`{}{name}` must be {expected}, not {}",
            self.where_,
            kind(got)
        )
    }

    fn missing(&self, name: &str, expected: &str) -> String {
        format!("missing field `{}{name}` ({expected})", self.where_)
    }

    fn string(&mut self, name: &str) -> Result<Option<String>, String> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong(name, "a string", &other)),
        }
    }

    fn required_string(&mut self, name: &str) -> Result<String, String> {
        self.string(name)?
            .ok_or_else(|| self.missing(name, "a string"))
    }

    fn number(&mut self, name: &str) -> Result<Option<f64>, String> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(other) => Err(self.wrong(name, "a number", &other)),
        }
    }

    fn array(&mut self, name: &str) -> Result<Option<Vec<Value>>, String> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => Err(self.wrong(name, "an array", &other)),
        }
    }
}

/// Checks `run_code`'s arguments against the loaded runtimes `names`; a timeout above
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
    let mut fields = Fields::new(
        arguments,
        String::new(),
        &[
            "runtime",
            "code",
            "stdin",
            "timeout_seconds",
            "files",
            "session_id",
        ],
    )
    .map_err(invalid)?;
    let runtime = fields.string("runtime").map_err(invalid)?;
    let code = fields.required_string("code").map_err(invalid)?;
    let stdin = fields.string("stdin").map_err(invalid)?;
    let timeout_seconds = fields.number("timeout_seconds").map_err(invalid)?;
    let files = fields.array("files").map_err(invalid)?;
    let session_id = fields.string("session_id").map_err(invalid)?;
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
    let files = files.unwrap_or_default();
    if files.len() > MAX_INPUT_FILES {
        return Err(FileError::TooMany { count: files.len() }.to_string());
    }
    let files = files
        .into_iter()
        .enumerate()
        .map(|(i, file)| input_file(i, file, &usage))
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

/// One entry of `files`, decoded; a malformed one is refused with `usage`.
fn input_file(
    index: usize,
    file: Value,
    usage: &dyn Fn() -> String,
) -> Result<(String, Vec<u8>), String> {
    let where_ = format!("files[{index}].");
    let object = match file {
        Value::Object(object) => object,
        other => {
            return Err(format!(
                "invalid arguments: `files[{index}]` must be an object \
                 {{\"path\", \"content\", \"encoding\"?}}, not {}; {}",
                kind(&other),
                usage()
            ))
        }
    };
    let invalid = |e: String| format!("invalid arguments: {e}; {}", usage());
    let mut fields =
        Fields::new(object, where_, &["path", "content", "encoding"]).map_err(invalid)?;
    let path = fields.required_string("path").map_err(invalid)?;
    let content = fields.required_string("content").map_err(invalid)?;
    let encoding = fields.string("encoding").map_err(invalid)?;
    let bytes = crate::service::wire::decode(&path, content, encoding.as_deref())
        .map_err(|e| e.to_string())?;
    Ok((path, bytes))
}

/// A session id as a client may send it: printable ASCII, not empty, at most 256 bytes.
fn check_session_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > 256 || !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!(
            "invalid arguments: `session_id` `{}` is not a session id (create_session \
             returns one)",
            id.escape_default()
        ));
    }
    Ok(())
}

/// `create_session`'s arguments: the runtime, one of `names`.
pub fn check_create_session(arguments: JsonObject, names: &[String]) -> Result<String, String> {
    let usage = format!(
        "create_session takes {{\"runtime\": one of {}}}",
        names.join(", ")
    );
    let invalid = |e: String| format!("invalid arguments: {e}; {usage}");
    let mut fields = Fields::new(arguments, String::new(), &["runtime"]).map_err(invalid)?;
    fields.required_string("runtime").map_err(invalid)
}

/// `close_session`'s arguments: the session id.
pub fn check_close_session(arguments: JsonObject) -> Result<String, String> {
    let invalid = |e: String| {
        format!("invalid arguments: {e}; close_session takes {{\"session_id\": string}}")
    };
    let mut fields = Fields::new(arguments, String::new(), &["session_id"]).map_err(invalid)?;
    let id = fields.required_string("session_id").map_err(invalid)?;
    check_session_id(&id)?;
    Ok(id)
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
    fn session_tools() {
        let names = ["python".to_string()];
        let args = |v: serde_json::Value| v.as_object().unwrap().clone();
        assert_eq!(
            check_create_session(args(json!({"runtime": "python"})), &names).unwrap(),
            "python"
        );
        let e = check_create_session(args(json!({})), &names).err().unwrap();
        assert!(
            e.contains("missing field `runtime`") && e.contains("python"),
            "{e}"
        );
        let e = check_close_session(args(json!({"session_id": 5})))
            .err()
            .unwrap();
        assert!(
            e.contains("`session_id` must be a string, not a number"),
            "{e}"
        );
    }
}
