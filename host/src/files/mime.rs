//! What an output file is: its MIME type from its extension (or its bytes), and whether
//! a client can show it as text.

/// The MIME type of an output file, from its extension; a file without a known one is
/// `text/plain` when it is UTF-8 and `application/octet-stream` otherwise. (Program
/// sources are `text/plain`: the host names no language.)
pub fn mime_type(path: &str, contents: Option<&[u8]>) -> String {
    let extension = path
        .rsplit('/')
        .next()
        .and_then(|name| name.rsplit_once('.'))
        .map(|(_, ext)| ext.to_ascii_lowercase());
    let known = match extension.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("svg") => "image/svg+xml",
        Some("bmp") => "image/bmp",
        Some("pdf") => "application/pdf",
        Some("zip") => "application/zip",
        Some("gz") => "application/gzip",
        Some("wasm") => "application/wasm",
        Some("json") => "application/json",
        Some("xml") => "application/xml",
        Some("csv") => "text/csv",
        Some("tsv") => "text/tab-separated-values",
        Some("txt" | "log" | "text") => "text/plain",
        Some("md") => "text/markdown",
        Some("html" | "htm") => "text/html",
        Some("css") => "text/css",
        Some("yaml" | "yml") => "application/yaml",
        Some("toml") => "application/toml",
        _ => "",
    };
    if !known.is_empty() {
        return known.to_string();
    }
    match contents {
        Some(bytes) if std::str::from_utf8(bytes).is_ok() => "text/plain".into(),
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
