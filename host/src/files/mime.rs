//! What an output file is: its MIME type from its extension (or its bytes), and whether
//! a client can show it as text.

/// The MIME type of an output file, from its extension (`mime_guess`'s table); a file
/// without a known one is `text/plain` when it is UTF-8 and `application/octet-stream`
/// otherwise. A UTF-8 file whose extension names a type that is not text goes as
/// `text/plain` too: program sources and scripts (`.ts` is an MPEG transport stream in
/// the table, `.sh` and `.php` are `application/x-…`) stay readable text for clients.
pub fn mime_type(path: &str, contents: Option<&[u8]>) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    let utf8 = contents.is_some_and(|bytes| std::str::from_utf8(bytes).is_ok());
    match mime_guess::from_path(name).first_raw() {
        Some(known) if is_text_mime(known) || !utf8 => known.to_string(),
        _ if utf8 => "text/plain".into(),
        _ => "application/octet-stream".into(),
    }
}

/// Whether `text` holds a control character other than tab, newline and carriage return
/// (such text goes to clients as base64, never as escaped JSON text).
pub fn has_control_characters(text: &str) -> bool {
    text.chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
}

/// Whether a MIME type is text a client can show as it is.
pub fn is_text_mime(mime: &str) -> bool {
    mime.starts_with("text/")
        || matches!(
            mime,
            "application/json"
                | "application/xml"
                | "image/svg+xml"
                | "application/yaml"
                | "application/toml"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_come_from_the_extension_and_text_stays_text() {
        let binary: &[u8] = b"\x89PNG\r\n\x1a\n\xff";
        for (path, contents, mime) in [
            ("plot.PNG", Some(binary), "image/png"),
            ("a/b/photo.jpeg", None, "image/jpeg"),
            ("data.csv", Some("a,b\n".as_bytes()), "text/csv"),
            ("table.tsv", None, "text/tab-separated-values"),
            ("answer.json", Some("{}".as_bytes()), "application/json"),
            ("notes.md", Some("# hi".as_bytes()), "text/markdown"),
            ("page.html", None, "text/html"),
            ("report.txt", Some("hello".as_bytes()), "text/plain"),
            ("main.py", Some("print(1)".as_bytes()), "text/plain"),
            ("app.ts", Some("let x = 1".as_bytes()), "text/plain"),
            ("run.sh", Some("echo hi".as_bytes()), "text/plain"),
            ("out.bin", Some(binary), "application/octet-stream"),
            ("blob", Some(binary), "application/octet-stream"),
            ("README", Some("text".as_bytes()), "text/plain"),
            ("dir.d/noext", None, "application/octet-stream"),
            (
                "module.wasm",
                Some(&b"\0asm\x01\0\0\0\xff"[..]),
                "application/wasm",
            ),
            (
                "sheet.xlsx",
                Some(binary),
                "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            ),
        ] {
            assert_eq!(mime_type(path, contents), mime, "{path}");
        }
        for text in [
            "config.yaml",
            "config.toml",
            "data.xml",
            "icon.svg",
            "a.py",
            "a.js",
        ] {
            assert!(is_text_mime(&mime_type(text, Some(b"x"))), "{text}");
        }
    }
}
