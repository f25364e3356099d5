//! The result app (docs/mcp.md): an MCP App (`io.modelcontextprotocol/ui`) that shows a
//! `run_code` result to a person.
//!
//! - In-process, through rmcp's client: a client that declares the extension gets
//!   `_meta.ui.resourceUri` on `run_code`, the resource listed and readable; one that does
//!   not gets today's tools/list (the committed fixture), no resource, and the same
//!   results.
//! - In headless Chromium (`tests/mcp_client/app_view.py` with the Python SDK over stdio):
//!   real results shown by the app inside a small host page that speaks the bridge
//!   protocol, the DOM checked, clicks made, a screenshot of each case written to
//!   `target/app-screenshots/`.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    JsonObject, ReadResourceRequestParams, ResourceContents,
};
use rmcp::service::{RunningService, ServiceExt};
use rmcp::RoleClient;
use runbox::mcp::handler::app;
use runbox::mcp::RunboxServer;
use runbox::service::Runbox;
use serde_json::{json, Value};

async fn shared_runbox() -> Arc<Runbox> {
    tokio::task::spawn_blocking(common::runbox).await.unwrap()
}

/// A handshake-era client of `runbox`'s handler, in-process; with the extension declared
/// in its `initialize` when `ui`.
async fn connect(runbox: Arc<Runbox>, ui: bool) -> RunningService<RoleClient, ClientConfig> {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let server = RunboxServer::new(runbox);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let mut capabilities = ClientCapabilities::default();
    if ui {
        let settings = json!({"mimeTypes": [app::MIME_TYPE]});
        let settings: JsonObject = serde_json::from_value(settings).unwrap();
        capabilities.extensions = Some(BTreeMap::from([(app::EXTENSION.to_string(), settings)]));
    }
    let info = ClientConfig::new(capabilities, Implementation::new("app-test", "1.0.0"));
    info.serve(client_io).await.expect("initialize")
}

fn fixture() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tools-list.json");
    std::fs::read_to_string(path).expect("tests/fixtures/tools-list.json")
}

/// tools/list as the fixture holds it: sorted by name, pretty JSON.
async fn listed(client: &RunningService<RoleClient, ClientConfig>) -> Vec<rmcp::model::Tool> {
    let mut tools = client.list_all_tools().await.unwrap();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools
}

fn pretty(tools: &[rmcp::model::Tool]) -> String {
    serde_json::to_string_pretty(tools).unwrap() + "\n"
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_with_the_extension_gets_the_app() {
    let client = connect(shared_runbox().await, true).await;
    let mut tools = listed(&client).await;
    for tool in &tools {
        let meta = tool.meta.as_ref().map(|m| Value::Object(m.0.clone()));
        match tool.name.as_ref() {
            "run_code" => assert_eq!(
                meta,
                Some(json!({"ui": {"resourceUri": "ui://runbox/run"}}))
            ),
            _ => assert_eq!(meta, None, "{}", tool.name),
        }
    }
    // Besides that `_meta`, the tools are today's.
    for tool in &mut tools {
        tool.meta = None;
    }
    assert_eq!(pretty(&tools), fixture());

    let resources = client.list_all_resources().await.unwrap();
    let resources = serde_json::to_value(&resources).unwrap();
    assert_eq!(
        resources,
        json!([{
            "uri": "ui://runbox/run",
            "name": "runbox-run",
            "title": "runbox: a run",
            "description": "Shows a run_code result: code, status, output, plots, tables and \
                            files; runs it again.",
            "mimeType": "text/html;profile=mcp-app",
            "size": app::HTML.len(),
            "_meta": {"ui": {"csp": {"connectDomains": [], "resourceDomains": []},
                             "prefersBorder": true}}
        }])
    );
    let read = client
        .read_resource(ReadResourceRequestParams::new(app::URI))
        .await
        .unwrap();
    assert_eq!(read.contents.len(), 1);
    match &read.contents[0] {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            meta,
        } => {
            assert_eq!(uri, app::URI);
            assert_eq!(mime_type.as_deref(), Some("text/html;profile=mcp-app"));
            assert_eq!(text, app::HTML);
            let meta = serde_json::to_value(meta).unwrap();
            assert_eq!(meta["ui"]["prefersBorder"], true, "{meta}");
        }
        other => panic!("not text: {other:?}"),
    }
    eprintln!(
        "the app: {} bytes ({:.1} KiB)",
        app::HTML.len(),
        app::HTML.len() as f64 / 1024.0
    );
    assert!(app::HTML.len() <= 200 * 1024);
}

