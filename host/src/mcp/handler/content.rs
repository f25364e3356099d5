//! A run's outcome as the result a model reads (docs/mcp.md, "Results sized for a
//! model"): `structuredContent`, the readable text, and the output files as images,
//! embedded resources or links.
//!
//! A result is rendered once and stays under `--max-result-bytes` whatever the program
//! printed or wrote: each stream shows its head and tail within `--shown-output-bytes`
//! (`shown.rs`), small files are inlined, and what is left out is kept for a while and
//! linked (`retained.rs`). If the first rendering is still too large (many files, long
//! names), inlined files become links, largest first, then files past what fits are
//! counted instead of listed, then less of each stream is shown.

use std::sync::Arc;

use bytes::Bytes;
use rmcp::model::{CallToolResult, ContentBlock, Resource};

use crate::mcp::handler::retained::{self, Item, Retained};
use crate::mcp::handler::shown::{shown, MIN_SHOWN_BYTES};
use crate::mcp::handler::tools::run_code::{FileOutput, RunCodeOutput};
use crate::service::wire::encode_base64;
use crate::service::CapturedOutput;
use crate::service::Held;
use crate::service::OutputFile;
use crate::service::RunOutcome;

/// An image is inlined up to this size (bytes before base64).
pub const INLINE_IMAGE_BYTES: u64 = 1 << 20;
/// Any other file is inlined up to this size.
pub const INLINE_FILE_BYTES: u64 = 32 << 10;
/// Files other than images are inlined up to this much in total.
pub const INLINE_TOTAL_BYTES: u64 = 512 << 10;
/// The largest serialized result, by default.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1 << 20;
/// The smallest `--max-result-bytes` accepted: room for the text and a few files.
pub const MIN_MAX_RESULT_BYTES: usize = 64 << 10;

/// How large a result may be.
#[derive(Debug, Clone, Copy)]
pub struct ResultLimits {
    /// What each stream shows at most (`--shown-output-bytes`).
    pub shown_bytes: usize,
    /// The serialized result at most (`--max-result-bytes`).
    pub max_result_bytes: usize,
}

impl Default for ResultLimits {
    fn default() -> Self {
        ResultLimits {
            shown_bytes: crate::mcp::handler::shown::DEFAULT_SHOWN_BYTES,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
        }
    }
}

/// One output file as the result shows it.
struct ShownFile {
    listing: FileOutput,
    /// The result's handle.
    handle: String,
    /// The bytes, when they were read.
    bytes: Option<Bytes>,
    /// Whether the bytes go inline (else the file is linked, when it has a uri).
    inline: bool,
    is_image: bool,
    is_text: bool,
}

/// What one rendering is made of; the fit pass changes it and renders again.
struct Draft {
    output: Arc<CapturedOutput>,
    shown_bytes: usize,
    base: RunCodeOutput,
    files: Vec<ShownFile>,
    /// Files listed (the rest are counted in the text).
    listed: usize,
}

/// The `run_code` result for `outcome`, in `session_id`'s session (if any); what it
/// leaves out is kept in `kept`.
pub fn run_result(
    outcome: RunOutcome,
    session_id: Option<String>,
    limits: &ResultLimits,
    kept: &Retained,
) -> CallToolResult {
    let handle = kept.new_handle();
    let RunOutcome {
        status,
        exit_code,
        error,
        truncated,
        duration,
        output,
        files,
        notice,
        ..
    } = outcome;
    let output = Arc::new(output);
    let mut kept_files = Vec::new();
    let mut inline_total = 0u64;
    let files: Vec<ShownFile> = files
        .into_iter()
        .map(|file| shown_file(file, &handle, &mut inline_total, &mut kept_files))
        .collect();
    let mut base = RunCodeOutput {
        status: status.into(),
        exit_code,
        tty: None,
        stdout: String::new(),
        stderr: String::new(),
        error,
        truncated,
        // Microsecond precision is plenty, and keeps the number short.
        duration_ms: (duration.as_secs_f64() * 1e6).round() / 1e3,
        files: Vec::new(),
        session_id,
        output_uri: None,
        notice,
    };
    // Kept whenever a stream is not shown whole (or might not be, after the fit pass).
    let long = shows_less(&output, limits.shown_bytes);
    let kept_output = if long {
        kept.reserve(output.len()).map(|reservation| {
            base.output_uri = Some(retained::uri(&handle, "output"));
            Item::Output(output.clone(), Held::new(reservation))
        })
    } else {
        None
    };
    kept.keep(handle.clone(), kept_output, kept_files);
    let mut draft = Draft {
        output,
        shown_bytes: limits.shown_bytes,
        base,
        listed: files.len(),
        files,
    };
    fit(&mut draft, limits.max_result_bytes, kept, &handle)
}

