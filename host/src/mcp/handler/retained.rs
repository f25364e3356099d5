//! What a result left out, kept for a while as MCP resources (docs/mcp.md, "Results sized
//! for a model").
//!
//! A `run_code` result shows a capped head and tail of each stream and inlines only small
//! files; the rest stays readable with `resources/read` for `--resource-ttl` (default 10
//! minutes) at `runbox://HANDLE/PATH`: HANDLE is 128 random bits (unguessable: knowing it
//! is the permission to read), PATH is `stdout`, `stderr`, `output` (both streams
//! interleaved) or `files/` and the file's path, every segment percent-encoded.
//!
//! Everything kept is held in memory and charged to its own budget
//! (`--retained-bytes`), which draws from the server's: a result whose output or file does
//! not fit is answered without a link for it, never with memory outside the budgets. At
//! most [`MAX_RETAINED_RESULTS`] results are kept (the oldest go first); each goes at its
//! TTL, checked by a thread of its own.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rmcp::model::ResourceContents;

use crate::service::has_control_characters;
use crate::service::wire::encode_base64;
use crate::service::CapturedOutput;
use crate::service::{Held, MemoryBudget, Reservation};
use crate::service::{OtherReplica, Replica};
use crate::sweeper;

/// The URI scheme of everything runbox keeps.
pub const SCHEME: &str = "runbox://";
/// Results kept at once, at most; past it the oldest go.
pub const MAX_RETAINED_RESULTS: usize = 4096;
/// How long what a result left out stays readable, by default.
pub const DEFAULT_RESOURCE_TTL: Duration = Duration::from_secs(600);
/// Bytes kept for all results together, by default.
pub const DEFAULT_RETAINED_BYTES: u64 = 256 << 20;

/// One thing kept: a run's whole output, or one output file.
#[derive(Clone)]
pub enum Item {
    /// Readable as `stdout`, `stderr` and `output`.
    Output(Arc<CapturedOutput>, Held),
    File {
        bytes: Bytes,
        mime_type: String,
        text: bool,
        held: Held,
    },
}

struct Entry {
    created: Instant,
    output: Option<Item>,
    files: HashMap<String, Item>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    /// Handles in the order they were kept (so the oldest go first).
    order: VecDeque<String>,
}

/// Why a `runbox://` URI could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("`{0}` is not a runbox resource: runbox's URIs are runbox://HANDLE/PATH, as results link them")]
    NotOurs(String),
    #[error(
        "`{uri}` is not (or no longer) kept: a result's left-out output and files stay \
         readable for {ttl_secs} s after the run; run the program again to get them"
    )]
    Gone { uri: String, ttl_secs: u64 },
    #[error("reading `{0}` needs more memory than the server has free now; try again shortly")]
    Busy(String),
    #[error(transparent)]
    OtherReplica(#[from] OtherReplica),
}

/// The results' kept outputs and files.
pub struct Retained {
    inner: Arc<Mutex<Inner>>,
    budget: MemoryBudget,
    ttl: Duration,
    /// Mints the handles, and tells another replica's handles apart.
    replica: Replica,
}

impl Retained {
    /// Keeps at most `bytes` for `ttl`, drawing from `server` (the server's budget).
    pub fn new(
        bytes: u64,
        ttl: Duration,
        server: Option<MemoryBudget>,
        replica: Replica,
    ) -> Retained {
        let inner: Arc<Mutex<Inner>> = Arc::default();
        start_sweeper(Arc::downgrade(&inner), ttl);
        Retained {
            inner,
            budget: MemoryBudget::with_parent(usize::try_from(bytes).unwrap_or(usize::MAX), server),
            ttl,
            replica,
        }
    }

