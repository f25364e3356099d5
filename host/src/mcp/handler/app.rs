//! The result app: an MCP App (the `io.modelcontextprotocol/ui` extension, MCP Apps
//! 2026-01-26) that shows a `run_code` result to a person: the code, highlighted; the
//! status, exit code and duration; stdout and stderr with their colours; plots inline;
//! CSV and JSON tables sortable; other files as downloads; and "run again" / "edit and
//! run" through the host's `tools/call`.
//!
//! It is one self-contained HTML page (`host/app/run.html`, inline CSS and JS, no network),
//! compiled into the binary and served as [`URI`]. Only a client that declares the
//! extension in its capabilities (with [`MIME_TYPE`] among its `mimeTypes`) is told of it:
//! `run_code` then carries `_meta.ui.resourceUri`, `resources/list` lists it and
//! `resources/read` returns it. Every other client sees exactly what it saw before (no
//! `_meta`, no resource), and results are the same for both: the app takes the code from
//! the tool input the host sends it and the files from the result's own content blocks.

use rmcp::model::{ClientCapabilities, MetaObject, Resource, ResourceContents};
use serde_json::{json, Value};

/// The extension's identifier.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The app's resource.
pub const URI: &str = "ui://runbox/run";

/// The MIME type of an MCP App's HTML.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The app itself.
pub const HTML: &str = include_str!("../../../app/run.html");

/// Whether a client declared the extension with HTML apps among its `mimeTypes`
/// (`capabilities.extensions["io.modelcontextprotocol/ui"].mimeTypes`).
pub fn wanted_by(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|c| c.extensions.as_ref())
        .and_then(|e| e.get(EXTENSION))
        .and_then(|settings| settings.get("mimeTypes"))
        .and_then(Value::as_array)
        .is_some_and(|types| types.iter().any(|t| t.as_str() == Some(MIME_TYPE)))
}

/// `run_code`'s `_meta` for such a client: `{"ui": {"resourceUri": URI}}`.
pub fn tool_meta() -> MetaObject {
    meta(json!({"ui": {"resourceUri": URI}}))
}

/// The resource's `_meta.ui`: no origins at all (the page loads nothing), and a border.
fn resource_meta() -> MetaObject {
    meta(json!({"ui": {
        "csp": {"connectDomains": [], "resourceDomains": []},
        "prefersBorder": true
    }}))
}

fn meta(value: Value) -> MetaObject {
    match value {
        Value::Object(object) => MetaObject(object),
        _ => unreachable!("an object"),
    }
}

/// The app as `resources/list` lists it.
pub fn resource() -> Resource {
    Resource::new(URI, "runbox-run")
        .with_title("runbox: a run")
        .with_description(
            "Shows a run_code result: code, status, output, plots, tables and files; \
             runs it again.",
        )
        .with_mime_type(MIME_TYPE)
        .with_size(HTML.len() as u64)
        .with_meta(resource_meta())
}

/// The app as `resources/read` returns it.
pub fn contents() -> ResourceContents {
    ResourceContents::text(HTML, URI)
        .with_mime_type(MIME_TYPE)
        .with_meta(resource_meta())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(extensions: Value) -> ClientCapabilities {
        serde_json::from_value(json!({ "extensions": extensions })).unwrap()
    }

    #[test]
    fn only_a_client_that_declares_html_apps_gets_the_app() {
        assert!(!wanted_by(None));
        assert!(!wanted_by(Some(&ClientCapabilities::default())));
        assert!(!wanted_by(Some(&with(json!({EXTENSION: {}})))));
        assert!(!wanted_by(Some(&with(
            json!({EXTENSION: {"mimeTypes": ["text/html"]}})
        )),));
        assert!(!wanted_by(Some(&with(
            json!({"io.modelcontextprotocol/tasks": {"mimeTypes": [MIME_TYPE]}})
        )),));
        assert!(wanted_by(Some(&with(
            json!({EXTENSION: {"mimeTypes": [MIME_TYPE]}})
        )),));
    }

    #[test]
    fn the_app_is_one_small_page_that_loads_nothing() {
        assert!(HTML.starts_with("<!DOCTYPE html>"), "an HTML5 document");
        assert!(HTML.len() <= 200 * 1024, "{} bytes", HTML.len());
        for needle in [
            "http://", "https://", "<link", "src=\"", "import(", "fetch(",
        ] {
            assert!(!HTML.contains(needle), "the app holds {needle:?}");
        }
        // Text from results goes into the page as text, never as markup.
        assert!(!HTML.contains("innerHTML"), "the app uses innerHTML");
        assert!(!HTML.contains("outerHTML") && !HTML.contains("insertAdjacentHTML"));
        assert!(!HTML.contains("document.write"));
    }

    #[test]
    fn the_resource_is_described_as_the_extension_says() {
        let listed = serde_json::to_value(resource()).unwrap();
        assert_eq!(listed["uri"], URI);
        assert_eq!(listed["mimeType"], MIME_TYPE);
        assert_eq!(listed["_meta"]["ui"]["prefersBorder"], true);
        let read = serde_json::to_value(contents()).unwrap();
        assert_eq!(read["mimeType"], MIME_TYPE);
        assert_eq!(read["text"], HTML);
        assert_eq!(read["_meta"]["ui"]["csp"]["connectDomains"], json!([]));
        let tool = serde_json::to_value(tool_meta()).unwrap();
        assert_eq!(tool, json!({"ui": {"resourceUri": URI}}));
    }
}
