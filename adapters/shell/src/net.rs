//! The network as the shell's `curl` and `wget` reach it (docs/network.md): one HTTP
//! request through the host-mediated device `/net/fetch` (`pip`'s installs go through it
//! too, [`exchange`]). One request opens the device for reading and writing, writes one
//! JSON request and reads one JSON answer to the end of the file, like code mode's
//! `/tools/call`.
//!
//! Without a network policy `/net` is empty: every request fails with [`NO_NETWORK`].
//! The host makes the request (and checks it against the policy); here are only the
//! request's JSON, the answer's, and what the two commands share (URLs, base64, the
//! sandbox's files).

use std::path::{Path, PathBuf};

use bashkit::{BuiltinContext, FileSystem};
use runbox_adapter_support::device::{self, Exchanged};
use serde_json::{Map, Value};

/// The device, in the directory `/net`.
pub const DEVICE: &str = "fetch";

/// What a request says when the run has no device: runbox has no network policy.
pub const NO_NETWORK: &str = "no network: this sandbox has no network (runbox was started \
                              without a network policy, --net-config); pass data in with `files` \
                              (or stdin) instead of downloading it";

/// The kind of failure [`fetch`] gives without the device (not one of the host's kinds).
pub const NO_NETWORK_KIND: &str = "no_network";

/// Headers the host sets itself (docs/network.md); a command drops them from a request.
const HOST_HEADERS: [&str; 4] = ["host", "content-length", "transfer-encoding", "connection"];

/// One request for the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub follow_redirects: bool,
}

impl Request {
    /// The request's JSON text. A UTF-8 body goes as `body` (so the host finds a secret's
    /// placeholder in it as text), any other as `body_base64`.
    pub fn to_json(&self) -> String {
        let mut object = Map::new();
        object.insert("method".into(), Value::String(self.method.clone()));
        object.insert("url".into(), Value::String(self.url.clone()));
        let headers = self
            .headers
            .iter()
            .filter(|(name, _)| !HOST_HEADERS.contains(&name.to_ascii_lowercase().as_str()))
            .map(|(name, value)| {
                Value::Array(vec![
                    Value::String(name.clone()),
                    Value::String(value.clone()),
                ])
            })
            .collect();
        object.insert("headers".into(), Value::Array(headers));
        if let Some(body) = &self.body {
            match std::str::from_utf8(body) {
                Ok(text) => object.insert("body".into(), Value::String(text.into())),
                Err(_) => object.insert("body_base64".into(), Value::String(base64_encode(body))),
            };
        }
        object.insert(
            "follow_redirects".into(),
            Value::Bool(self.follow_redirects),
        );
        Value::Object(object).to_string()
    }
}

/// An answer: the server's, whatever its status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub reason: String,
    /// Where the answer came from (after the redirects the host followed).
    pub url: String,
    pub redirected: bool,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body was cut at the policy's `answer_bytes`.
    pub truncated: bool,
}

impl Response {
    /// The first header named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// `HTTP/1.1 200 OK` (the device does not say which HTTP version the server spoke).
    pub fn status_line(&self) -> String {
        let line = format!("HTTP/1.1 {} {}", self.status, self.reason);
        line.trim_end().to_string()
    }
}

/// A request that was not made or did not complete: the host's `error` kind (or
/// [`NO_NETWORK_KIND`]) and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: String,
    pub message: String,
}

impl Failure {
    pub fn new(kind: &str, message: impl Into<String>) -> Failure {
        Failure {
            kind: kind.into(),
            message: message.into(),
        }
    }
}

/// One request through the device in `dir` (`/net` in the component).
pub fn fetch(dir: &Path, request: &Request) -> Result<Response, Failure> {
    parse_answer(&exchange(dir, &request.to_json())?)
}

/// One exchange with the device in `dir`: the JSON `request` written, the answer's text
/// read to its end.
pub fn exchange(dir: &Path, request: &str) -> Result<String, Failure> {
    match device::exchange(&dir.join(DEVICE), request.as_bytes()) {
        Exchanged::Answer(answer) => Ok(String::from_utf8_lossy(&answer).into_owned()),
        Exchanged::Missing => Err(Failure::new(NO_NETWORK_KIND, NO_NETWORK)),
        Exchanged::Failed(why) => Err(Failure::new("unavailable", why)),
    }
}