    /// The budget whatever is kept is charged to.
    pub fn budget(&self) -> &MemoryBudget {
        &self.budget
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Takes `bytes` from the retention budget for something about to be kept.
    pub fn reserve(&self, bytes: usize) -> Option<Reservation> {
        self.budget.reserve(bytes)
    }

    /// A new handle: the replica's id and 128 random bits in hex.
    pub fn new_handle(&self) -> String {
        self.replica.mint()
    }

    /// Keeps `output` (if any) and `files` (by path) under `handle` until the TTL (counted
    /// from when the handle was first kept; more kept under it later joins it).
    pub fn keep(&self, handle: String, output: Option<Item>, files: Vec<(String, Item)>) {
        if output.is_none() && files.is_empty() {
            return;
        }
        let mut inner = lock(&self.inner);
        sweep(&mut inner, self.ttl);
        if let Some(entry) = inner.entries.get_mut(&handle) {
            entry.output = output.or(entry.output.take());
            entry.files.extend(files);
            return;
        }
        while inner.order.len() >= MAX_RETAINED_RESULTS {
            let Some(oldest) = inner.order.pop_front() else {
                break;
            };
            inner.entries.remove(&oldest);
        }
        inner.order.push_back(handle.clone());
        inner.entries.insert(
            handle,
            Entry {
                created: Instant::now(),
                output,
                files: files.into_iter().collect(),
            },
        );
    }

    /// `resources/read` of `uri`: its bytes as text (UTF-8 without control characters)
    /// or as a base64 blob, and the charge to the server's budget for the answer, which
    /// holds them again (as text or base64, then serialized): the caller holds it until
    /// the answer is sent.
    pub fn read(&self, uri: &str) -> Result<(ResourceContents, Held), ReadError> {
        let (handle, path) = parse_uri(uri).ok_or_else(|| ReadError::NotOurs(uri.into()))?;
        let gone = || match self.replica.elsewhere("resource", &handle) {
            Some(elsewhere) => ReadError::OtherReplica(OtherReplica {
                handle: crate::service::replica::shown(uri),
                ..elsewhere
            }),
            None => ReadError::Gone {
                uri: uri.to_string(),
                ttl_secs: self.ttl.as_secs(),
            },
        };
        let item = {
            let mut inner = lock(&self.inner);
            sweep(&mut inner, self.ttl);
            let entry = inner.entries.get(&handle).ok_or_else(gone)?;
            match path.strip_prefix("files/") {
                Some(file) => entry.files.get(file).cloned(),
                None if matches!(path.as_str(), "stdout" | "stderr" | "output") => {
                    entry.output.clone()
                }
                None => None,
            }
            .ok_or_else(gone)?
        };
        let (bytes, mime_type, text): (Bytes, String, bool) = match item {
            Item::Output(output, _) => {
                let bytes = match path.as_str() {
                    "stdout" => Bytes::copy_from_slice(&output.stdout),
                    "stderr" => Bytes::copy_from_slice(&output.stderr),
                    _ => Bytes::from(output.tty()),
                };
                (bytes, "text/plain".into(), true)
            }
            Item::File {
                bytes,
                mime_type,
                text,
                ..
            } => (bytes, mime_type, text),
        };
        // The answer holds the bytes again as text or base64 (4/3), then serialized.
        let answer = match self.budget.parent() {
            Some(server) => Held::new(
                server
                    .reserve(bytes.len().saturating_mul(3))
                    .ok_or_else(|| ReadError::Busy(uri.to_string()))?,
            ),
            None => Held::default(),
        };
        Ok((contents(uri.to_string(), &bytes, mime_type, text), answer))
    }
}

/// A resource's bytes as MCP contents: text when `text` says it may be and it is UTF-8
/// without control characters (besides tab, newline, carriage return), else a base64 blob.
pub fn contents(uri: String, bytes: &[u8], mime_type: String, text: bool) -> ResourceContents {
    match std::str::from_utf8(bytes) {
        Ok(s) if text && !has_control_characters(s) => ResourceContents::TextResourceContents {
            uri,
            mime_type: Some(mime_type),
            text: s.to_string(),
            meta: None,
        },
        _ => ResourceContents::BlobResourceContents {
            uri,
            mime_type: Some(mime_type),
            blob: encode_base64(bytes),
            meta: None,
        },
    }
}

/// The URI of `path` (`stdout`, `output`, `files/a b.csv`) under `handle`, every path
/// segment percent-encoded.
pub fn uri(handle: &str, path: &str) -> String {
    let encoded: Vec<String> = path.split('/').map(percent_encode).collect();
    format!("{SCHEME}{handle}/{}", encoded.join("/"))
}

/// The URI of output file `path` under `handle`.
pub fn file_uri(handle: &str, path: &str) -> String {
    uri(handle, &format!("files/{path}"))
}

/// `runbox://HANDLE/PATH` split into the handle and the decoded path.
pub fn parse_uri(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (handle, path) = rest.split_once('/')?;
    if handle.is_empty()
        || !handle
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
    {
        return None;
    }
    let segments: Option<Vec<String>> = path.split('/').map(percent_decode).collect();
    Some((handle.to_string(), segments?.join("/")))
}

/// What a segment keeps as is: RFC 3986's unreserved characters; every other byte is
/// `%XX`.
const ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn percent_encode(segment: &str) -> String {
    percent_encoding::utf8_percent_encode(segment, ESCAPED).to_string()
}

/// A percent-encoded segment decoded; `None` when it is malformed (a `%` without two hex
/// digits, which the crate would keep as it is), not UTF-8, or would hold a `/`.
fn percent_decode(segment: &str) -> Option<String> {
    let well_formed = segment.match_indices('%').all(|(i, _)| {
        segment
            .get(i + 1..i + 3)
            .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
    });
    if !well_formed {
        return None;
    }
    let decoded = percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .ok()?
        .into_owned();
    (!decoded.contains('/')).then_some(decoded)
}

fn lock(inner: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(|e| e.into_inner())
}

/// Drops every entry past its TTL (entries are in the order kept, so the expired ones
/// are at the front).
fn sweep(inner: &mut Inner, ttl: Duration) {
    while let Some(handle) = inner.order.front() {
        let expired = inner
            .entries
            .get(handle)
            .is_none_or(|e| e.created.elapsed() >= ttl);
        if !expired {
            break;
        }
        let handle = inner.order.pop_front().expect("a front entry");
        inner.entries.remove(&handle);
    }
}

/// Removes expired entries every few seconds, so their memory goes back at their TTL
/// even when nobody reads or runs; ends with the store.
fn start_sweeper(inner: Weak<Mutex<Inner>>, ttl: Duration) {
    let every = sweeper::quarter_of(ttl, Duration::from_millis(100), Duration::from_secs(5));
    sweeper::start(
        "runbox-retained",
        "retained results will stay until read or pushed out",
        every,
        inner,
        move |inner| sweep(&mut lock(inner), ttl),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_encode_every_segment() {
        assert_eq!(uri("ab12", "stdout"), "runbox://ab12/stdout");
        assert_eq!(
            file_uri("ab12", "dir/a b#frag?q=1.csv"),
            "runbox://ab12/files/dir/a%20b%23frag%3Fq%3D1.csv"
        );
        assert_eq!(
            file_uri("h", "%2e%2e/x\ny"),
            "runbox://h/files/%252e%252e/x%0Ay"
        );
        for path in [
            "files/dir/a b#frag?q=1.csv",
            "files/%2e%2e/x\ny",
            "files/é.txt",
            "stdout",
        ] {
            let (handle, back) = parse_uri(&uri("h1", path)).unwrap();
            assert_eq!((handle.as_str(), back.as_str()), ("h1", path));
        }
        assert!(parse_uri("file:///etc/passwd").is_none());
        assert!(parse_uri("runbox://h/files/a%2Fb").is_none());
        assert!(parse_uri("runbox://h/files/%zz").is_none());
        assert!(parse_uri("runbox://h/files/%+1").is_none());
        assert!(parse_uri("runbox://h/files/%4").is_none());
        assert!(parse_uri("runbox://h/files/%FF").is_none(), "not UTF-8");
        assert!(parse_uri("runbox://h h/x").is_none());
        // Only RFC 3986's unreserved characters stay as they are.
        assert_eq!(percent_encode("a b-._~é%/"), "a%20b-._~%C3%A9%25%2F");
        assert_eq!(percent_decode("a%20b-._~%C3%A9%25").unwrap(), "a b-._~é%");
    }

    fn file(bytes: &[u8], text: bool) -> Item {
        Item::File {
            bytes: Bytes::copy_from_slice(bytes),
            mime_type: if text {
                "text/plain"
            } else {
                "application/octet-stream"
            }
            .into(),
            text,
            held: Held::default(),
        }
    }

    #[test]
    fn kept_items_read_back_as_text_or_blob() {
        let kept = Retained::new(1 << 20, Duration::from_secs(60), None, Replica::default());
        let handle = kept.new_handle();
        assert_eq!(handle.len(), 32);
        let output = CapturedOutput {
            stdout: b"out\n".to_vec(),
            stderr: b"err\0\n".to_vec(),
            segments: vec![
                (crate::service::Channel::Stdout, 4),
                (crate::service::Channel::Stderr, 5),
            ],
            truncated: false,
        };
        kept.keep(
            handle.clone(),
            Some(Item::Output(Arc::new(output), Held::default())),
            vec![
                ("a b.txt".into(), file(b"hello", true)),
                ("nul.txt".into(), file(b"a\0b", true)),
                ("x.bin".into(), file(&[0xff, 0], false)),
            ],
        );
        let text = |read: (ResourceContents, Held)| match read.0 {
            ResourceContents::TextResourceContents { text, .. } => Some(text),
            _ => None,
        };
        assert_eq!(
            text(kept.read(&uri(&handle, "stdout")).unwrap()).unwrap(),
            "out\n"
        );
        // Control characters are never sent as JSON text.
        assert!(text(kept.read(&uri(&handle, "stderr")).unwrap()).is_none());
        assert!(text(kept.read(&uri(&handle, "output")).unwrap()).is_none());
        assert_eq!(
            text(kept.read(&file_uri(&handle, "a b.txt")).unwrap()).unwrap(),
            "hello"
        );
        assert!(text(kept.read(&file_uri(&handle, "nul.txt")).unwrap()).is_none());
        match kept.read(&file_uri(&handle, "x.bin")).unwrap().0 {
            ResourceContents::BlobResourceContents { blob, .. } => assert_eq!(blob, "/wA="),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            kept.read(&file_uri(&handle, "missing")),
            Err(ReadError::Gone { .. })
        ));
        assert!(matches!(
            kept.read(&uri(&kept.new_handle(), "stdout")),
            Err(ReadError::Gone { .. })
        ));
        assert!(matches!(
            kept.read("file:///etc/passwd"),
            Err(ReadError::NotOurs(_))
        ));
    }

    #[test]
    fn entries_go_at_their_ttl() {
        let kept = Retained::new(
            1 << 20,
            Duration::from_millis(200),
            None,
            Replica::default(),
        );
        let handle = kept.new_handle();
        kept.keep(handle.clone(), None, vec![("a".into(), file(b"x", true))]);
        assert!(kept.read(&file_uri(&handle, "a")).is_ok());
        std::thread::sleep(Duration::from_millis(600));
        assert_eq!(lock(&kept.inner).entries.len(), 0, "the sweeper removed it");
        assert!(kept.read(&file_uri(&handle, "a")).is_err());
    }
}