/// Whether the result shows less than all of a stream under `shown_bytes`.
fn shows_less(output: &CapturedOutput, shown_bytes: usize) -> bool {
    [&output.stdout, &output.stderr]
        .iter()
        .any(|s| shown(s, shown_bytes).left_out > 0)
}

/// Renders `draft`, then makes it smaller until it serializes within `max` bytes. Each
/// step takes out at least half of what is left to take out of its kind (inlined files
/// in one step, then the listing and the shown output by halves), so a result of n files
/// renders O(log n) times, not n times.
fn fit(draft: &mut Draft, max: usize, kept: &Retained, handle: &str) -> CallToolResult {
    loop {
        let result = render(draft);
        let len = serialized_len(&result);
        if len <= max {
            return result;
        }
        if link_largest_inlined(draft, len - max) {
            continue;
        }
        if draft.listed > 0 {
            draft.listed /= 2;
            continue;
        }
        if draft.shown_bytes > MIN_SHOWN_BYTES {
            draft.shown_bytes = (draft.shown_bytes / 2).max(MIN_SHOWN_BYTES);
            if draft.base.output_uri.is_none() && shows_less(&draft.output, draft.shown_bytes) {
                // Now something is left out: keep the whole output after all, if it fits.
                if let Some(reservation) = kept.reserve(draft.output.len()) {
                    let item = Item::Output(draft.output.clone(), Held::new(reservation));
                    kept.keep(handle.to_string(), Some(item), Vec::new());
                    draft.base.output_uri = Some(retained::uri(handle, "output"));
                }
            }
            continue;
        }
        // Nothing left to take out: the text alone is all there is.
        return result;
    }
}

/// Turns inlined files into links, largest first, until what that saves (each file's
/// block measured once) covers `excess`; false when no file was inlined.
fn link_largest_inlined(draft: &mut Draft, excess: usize) -> bool {
    let mut inlined: Vec<&mut ShownFile> = draft.files.iter_mut().filter(|f| f.inline).collect();
    if inlined.is_empty() {
        return false;
    }
    inlined.sort_by_key(|f| std::cmp::Reverse(f.listing.size));
    let mut saved = 0usize;
    for file in inlined {
        if saved >= excess {
            break;
        }
        let before = file_block(file).map_or(0, |b| serialized_len(&b));
        file.inline = false;
        file.listing.returned = false;
        let after = file_block(file).map_or(0, |b| serialized_len(&b));
        saved += before.saturating_sub(after);
    }
    true
}

