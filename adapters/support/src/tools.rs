//! Code mode's tools (docs/tools.md), as the guests reach them: the generated list
//! `/tools/tools.json` and the host-mediated device `/tools/call`. One call opens the
//! device for reading and writing, writes one JSON request and reads one JSON answer to
//! the end of the file.
//!
//! The adapters' bindings (the JavaScript module `runbox:tools`, the shell's `tool`
//! command) parse what these functions return; here are only the files. Every function
//! takes the directory, `/tools` in the component ([`DIR`]), so that the native tests can
//! point them at a temporary one.

use std::path::Path;

use crate::device::Exchanged;

/// Where the host shows the tools to a run that has some.
pub const DIR: &str = "/tools";
/// The allowed tools of every server, with their schemas (in [`DIR`]).
pub const MANIFEST: &str = "tools.json";
/// The device (in [`DIR`]).
pub const DEVICE: &str = "call";
/// What a call says when the run has no device: the server has no tools config.
pub const NOT_CONFIGURED: &str =
    "no tools are configured on this server (runbox mcp --tools-config)";

/// The text of `tools.json` in `dir`; `None` when there is none (no tools configured).
pub fn manifest(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join(MANIFEST)).ok()
}

/// One call through the device in `dir`: `request` (one JSON request) in, the answer's
/// text out. It always answers: without the device, or when the exchange fails, with an
/// `unavailable` answer of its own.
pub fn call(dir: &Path, request: &[u8]) -> String {
    match crate::device::exchange(&dir.join(DEVICE), request) {
        Exchanged::Answer(answer) => String::from_utf8_lossy(&answer).into_owned(),
        Exchanged::Missing => error_answer("unavailable", NOT_CONFIGURED),
        Exchanged::Failed(why) => error_answer("unavailable", &why),
    }
}

/// A failed call's answer, as the host words one: `{"ok":false,"error":KIND,"message":…}`.
pub fn error_answer(kind: &str, message: &str) -> String {
    format!(
        r#"{{"ok":false,"error":{},"message":{}}}"#,
        json_string(kind),
        json_string(message)
    )
}

/// `text` as a JSON string literal.
pub fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("runbox-tools-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn without_the_device_a_call_is_unavailable() {
        let dir = temp_dir("missing");
        assert_eq!(manifest(&dir), None);
        assert_eq!(
            call(&dir, b"{}"),
            r#"{"ok":false,"error":"unavailable","message":"no tools are configured on this server (runbox mcp --tools-config)"}"#
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_call_writes_the_request_then_reads_to_the_end() {
        // A regular file stands in for the device: the request overwrites its start and
        // the answer is what follows.
        let dir = temp_dir("file");
        let request = br#"{"server":"s","tool":"t","arguments":{}}"#;
        let answer = r#"{"ok":true,"value":5}"#;
        let mut contents = vec![b' '; request.len()];
        contents.extend_from_slice(answer.as_bytes());
        std::fs::write(dir.join(DEVICE), &contents).unwrap();
        std::fs::write(dir.join(MANIFEST), "{}").unwrap();
        assert_eq!(call(&dir, request), answer);
        assert!(std::fs::read(dir.join(DEVICE))
            .unwrap()
            .starts_with(request));
        assert_eq!(manifest(&dir).as_deref(), Some("{}"));
        // Nothing after the request: no answer.
        std::fs::write(dir.join(DEVICE), "").unwrap();
        assert!(call(&dir, request).contains("gave no answer"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn error_answers_are_json() {
        assert_eq!(
            error_answer("limit", "a \"quote\"\\\n\u{1}"),
            r#"{"ok":false,"error":"limit","message":"a \"quote\"\\\n\u0001"}"#
        );
    }
}