/// A failure of the host's answer itself (`why` it is not one).
fn broken(why: &str) -> Failure {
    Failure::new("unavailable", format!("the host's answer {why}"))
}

/// The device's answer `text` as a JSON object with `ok: true`, or why there is none.
pub fn answer_object(text: &str) -> Result<Map<String, Value>, Failure> {
    let answer: Value =
        serde_json::from_str(text).map_err(|e| broken(&format!("is not JSON ({e})")))?;
    let Value::Object(answer) = answer else {
        return Err(broken("is not a JSON object"));
    };
    if answer.get("ok").and_then(Value::as_bool) != Some(true) {
        let field = |name: &str| answer.get(name).and_then(Value::as_str);
        let kind = field("error").unwrap_or("unavailable");
        let message = field("message")
            .map(str::to_string)
            .unwrap_or_else(|| format!("the request failed ({kind})"));
        return Err(Failure::new(kind, message));
    }
    Ok(answer)
}

/// The device's answer `text`: the server's answer, or why there is none.
pub fn parse_answer(text: &str) -> Result<Response, Failure> {
    let answer = answer_object(text)?;
    let text_field = |name: &str| answer.get(name).and_then(Value::as_str);
    let status = answer
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .ok_or_else(|| broken("has no status"))?;
    let headers = match answer.get("headers") {
        Some(Value::Array(pairs)) => pairs
            .iter()
            .filter_map(|pair| match pair.as_array()?.as_slice() {
                [Value::String(name), Value::String(value)] => Some((name.clone(), value.clone())),
                _ => None,
            })
            .collect(),
        Some(Value::Object(map)) => map
            .iter()
            .filter_map(|(name, value)| Some((name.clone(), value.as_str()?.to_string())))
            .collect(),
        _ => Vec::new(),
    };
    let body = match (text_field("body_base64"), text_field("body")) {
        (Some(encoded), _) => {
            base64_decode(encoded).ok_or_else(|| broken("has a body_base64 that is not base64"))?
        }
        (None, Some(text)) => text.as_bytes().to_vec(),
        (None, None) => Vec::new(),
    };
    Ok(Response {
        status,
        reason: text_field("reason").unwrap_or_default().to_string(),
        url: text_field("url").unwrap_or_default().to_string(),
        redirected: answer.get("redirected").and_then(Value::as_bool) == Some(true),
        headers,
        body,
        truncated: answer.get("truncated").and_then(Value::as_bool) == Some(true),
    })
}

/// The line on stderr for an answer from `url` cut at `bytes` bytes.
pub fn cut_notice(url: &str, bytes: usize) -> String {
    format!(
        "runbox: the answer from {url} was cut at {bytes} bytes (the network policy's answer cap)\n"
    )
}

pub use runbox_adapter_support::device::{
    decode_base64 as base64_decode, encode_base64 as base64_encode,
};

/// `url` with `http://` in front when it names no scheme (as curl and wget take
/// `example.com/x`), and without its `#fragment`.
pub fn normalize_url(url: &str) -> String {
    let url = url.split('#').next().unwrap_or_default();
    if url.contains("://") {
        url.to_string()
    } else {
        format!("http://{url}")
    }
}

/// The scheme of `url`, lowercase.
pub fn scheme(url: &str) -> String {
    url.split_once("://")
        .map_or("", |(scheme, _)| scheme)
        .to_ascii_lowercase()
}

/// The pieces of `url`: `(scheme://, authority, path, ?query)`, the path `/` when empty.
fn pieces(url: &str) -> (&str, &str, &str, &str) {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let rest = rest.split('#').next().unwrap_or_default();
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, rest) = rest.split_at(authority_end);
    let query_start = rest.find('?').unwrap_or(rest.len());
    let (path, query) = rest.split_at(query_start);
    (scheme, authority, path, query)
}

/// The host (and port) of `url`, without user information.
pub fn host(url: &str) -> &str {
    let authority = pieces(url).1;
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
}

/// `/path?query` of `url`, as a request line names it.
pub fn target(url: &str) -> String {
    let (_, _, path, query) = pieces(url);
    let path = if path.is_empty() { "/" } else { path };
    format!("{path}{query}")
}

/// `url`'s user information (`user:password@`), decoded, and `url` without it.
pub fn split_credentials(url: &str) -> (Option<String>, String) {
    let (scheme, authority, path, query) = pieces(url);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => (
            Some(percent_decode(userinfo)),
            format!("{scheme}{host}{path}{query}"),
        ),
        None => (None, url.to_string()),
    }
}