/// A result as it goes on the wire, with what differs between two runs of the same
/// program (the duration, the kept output's handle) put to one side.
fn comparable(result: &CallToolResult) -> String {
    let mut value = serde_json::to_value(result).unwrap();
    value["structuredContent"]["duration_ms"] = json!(0);
    let wire = serde_json::to_string(&value).unwrap();
    // The text block says the duration too ("… ms" / "… s").
    let mut out = String::new();
    let mut rest = wire.as_str();
    while let Some(at) = rest.find(" ms") {
        let head = &rest[..at];
        let digits = head.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        out.push_str(digits);
        out.push_str("N ms");
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_without_the_extension_sees_todays_contract() {
    let runbox = shared_runbox().await;
    let plain = connect(runbox.clone(), false).await;
    let ui = connect(runbox.clone(), true).await;
    // tools/list: the committed fixture, byte for byte.
    assert_eq!(pretty(&listed(&plain).await), fixture());
    // No resources, and the app's URI is read as any URI that was never given out.
    let resources = plain.list_resources(None).await.unwrap();
    assert_eq!(
        serde_json::to_value(&resources).unwrap(),
        json!({"resources": []})
    );
    let refused = plain
        .read_resource(ReadResourceRequestParams::new(app::URI))
        .await
        .expect_err("no app for a client without the extension");
    let server = RunboxServer::new(runbox.clone());
    let today = server.read_kept(app::URI).expect_err("not a kept result");
    assert!(
        refused.to_string().contains(&today.message.to_string()),
        "{refused} vs {}",
        today.message
    );
    // Results: the same for both kinds of client (nothing more goes to the model).
    let code = "import sys\nprint('out')\nprint('err', file=sys.stderr)\n\
                open('t.csv', 'w').write('a,b\\n1,2\\n')\nraise SystemExit(3)\n";
    let call = CallToolRequestParams::new("run_code").with_arguments(
        serde_json::from_value(json!({"runtime": "python", "code": code})).unwrap(),
    );
    let a = plain.call_tool(call.clone()).await.unwrap();
    let b = ui.call_tool(call).await.unwrap();
    let (a, b) = (comparable(&a), comparable(&b));
    assert!(
        a.contains("exit code: 3") || a.contains("\"exit_code\":3"),
        "{a}"
    );
    // The files' URIs carry a fresh handle per result: compare without them.
    let handle = |s: &str| -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(at) = rest.find("runbox://") {
            out.push_str(&rest[..at + 9]);
            rest = &rest[at + 9..];
            let end = rest.find('/').unwrap_or(rest.len());
            out.push_str("HANDLE");
            rest = &rest[end..];
        }
        out.push_str(rest);
        out
    };
    assert_eq!(handle(&a), handle(&b));
    eprintln!("a result, as either client gets it: {}", handle(&a));
}

/// Chromium, installed with apt-get when it is missing (the test says so; it never skips).
fn chromium() -> PathBuf {
    let find = || {
        ["chromium", "chromium-browser", "google-chrome"]
            .iter()
            .find_map(|name| {
                let out = Command::new("which").arg(name).output().ok()?;
                out.status
                    .success()
                    .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
            })
    };
    if let Some(found) = find() {
        eprintln!("chromium: {}", found.display());
        return found;
    }
    eprintln!("chromium is not installed: installing it with `apt-get install -y chromium`");
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let mut apt = if root {
        Command::new("apt-get")
    } else {
        let mut sudo = Command::new("sudo");
        sudo.arg("-n").arg("apt-get");
        sudo
    };
    let status = apt
        .args(["install", "-y", "chromium"])
        .status()
        .expect("run apt-get");
    assert!(status.success(), "apt-get install -y chromium failed");
    find().expect("chromium after apt-get install")
}

#[test]
fn the_app_in_chromium() {
    let chromium = chromium();
    let shots = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/app-screenshots");
    let shots = shots.to_string_lossy().into_owned();
    crate::mcp::scenario_with_env(
        "app_view.py",
        &[&chromium.to_string_lossy()],
        "auto",
        &[("RUNBOX_APP_SCREENSHOTS", &shots)],
    );
}
