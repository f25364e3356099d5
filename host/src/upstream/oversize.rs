//! An upstream answer past `--max-tool-result-bytes` fails the one call that asked for
//! it, and nothing else: its bytes are dropped as they stream, the connection stays up,
//! and the call gets a JSON-RPC error that says why ([`over_cap_error`]), which rmcp
//! hands to that call as `ServiceError::McpError` and [`is_over_cap`] recognises.
//!
//! Over stdio a message is one line: [`OversizeLines`] passes lines within the cap on
//! whole, drops a longer one while reading it (noting its top-level `id` with
//! [`IdScanner`]), and puts the error line in its place. Over HTTP the limits are rmcp's
//! own; `http_client.rs` turns what they refuse into the same error.

use std::pin::Pin;
use std::task::{Context, Poll};

use rmcp::model::{ErrorCode, ErrorData};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, ReadBuf};

/// The JSON-RPC error code of an answer runbox dropped for its size (in the range the
/// JSON-RPC spec leaves to implementations).
pub const OVER_CAP_CODE: ErrorCode = ErrorCode(-32099);
/// The key of `data` that marks the error as runbox's own, with the cap as its value.
const OVER_CAP_MARK: &str = "runbox_answer_cap";

/// The error that takes the place of an answer larger than `cap` bytes.
pub fn over_cap_error(cap: usize) -> ErrorData {
    ErrorData::new(
        OVER_CAP_CODE,
        format!(
            "the answer is larger than the {cap} byte cap on a tool's answer (--max-tool-result-bytes)"
        ),
        Some(json!({ OVER_CAP_MARK: cap })),
    )
}

/// Whether `error` is one [`over_cap_error`] made (an upstream could send the same
/// thing, and would only fail its own call as too large).
pub fn is_over_cap(error: &ErrorData) -> bool {
    error.code == OVER_CAP_CODE
        && error
            .data
            .as_ref()
            .and_then(|d| d.get(OVER_CAP_MARK))
            .is_some_and(Value::is_u64)
}

/// The JSON-RPC error line for the response whose `id` was `raw_id` (its JSON text).
fn error_line(raw_id: &[u8], cap: usize) -> Vec<u8> {
    let id: Value = serde_json::from_slice(raw_id).unwrap_or(Value::Null);
    let message = json!({"jsonrpc": "2.0", "id": id, "error": over_cap_error(cap)});
    let mut line = serde_json::to_vec(&message).unwrap_or_default();
    line.push(b'\n');
    line
}

/// What a JSON text's top level holds, learnt a byte at a time without keeping the text:
/// the raw `id` value (a number or a string, at most [`MAX_ID_BYTES`]) and whether it has
/// a `method` (a request or notification, not a response).
#[derive(Default)]
pub struct IdScanner {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The top-level key being read, or the last one read.
    key: Vec<u8>,
    reading_key: bool,
    /// Between a top-level key and its value's end.
    in_value: bool,
    value: Vec<u8>,
    id: Option<Vec<u8>>,
    has_method: bool,
}

/// Longer ids are not kept (rmcp's own are numbers).
const MAX_ID_BYTES: usize = 256;

impl IdScanner {
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        let top_value = self.in_value && self.key == b"id";
        if self.in_string {
            if top_value && self.value.len() < MAX_ID_BYTES {
                self.value.push(b);
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.reading_key {
                    self.reading_key = false;
                }
            } else if self.reading_key && self.key.len() < 16 {
                self.key.push(b);
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && !self.in_value {
                    self.reading_key = true;
                    self.key.clear();
                } else if top_value && self.depth == 1 {
                    self.value.push(b);
                }
            }
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_value();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 && !self.in_value => {
                self.in_value = true;
                self.value.clear();
                if self.key == b"method" {
                    self.has_method = true;
                }
            }
            b',' if self.depth == 1 => self.end_value(),
            b if b.is_ascii_whitespace() => {}
            b => {
                if top_value && self.depth == 1 && self.value.len() < MAX_ID_BYTES {
                    self.value.push(b);
                }
            }
        }
    }

    fn end_value(&mut self) {
        if self.in_value && self.key == b"id" && !self.value.is_empty() {
            self.id = Some(std::mem::take(&mut self.value));
        }
        self.in_value = false;
    }

    /// The raw id of a response (a message with an `id` and no `method`).
    pub fn response_id(&self) -> Option<&[u8]> {
        if self.has_method {
            return None;
        }
        self.id.as_deref()
    }
}

/// A stdio server's output with every line past `cap` bytes replaced by [`error_line`]
/// for its id (or dropped, when it answers no call of runbox's): what is held is at most
/// one line of `cap` bytes.
pub struct OversizeLines<R> {
    inner: R,
    cap: usize,
    /// The current line, while it is within the cap.
    line: Vec<u8>,
    /// The current line passed the cap: what it tells of itself so far.
    dropping: Option<IdScanner>,
    /// Whole lines ready to be read, and how far they were read.
    ready: Vec<u8>,
    read: usize,
    /// The server's output ended.
    done: bool,
    /// Lines dropped so far (for the log).
    dropped: u64,
}

impl<R> OversizeLines<R> {
    pub fn new(inner: R, cap: usize) -> OversizeLines<R> {
        OversizeLines {
            inner,
            cap,
            line: Vec::new(),
            dropping: None,
            ready: Vec::new(),
            read: 0,
            done: false,
            dropped: 0,
        }
    }