/// The last segment of `url`'s path (without the query): `None` when it is empty.
pub fn remote_name(url: &str) -> Option<&str> {
    let path = pieces(url).2;
    path.rsplit('/').next().filter(|name| !name.is_empty())
}

/// `url` with `data` added to its query.
pub fn with_query(url: &str, data: &str) -> String {
    let (url, fragment) = match url.find('#') {
        Some(i) => url.split_at(i),
        None => (url, ""),
    };
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{data}{fragment}")
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((hi * 16 + lo) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `text` percent-encoded as curl's `--data-urlencode` does: all but letters, digits and
/// `-._~`.
pub fn percent_encode(text: &[u8]) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The value of an `Authorization` header for basic authentication as `user:password`
/// (`user` alone: an empty password).
pub fn basic_auth(credentials: &str) -> String {
    let credentials = if credentials.contains(':') {
        credentials.to_string()
    } else {
        format!("{credentials}:")
    };
    format!("Basic {}", base64_encode(credentials.as_bytes()))
}

/// The status line and headers of `response`, each line ending in `eol`, then an empty
/// line.
pub fn header_block(response: &Response, eol: &str) -> String {
    let mut block = response.status_line();
    block.push_str(eol);
    for (name, value) in &response.headers {
        block.push_str(&format!("{name}: {value}{eol}"));
    }
    block.push_str(eol);
    block
}

/// Where a file name of a command points: the standard streams, `/dev/null`, or a file
/// of the shell's (resolved against its working directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Stdout,
    Stderr,
    Null,
    File(PathBuf),
}

/// The target `name` names (`-` is the standard output when `dash_is_stdout`).
pub fn target_of(cwd: &Path, name: &str, dash_is_stdout: bool) -> Target {
    match name {
        "-" if dash_is_stdout => Target::Stdout,
        "/dev/stdout" | "/dev/fd/1" => Target::Stdout,
        "/dev/stderr" | "/dev/fd/2" => Target::Stderr,
        "/dev/null" => Target::Null,
        _ => Target::File(resolve(cwd, name)),
    }
}

/// The shell's path of the file `name`, relative to `cwd`.
pub fn resolve(cwd: &Path, name: &str) -> PathBuf {
    bashkit::normalize_path(&bashkit::vfs_join(cwd, name))
}

/// The contents of `name` (`-` or `/dev/stdin`: the standard input).
pub async fn read_input(ctx: &BuiltinContext<'_>, name: &str) -> Result<Vec<u8>, String> {
    match name {
        "-" | "/dev/stdin" | "/dev/fd/0" => {
            Ok(ctx.stdin.map(|s| s.as_bytes().to_vec()).unwrap_or_default())
        }
        "/dev/null" => Ok(Vec::new()),
        _ => ctx
            .fs
            .read_file(&resolve(ctx.cwd, name))
            .await
            .map_err(fs_error),
    }
}

/// Writes (or with `append`, appends) `bytes` to the file `path` of the shell's, making
/// its directory first when `make_dirs`.
pub async fn write_file(
    fs: &dyn FileSystem,
    path: &Path,
    bytes: &[u8],
    append: bool,
    make_dirs: bool,
) -> Result<(), String> {
    if make_dirs {
        if let Some(parent) = path.parent() {
            fs.mkdir(parent, true).await.map_err(fs_error)?;
        }
    }
    let written = if append {
        fs.append_file(path, bytes).await
    } else {
        fs.write_file(path, bytes).await
    };
    written.map_err(fs_error)
}

/// Whether the shell has a file (or directory) at `path`.
pub async fn exists(fs: &dyn FileSystem, path: &Path) -> bool {
    fs.exists(path).await.unwrap_or(false)
}

/// A filesystem error as a command words it: `No such file or directory`.
pub fn fs_error(error: bashkit::Error) -> String {
    match error {
        bashkit::Error::Io(e) => {
            let text = e.to_string();
            match text.find(" (os error") {
                Some(i) => text[..i].to_string(),
                None => text,
            }
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for (bytes, text) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"user:pass", "dXNlcjpwYXNz"),
            (&[0, 255, 128, 7][..], "AP+ABw=="),
        ] {
            assert_eq!(base64_encode(bytes), text);
            assert_eq!(base64_decode(text).as_deref(), Some(bytes));
        }
        assert_eq!(base64_decode("Zm9v\nYg").as_deref(), Some(&b"foob"[..]));
        assert_eq!(
            base64_decode("AP-ABw").as_deref(),
            Some(&[0, 255, 128, 7][..])
        );
        assert_eq!(base64_decode("Zm9v!"), None);
        assert_eq!(base64_decode("Zg==Zg"), None);
    }

    #[test]
    fn urls_come_apart() {
        let url = "https://u:p%40ss@api.example.com:8443/v1/items.json?page=2#top";
        assert_eq!(host(url), "api.example.com:8443");
        assert_eq!(target(url), "/v1/items.json?page=2");
        assert_eq!(remote_name(url), Some("items.json"));
        assert_eq!(
            split_credentials(url),
            (
                Some("u:p@ss".into()),
                "https://api.example.com:8443/v1/items.json?page=2".into()
            )
        );
        assert_eq!(target("http://h"), "/");
        assert_eq!(target("http://h?q=1"), "/?q=1");
        assert_eq!(remote_name("http://h/"), None);
        assert_eq!(remote_name("http://h"), None);
        assert_eq!(remote_name("http://h/a/b?x=/y"), Some("b"));
        assert_eq!(normalize_url("example.com/x#y"), "http://example.com/x");
        assert_eq!(scheme("HTTPS://x"), "https");
        assert_eq!(with_query("http://h/p", "a=1"), "http://h/p?a=1");
        assert_eq!(
            with_query("http://h/p?b=2#f", "a=1"),
            "http://h/p?b=2&a=1#f"
        );
        assert_eq!(percent_encode("a b&c=é~".as_bytes()), "a%20b%26c%3D%C3%A9~");
        assert_eq!(basic_auth("user"), "Basic dXNlcjo=");
    }

    #[test]
    fn a_request_is_json_with_its_body_as_text_or_base64() {
        let mut request = Request {
            method: "POST".into(),
            url: "https://h/x".into(),
            headers: vec![
                ("Accept".into(), "*/*".into()),
                ("Connection".into(), "close".into()),
            ],
            body: Some(b"a=1".to_vec()),
            follow_redirects: false,
        };
        let json: Value = serde_json::from_str(&request.to_json()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"method": "POST", "url": "https://h/x",
                "headers": [["Accept", "*/*"]], "body": "a=1", "follow_redirects": false})
        );
        request.body = Some(vec![0xff, 0]);
        let json: Value = serde_json::from_str(&request.to_json()).unwrap();
        assert_eq!(json["body_base64"], "/wA=");
        assert!(json.get("body").is_none());
    }

    #[test]
    fn answers_parse() {
        let answer = parse_answer(
            r#" {"ok": true, "status": 404, "reason": "Not Found", "url": "https://h/y",
                 "redirected": true, "headers": [["content-type", "text/plain"], ["x", "1"]],
                 "body_base64": "aGk=", "truncated": true}"#,
        )
        .unwrap();
        assert_eq!(
            answer,
            Response {
                status: 404,
                reason: "Not Found".into(),
                url: "https://h/y".into(),
                redirected: true,
                headers: vec![
                    ("content-type".into(), "text/plain".into()),
                    ("x".into(), "1".into())
                ],
                body: b"hi".to_vec(),
                truncated: true,
            }
        );
        assert_eq!(answer.header("Content-Type"), Some("text/plain"));
        assert_eq!(answer.status_line(), "HTTP/1.1 404 Not Found");
        assert_eq!(
            parse_answer(r#"{"ok":false,"error":"timeout","message":"too slow"}"#),
            Err(Failure::new("timeout", "too slow"))
        );
        assert_eq!(parse_answer("nope").unwrap_err().kind, "unavailable");
        assert_eq!(
            parse_answer(r#"{"ok":true,"status":200,"body_base64":"!"}"#)
                .unwrap_err()
                .kind,
            "unavailable"
        );
    }

    #[test]
    fn without_the_device_there_is_no_network() {
        let dir = tempfile::tempdir().unwrap();
        let request = Request {
            method: "GET".into(),
            url: "http://h/".into(),
            headers: Vec::new(),
            body: None,
            follow_redirects: true,
        };
        assert_eq!(
            fetch(dir.path(), &request),
            Err(Failure::new(NO_NETWORK_KIND, NO_NETWORK))
        );
    }
}
