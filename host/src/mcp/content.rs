//! A run's outcome as MCP content: its `structuredContent`, the readable text, and each
//! returned output file as an image or an embedded resource.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use super::schema::RunCodeOutput;
use crate::files::{encode_base64, OutputFile};
use crate::outcome::RunOutcome;

/// The `run_code` result for `outcome`, in `session_id`'s session (if any).
pub fn run_result(mut outcome: RunOutcome, session_id: Option<String>) -> CallToolResult {
    let files = std::mem::take(&mut outcome.files);
    let mut output = RunCodeOutput::from(outcome);
    output.files = files.iter().map(Into::into).collect();
    output.session_id = session_id;
    let mut content = vec![ContentBlock::text(output.to_text())];
    content.extend(files.into_iter().filter_map(file_content));
    structured(content, &output)
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

/// A returned output file as MCP content: an image, or an embedded resource with its text
/// or (for other bytes) base64; `None` for a file past the caps.
fn file_content(file: OutputFile) -> Option<ContentBlock> {
    let is_image = file.is_image();
    let is_text = file.is_text();
    let bytes = file.contents?;
    let uri = format!("file:///{}", file.path);
    if is_image {
        return Some(ContentBlock::image(encode_base64(&bytes), file.mime_type));
    }
    let resource = match String::from_utf8(bytes) {
        Ok(text) if is_text => ResourceContents::TextResourceContents {
            uri,
            mime_type: Some(file.mime_type),
            text,
            meta: None,
        },
        Ok(text) => ResourceContents::BlobResourceContents {
            uri,
            mime_type: Some(file.mime_type),
            blob: encode_base64(text.as_bytes()),
            meta: None,
        },
        Err(e) => ResourceContents::BlobResourceContents {
            uri,
            mime_type: Some(file.mime_type),
            blob: encode_base64(e.as_bytes()),
            meta: None,
        },
    };
    Some(ContentBlock::resource(resource))
}