/// One rendering of `draft`.
fn render(draft: &Draft) -> CallToolResult {
    let stdout = shown(&draft.output.stdout, draft.shown_bytes);
    let stderr = shown(&draft.output.stderr, draft.shown_bytes);
    let both = !draft.output.stdout.is_empty() && !draft.output.stderr.is_empty();
    let mut output = draft.base.clone();
    output.tty = both.then(|| shown(&draft.output.tty(), draft.shown_bytes).text);
    output.stdout = stdout.text;
    output.stderr = stderr.text;
    let listed = &draft.files[..draft.listed.min(draft.files.len())];
    output.files = listed.iter().map(|f| f.listing.clone()).collect();
    let mut text = output.to_text();
    let unlisted = draft.files.len() - listed.len();
    if unlisted > 0 {
        text.push_str(&format!(
            "… and {unlisted} more files, not listed: the result would be too large\n"
        ));
    }
    let mut content = vec![ContentBlock::text(text)];
    if let Some(uri) = &output.output_uri {
        let size = draft.output.len() as u64;
        content.push(ContentBlock::resource_link(
            Resource::new(uri.clone(), "output")
                .with_title("The whole output")
                .with_description(
                    "stdout and stderr as written; stdout and stderr alone are at the same \
                     URI with `stdout` or `stderr` in place of `output`",
                )
                .with_mime_type("text/plain")
                .with_size(size),
        ));
    }
    content.extend(listed.iter().filter_map(file_block));
    let mut result = CallToolResult::success(content);
    result.structured_content = Some(serde_json::to_value(&output).expect("outputs serialize"));
    result
}

/// Decides how `file` is shown: its uri when it can be kept, and whether it goes inline.
fn shown_file(
    file: OutputFile,
    handle: &str,
    inline_total: &mut u64,
    kept_files: &mut Vec<(String, Item)>,
) -> ShownFile {
    let is_image = file.is_image();
    let is_text = file.is_text();
    let bytes = file.contents.map(Bytes::from);
    let uri = match (&bytes, file.held.is_held()) {
        (Some(bytes), true) => {
            kept_files.push((
                file.path.clone(),
                Item::File {
                    bytes: bytes.clone(),
                    mime_type: file.mime_type.clone(),
                    text: is_text,
                    held: file.held,
                },
            ));
            Some(retained::file_uri(handle, &file.path))
        }
        _ => None,
    };
    let inline = match &bytes {
        Some(_) if is_image => file.size <= INLINE_IMAGE_BYTES,
        Some(_) if file.size <= INLINE_FILE_BYTES => {
            let fits = inline_total.saturating_add(file.size) <= INLINE_TOTAL_BYTES;
            if fits {
                *inline_total += file.size;
            }
            fits
        }
        _ => false,
    };
    ShownFile {
        handle: handle.to_string(),
        listing: FileOutput {
            path: file.path,
            size: file.size,
            mime_type: file.mime_type,
            returned: inline,
            uri,
        },
        bytes,
        inline,
        is_image,
        is_text,
    }
}

/// A file's content block: inline (an image, or an embedded resource with its text or a
/// base64 blob), or a link to where it is kept; `None` when it is neither.
fn file_block(file: &ShownFile) -> Option<ContentBlock> {
    let listing = &file.listing;
    let uri = listing.uri.clone();
    match (&file.bytes, file.inline) {
        (Some(bytes), true) if file.is_image => Some(ContentBlock::image(
            encode_base64(bytes),
            listing.mime_type.clone(),
        )),
        (Some(bytes), true) => {
            // Not kept (the retention budget was full): named where it would have been.
            let uri = uri.unwrap_or_else(|| retained::file_uri(&file.handle, &listing.path));
            Some(ContentBlock::resource(retained::contents(
                uri,
                bytes,
                listing.mime_type.clone(),
                file.is_text,
            )))
        }
        _ => uri.map(|uri| {
            ContentBlock::resource_link(
                Resource::new(uri, listing.path.clone())
                    .with_mime_type(listing.mime_type.clone())
                    .with_size(listing.size),
            )
        }),
    }
}

/// The bytes `value` takes serialized, counted without keeping them.
pub fn serialized_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).expect("results serialize");
    count.0
}

/// A successful result with `value` as its `structuredContent`.
pub fn structured(content: Vec<ContentBlock>, value: &impl serde::Serialize) -> CallToolResult {
    let mut result = CallToolResult::success(content);
    result.structured_content = Some(serde_json::to_value(value).expect("outputs serialize"));
    result
}

/// A tool error with `message`.
pub fn tool_error(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}