    /// Takes in `bytes` the server wrote, moving whole lines to `ready`.
    fn take_in(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let end = bytes.iter().position(|&b| b == b'\n');
            let (part, rest) = match end {
                Some(i) => (&bytes[..i], &bytes[i + 1..]),
                None => (bytes, &[][..]),
            };
            if let Some(scanner) = &mut self.dropping {
                scanner.feed(part);
            } else if self.line.len() + part.len() > self.cap {
                let mut scanner = IdScanner::default();
                scanner.feed(&self.line);
                scanner.feed(part);
                self.line = Vec::new();
                self.dropping = Some(scanner);
            } else {
                self.line.extend_from_slice(part);
            }
            if end.is_some() {
                self.end_line();
            }
            bytes = rest;
        }
    }

    fn end_line(&mut self) {
        match self.dropping.take() {
            Some(scanner) => {
                self.dropped += 1;
                match scanner.response_id() {
                    Some(id) => {
                        tracing::warn!(cap = self.cap, "an upstream answer past the cap was dropped; its call fails, the connection stays");
                        let line = error_line(id, self.cap);
                        self.ready.extend_from_slice(&line);
                    }
                    None => tracing::warn!(
                        cap = self.cap,
                        "an upstream message past the cap (not an answer) was dropped"
                    ),
                }
            }
            None => {
                self.ready.append(&mut self.line);
                self.ready.push(b'\n');
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for OversizeLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.read < this.ready.len() {
                let n = (this.ready.len() - this.read).min(buf.remaining());
                buf.put_slice(&this.ready[this.read..this.read + n]);
                this.read += n;
                if this.read == this.ready.len() {
                    this.ready.clear();
                    this.read = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.done {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 16 << 10];
            let mut chunk_buf = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut chunk_buf) {
                Poll::Ready(Ok(())) => {
                    let filled = chunk_buf.filled();
                    if filled.is_empty() {
                        // The end: a last line without its newline is still a line.
                        this.done = true;
                        if !this.line.is_empty() || this.dropping.is_some() {
                            this.end_line();
                        }
                    } else {
                        this.take_in(filled);
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn scan(text: &str) -> IdScanner {
        let mut s = IdScanner::default();
        s.feed(text.as_bytes());
        s
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_is() {
        let id = |t: &str| scan(t).response_id().map(|b| b.to_vec());
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":5,"result":{"x":"y"}}"#),
            Some(b"5".to_vec())
        );
        assert_eq!(
            id(r#"{"result":{"id":9,"content":[{"id":"no"}]},"jsonrpc":"2.0","id":12}"#),
            Some(b"12".to_vec())
        );
        assert_eq!(
            id(r#"{ "id" : "a\"b" , "result": "}\"{" }"#),
            Some(br#""a\"b""#.to_vec())
        );
        assert_eq!(
            id(r#"{"method":"notifications/x","params":{"id":1}}"#),
            None
        );
        assert_eq!(
            id(r#"{"method":"sampling","id":3}"#),
            None,
            "a request, not an answer"
        );
        assert_eq!(id(r#"{"result":{}}"#), None);
    }

    async fn filtered(input: &[u8], cap: usize) -> String {
        let mut r = OversizeLines::new(input, cap);
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn a_line_past_the_cap_becomes_an_error_for_its_call_and_the_rest_goes_on() {
        let big = format!(
            r#"{{"result":{{"text":"{}"}},"jsonrpc":"2.0","id":7}}"#,
            "x".repeat(100)
        );
        let input = format!("{{\"id\":1,\"result\":{{}}}}\n{big}\n{{\"id\":2,\"result\":{{}}}}\n");
        let out = filtered(input.as_bytes(), 50).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(lines[0], r#"{"id":1,"result":{}}"#);
        assert_eq!(lines[2], r#"{"id":2,"result":{}}"#);
        let error: Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(error["id"], 7);
        let data: ErrorData = serde_json::from_value(error["error"].clone()).unwrap();
        assert!(is_over_cap(&data), "{error}");
        assert!(data.message.contains("50 byte cap"), "{error}");
    }

    #[tokio::test]
    async fn a_notification_past_the_cap_is_dropped_and_a_last_line_needs_no_newline() {
        let input = format!(
            "{{\"method\":\"notifications/message\",\"params\":{{\"data\":\"{}\"}}}}\n{{\"id\":3,\"result\":{{}}}}",
            "y".repeat(200)
        );
        assert_eq!(
            filtered(input.as_bytes(), 64).await,
            "{\"id\":3,\"result\":{}}\n"
        );
    }

    #[tokio::test]
    async fn what_is_held_stays_within_the_cap_whatever_the_line() {
        // 8 MiB in small pieces, one line: never held whole.
        let line = format!(r#"{{"id":1,"result":"{}"}}"#, "z".repeat(8 << 20));
        let mut r = OversizeLines::new(line.as_bytes(), 1024);
        let mut out = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = r.read(&mut chunk).await.unwrap();
            assert!(r.line.capacity() <= 64 << 10, "held {}", r.line.capacity());
            if n == 0 {
                break;
            }
            out.extend_from_slice(&chunk[..n]);
        }
        let error: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(error["id"], 1);
    }

    #[test]
    fn only_runboxs_own_error_is_over_cap() {
        assert!(is_over_cap(&over_cap_error(10)));
        assert!(!is_over_cap(&ErrorData::new(OVER_CAP_CODE, "x", None)));
        assert!(!is_over_cap(&ErrorData::internal_error("too large", None)));
    }
}
