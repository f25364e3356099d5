//! The documents held to the repository: every path they cite exists, every `runbox`
//! flag they cite is one `--help` shows, and every client config in docs/clients.md starts
//! a runbox that runs a program through a real MCP client.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The documents checked: README.md, SECURITY.md, THIRD_PARTY.md, docs/*.md,
/// deploy/README.md, runtimes/README.md and bench/RESULTS.md, relative to the root.
fn documents() -> Vec<String> {
    let mut docs: Vec<String> = [
        "README.md",
        "SECURITY.md",
        "THIRD_PARTY.md",
        "deploy/README.md",
        "runtimes/README.md",
        "bench/RESULTS.md",
    ]
    .map(String::from)
    .into();
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            docs.push(format!("docs/{name}"));
        }
    }
    docs.sort();
    docs
}

/// A document split into its prose (fenced blocks blanked, so line numbers hold) and its
/// fenced blocks' lines (with `\` continuations joined).
struct Parsed {
    prose: String,
    code_lines: Vec<String>,
}

fn parse(text: &str) -> Parsed {
    let (mut prose, mut code_lines) = (String::new(), Vec::new());
    let mut fenced = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            prose.push('\n');
            continue;
        }
        if fenced {
            prose.push('\n');
            match line.trim_end().strip_suffix('\\') {
                Some(start) => pending.push_str(start),
                None => code_lines.push(std::mem::take(&mut pending) + line),
            }
        } else {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    Parsed { prose, code_lines }
}

/// The inline code spans of prose, paragraph by paragraph (a span may wrap a line).
fn code_spans(prose: &str) -> Vec<String> {
    prose
        .split("\n\n")
        .flat_map(|paragraph| {
            let paragraph = paragraph.replace('\n', " ");
            paragraph
                .split('`')
                .skip(1)
                .step_by(2)
                .map(|s| s.trim().to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The targets of the markdown links of prose, outside code spans.
fn link_targets(prose: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for paragraph in prose.split("\n\n") {
        let paragraph = paragraph.replace('\n', " ");
        for text in paragraph.split('`').step_by(2) {
            for (i, _) in text.match_indices("](") {
                let rest = &text[i + 2..];
                if let Some(end) = rest.find(')') {
                    targets.push(rest[..end].trim().to_string());
                }
            }
        }
    }
    targets
}

/// The repository's top-level entries a cited path may start with: these, and whatever
/// git tracks at the top.
const TOP_LEVEL: &[&str] = &[
    ".ci",
    "adapters",
    "bench",
    "deploy",
    "docs",
    "host",
    "runtimes",
    "tests",
    "wit",
    "Cargo.lock",
    "Cargo.toml",
    "LICENSE",
    "README.md",
    "SECURITY.md",
    "THIRD_PARTY.md",
    "plugins.toml",
];

fn top_level() -> BTreeSet<String> {
    let mut top: BTreeSet<String> = TOP_LEVEL.iter().map(|s| s.to_string()).collect();
    if let Ok(out) = Command::new("git")
        .args(["ls-files"])
        .current_dir(root())
        .output()
    {
        for file in String::from_utf8_lossy(&out.stdout).lines() {
            top.insert(file.split('/').next().unwrap().to_string());
        }
    }
    top.remove("target");
    top
}

/// A placeholder rather than a path: `runbox-VERSION-TARGET.tar.gz`, `…`, `*`, `{x}`.
fn is_placeholder(path: &str) -> bool {
    if path.contains(['…', '*', '{', '<', '$', '%', '~', ':', '=', '\\']) {
        return true;
    }
    // A run of capitals that does not name a document (README.md, THIRD_PARTY.md).
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_uppercase() {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_uppercase() || bytes[i] == b'_') {
                i += 1;
            }
            let run = &path[start..i];
            if run.len() >= 2 && !path[i..].starts_with(".md") && run != "LICENSE" {
                return true;
            }
        } else {
            i += 1;
        }
    }
    false
}

/// The repository paths a document's code spans cite: with a `/` whose first part is a
/// top-level entry of the repository (checked from the root) or an entry of the
/// document's own directory (checked from there), or a top-level file by its name.
/// Paths inside the sandbox (`/tools/README.md`), home paths, URLs, build outputs
/// (`target/…`) and placeholders are not the repository's.
fn cited_paths(doc: &str, spans: &[String], top: &BTreeSet<String>) -> Vec<(String, PathBuf)> {
    let root = root();
    let dir = Path::new(doc).parent().unwrap_or(Path::new(""));
    let mut cited = Vec::new();
    for span in spans {
        let span = span.trim_end_matches([',', '.', ';']);
        if span.is_empty()
            || span.contains(char::is_whitespace)
            || span.contains("://")
            || span.starts_with(['/', '@', '-'])
            || span.starts_with("./")
            || span.starts_with("../")
            || is_placeholder(span)
        {
            continue;
        }
        let first = span.split('/').next().unwrap();
        if !span.contains('/') {
            if top.contains(span) {
                cited.push((span.to_string(), root.join(span)));
            }
            continue;
        }
        if top.contains(first) {
            cited.push((span.to_string(), root.join(span)));
        } else if !dir.as_os_str().is_empty() && root.join(dir).join(first).exists() {
            cited.push((span.to_string(), root.join(dir).join(span)));
        }
    }
    cited
}

/// Every path a document cites exists: its markdown links' relative targets (anchors
/// stripped) from the document's directory, and the repository paths of its code spans
/// (see [`cited_paths`]) from the root.
#[test]
fn every_path_the_docs_cite_exists() {
    let root = root();
    let top = top_level();
    let (mut missing, mut links, mut paths) = (Vec::new(), 0, 0);
    for doc in documents() {
        let parsed = parse(&read(&root.join(&doc)));
        let dir = root.join(&doc).parent().unwrap().to_path_buf();
        for target in link_targets(&parsed.prose) {
            let target = target.split('#').next().unwrap().split(' ').next().unwrap();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            links += 1;
            if !dir.join(target).exists() {
                missing.push(format!("{doc} links to {target}"));
            }
        }
        for (path, resolved) in cited_paths(&doc, &code_spans(&parsed.prose), &top) {
            paths += 1;
            if !resolved.exists() {
                missing.push(format!("{doc} cites `{path}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "missing from the repository:\n{}",
        missing.join("\n")
    );
    assert!(links >= 40, "only {links} links found");
    assert!(paths >= 40, "only {paths} paths found");
}

/// A document that cites a missing path is caught (the check above checks something).
#[test]
fn a_missing_path_is_caught() {
    let top = top_level();
    let spans = code_spans("See `host/src/nowhere.rs` and `plugins.toml`,\nnot `/tools/README.md`, `target/x` or `runbox-VERSION.tar.gz`.\n");
    let cited = cited_paths("docs/x.md", &spans, &top);
    let names: Vec<&str> = cited.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(names, ["host/src/nowhere.rs", "plugins.toml"]);
    assert!(!cited[0].1.exists() && cited[1].1.exists());
    assert_eq!(link_targets("a [b](../c.md#d) `[e](f)`"), ["../c.md#d"]);
}

/// Every flag any `runbox` command's `--help` shows.
fn help_flags() -> BTreeSet<String> {
    let help = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_runbox"))
            .args(args)
            .arg("--help")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?} --help");
        String::from_utf8(out.stdout).unwrap()
    };
    let mut texts = vec![help(&[])];
    for command in ["run", "repl", "mcp", "runtimes", "plugins"] {
        texts.push(help(&[command]));
    }
    let plugins = texts.last().unwrap().clone();
    let commands = &plugins[plugins.find("Commands:").unwrap()..];
    for line in commands.lines().skip(1) {
        let Some(sub) = line.split_whitespace().next() else {
            break;
        };
        if sub != "help" {
            texts.push(help(&["plugins", sub]));
        }
    }
    let mut flags = BTreeSet::new();
    for text in texts {
        for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
            if word.len() > 2 && word.starts_with("--") {
                flags.insert(word.to_string());
            }
        }
    }
    flags
}

/// The `--flag` in a word of a command line (`[--http`, `--stdin=-`, `--out]`), if any.
fn flag_of(word: &str) -> Option<String> {
    let word = word.trim_start_matches(['[', '(', '"', '\'']);
    let name: String = word
        .strip_prefix("--")?
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    name.starts_with(|c: char| c.is_ascii_alphanumeric())
        .then(|| format!("--{name}"))
}

/// The flags a command line gives `runbox`: the words after a `runbox` (or `…/runbox`, or
/// `cargo run … --`) in command position, up to the next `|`, `&&`, `;` or comment.
fn runbox_flags(line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut flags = Vec::new();
    let (mut start, mut inside, mut cargo_run) = (true, false, false);
    for (i, word) in words.iter().enumerate() {
        if word.starts_with('#') && !inside {
            break;
        }
        if matches!(
            *word,
            "|" | "||" | "&&" | ";" | "&" | "(" | "$(" | "→" | "$"
        ) || word.ends_with(';')
        {
            (start, inside, cargo_run) = (true, false, false);
            continue;
        }
        if inside {
            if word.starts_with('#') {
                break;
            }
            flags.extend(flag_of(word));
            continue;
        }
        if cargo_run {
            if *word == "--" {
                inside = true;
            }
            continue;
        }
        if start {
            let command = word.trim_start_matches(['(', '"', '\'']);
            if command.contains('=') || matches!(command, "exec" | "sudo" | "nohup" | "env") {
                continue; // an assignment or a wrapper: the command comes next
            }
            if command == "runbox" || command.ends_with("/runbox") {
                inside = true;
            } else if command == "cargo" && words.get(i + 1) == Some(&"run") {
                cargo_run = true;
            }
            start = false;
        }
    }
    flags
}

/// Every `--flag` a document cites for `runbox` is one that `runbox --help` or a
/// subcommand's `--help` shows: those of command lines (code lines and code spans) that
/// run `runbox`, the first cells of tables headed `flag`, and bare `--flag` spans in the
/// documents about runbox's own command line (README, docs/cli.md, docs/settings.md).
/// Other programs' flags (cargo's, pip's, claude's, the HAProxy generator's) are not
/// runbox's and not checked.
#[test]
fn every_runbox_flag_the_docs_cite_exists() {
    let known = help_flags();
    assert!(known.contains("--max-concurrent") && known.contains("--stdin"));
    let mut unknown = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let parsed = parse(&read(&root().join(&doc)));
        let spans = code_spans(&parsed.prose);
        let mut cited: Vec<String> = Vec::new();
        for line in parsed.code_lines.iter().chain(&spans) {
            cited.extend(runbox_flags(line));
        }
        let mut flag_table = false;
        for line in parsed.prose.lines() {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            if !line.starts_with('|') || cells.len() < 3 {
                flag_table = false;
            } else if cells[1] == "flag" {
                flag_table = true;
            } else if flag_table {
                cited.extend(
                    cells[1]
                        .trim_matches('`')
                        .split_whitespace()
                        .next()
                        .and_then(flag_of),
                );
            }
        }
        if ["README.md", "docs/cli.md", "docs/settings.md"].contains(&doc.as_str()) {
            cited.extend(
                spans
                    .iter()
                    .filter_map(|s| flag_of(s.split_whitespace().next()?)),
            );
        }
        for flag in cited {
            checked += 1;
            if !known.contains(&flag) {
                unknown.push(format!("{doc}: {flag}"));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "flags no `runbox … --help` shows:\n{}",
        unknown.join("\n")
    );
    assert!(checked >= 100, "only {checked} flags checked");
}

#[test]
fn runbox_flags_are_told_from_other_programs() {
    assert_eq!(
        runbox_flags("runbox run python a.py --file d.csv --out r/ | sort --numeric # --x"),
        ["--file", "--out"]
    );
    assert_eq!(
        runbox_flags("runbox mcp [--http ADDR] [OPTIONS]"),
        ["--http"]
    );
    assert_eq!(
        runbox_flags("cargo run --release -- mcp --http 8080"),
        ["--http"]
    );
    assert_eq!(
        runbox_flags("RUNBOX_LOG=debug target/release/runbox --quiet mcp"),
        ["--quiet"]
    );
    assert!(runbox_flags("claude mcp add --scope user runbox -- runbox mcp").is_empty());
    assert!(runbox_flags("podman run --rm -i --entrypoint runbox runbox mcp").is_empty());
    assert!(runbox_flags("pip download --no-deps x").is_empty());
    assert_eq!(flag_of("---"), None);
    assert_eq!(flag_of("[--file"), Some("--file".into()));
}

// ---------------------------------------------------------------------------------------
// The client configs of docs/clients.md, started as their clients would start them.

/// A client's command and arguments, as a config block gives them.
#[derive(Debug)]
struct Config {
    client: String,
    command: String,
    args: Vec<String>,
}

/// The fenced blocks of a markdown text: (language, body).
fn fenced_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(language) = trimmed.strip_prefix("```") {
            match current.take() {
                Some(block) => blocks.push(block),
                None => current = Some((language.trim().to_string(), String::new())),
            }
        } else if let Some((_, body)) = &mut current {
            body.push_str(line);
            body.push('\n');
        }
    }
    blocks
}

/// A JSON config block: the `runbox` entry of `mcpServers` (or VS Code's `servers`, whose
/// entries say `"type": "stdio"`).
fn json_config(client: &str, body: &str) -> (String, Vec<String>) {
    let value: Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{client}: {e}\n{body}"));
    let key = if client == "VS Code" {
        "servers"
    } else {
        "mcpServers"
    };
    let entry = &value[key]["runbox"];
    assert!(entry.is_object(), "{client}: no {key}.runbox in\n{body}");
    if client == "VS Code" {
        assert_eq!(entry["type"], "stdio", "{client}");
    }
    let command = entry["command"].as_str().unwrap().to_string();
    let args = entry["args"]
        .as_array()
        .unwrap_or_else(|| panic!("{client}: args"))
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    (command, args)
}

/// Claude Code's `claude mcp add [OPTIONS] runbox -- COMMAND ARGS…`.
fn claude_code_config(body: &str) -> (String, Vec<String>) {
    let line = body
        .lines()
        .find(|l| l.starts_with("claude mcp add "))
        .unwrap_or_else(|| panic!("no `claude mcp add` in\n{body}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let dashes = words.iter().position(|w| *w == "--").expect("`--`");
    assert_eq!(words[dashes - 1], "runbox", "the server's name: {line}");
    if let Some(i) = words.iter().position(|w| *w == "--transport") {
        assert_eq!(words[i + 1], "stdio", "{line}");
    }
    let (command, args) = words[dashes + 1..].split_first().expect("a command");
    (
        command.to_string(),
        args.iter().map(|a| a.to_string()).collect(),
    )
}

/// Goose's `extensions:` entry, read line by line: `type: stdio`, `cmd`, `args` (a flow
/// list or a block list), `enabled: true` and a `timeout`.
fn goose_config(body: &str) -> (String, Vec<String>) {
    let mut lines = body.lines();
    assert_eq!(lines.next(), Some("extensions:"), "{body}");
    assert_eq!(lines.next().map(str::trim), Some("runbox:"), "{body}");
    let (mut fields, mut args) = (std::collections::BTreeMap::new(), None::<Vec<String>>);
    for line in lines {
        let line = line.trim();
        if let Some(item) = line.strip_prefix("- ") {
            args.get_or_insert_with(Vec::new)
                .push(item.trim().trim_matches(['"', '\'']).to_string());
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if key == "args" {
            if let Some(list) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                args = Some(
                    list.split(',')
                        .map(|a| a.trim().trim_matches(['"', '\'']).to_string())
                        .filter(|a| !a.is_empty())
                        .collect(),
                );
            }
        } else {
            fields.insert(key.to_string(), value.trim_matches(['"', '\'']).to_string());
        }
    }
    assert_eq!(
        fields.get("type").map(String::as_str),
        Some("stdio"),
        "{body}"
    );
    assert_eq!(
        fields.get("enabled").map(String::as_str),
        Some("true"),
        "{body}"
    );
    assert!(
        fields
            .get("timeout")
            .is_some_and(|t| t.parse::<u32>().is_ok()),
        "{body}"
    );
    let command = fields.get("cmd").expect("cmd").clone();
    (command, args.expect("args"))
}

/// The configs of docs/clients.md, one section per client, and README's.
fn client_configs() -> Vec<Config> {
    let doc = read(&root().join("docs/clients.md"));
    let mut configs = Vec::new();
    for client in [
        "Claude Desktop",
        "Claude Code",
        "Cursor",
        "VS Code",
        "Goose",
    ] {
        let section = &doc[doc
            .find(&format!("\n## {client}\n"))
            .unwrap_or_else(|| panic!("no ## {client} in docs/clients.md"))
            + 1..];
        let section = &section[..section[1..].find("\n## ").map_or(section.len(), |i| i + 1)];
        let blocks = fenced_blocks(section);
        assert!(!blocks.is_empty(), "{client}: no config block");
        for (language, body) in blocks {
            let (command, args) = match (client, language.as_str()) {
                ("Claude Code", "sh") => claude_code_config(&body),
                ("Goose", "yaml") => goose_config(&body),
                (_, "json") => json_config(client, &body),
                _ => panic!("{client}: a ```{language} block"),
            };
            configs.push(Config {
                client: client.to_string(),
                command,
                args,
            });
        }
    }
    let readme = read(&root().join("README.md"));
    let claude = fenced_blocks(&readme)
        .into_iter()
        .find(|(_, body)| body.starts_with("claude mcp add "))
        .expect("README's Claude Code line");
    let (command, args) = claude_code_config(&claude.1);
    configs.push(Config {
        client: "README (Claude Code)".into(),
        command,
        args,
    });
    configs
}

/// Each client config of docs/clients.md (and README's), its command and arguments
/// started exactly (the built runbox first on `PATH`; an absolute path to a `runbox`,
/// `/Users/you/.cargo/bin/runbox`, stands for the built one) by the MCP Python SDK's
/// `Client` over stdio, runs a python `print("hello")`. The container's block is only
/// parsed: it needs the image.
#[test]
fn client_configs_start_runbox() {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_runbox"));
    let mut runnable = Vec::new();
    let mut clients = BTreeSet::new();
    for config in client_configs() {
        let command = Path::new(&config.command);
        let command = if config.command == "runbox" {
            config.command.clone()
        } else if command.is_absolute() && command.file_name() == Some("runbox".as_ref()) {
            binary.display().to_string()
        } else if ["podman", "docker"]
            .map(Some)
            .contains(&command.file_name().and_then(|n| n.to_str()))
        {
            assert_eq!(
                config.args.last().map(String::as_str),
                Some("mcp"),
                "{config:?}"
            );
            continue;
        } else {
            panic!("a config starts neither runbox nor the container: {config:?}")
        };
        clients.insert(config.client.clone());
        runnable.push(json!({"client": config.client, "command": command, "args": config.args}));
    }
    assert_eq!(
        clients.len(),
        6,
        "a runnable config per client: {clients:?}"
    );
    let path = std::env::join_paths(
        std::iter::once(binary.parent().unwrap().to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    let configs = Value::Array(runnable).to_string();
    crate::mcp::scenario_with_env(
        "client_configs.py",
        &["configs"],
        "auto",
        &[
            ("PATH", path.to_str().unwrap()),
            ("RUNBOX_TEST_CONFIGS", &configs),
            ("RUNBOX_CACHE_DIR", common::cache_dir().to_str().unwrap()),
        ],
    );
}

/// The names a file's `mod NAME;` lines declare, but `common`.
fn declared_mods(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix("pub mod ")
                .or_else(|| l.trim().strip_prefix("mod "))
        })
        .filter_map(|r| r.strip_suffix(';'))
        .filter(|name| *name != "common")
        .map(str::to_string)
        .collect()
}

#[test]
fn the_layout_and_the_suite_list_name_every_module() {
    let lib = read(&root().join("host/src/lib.rs"));
    let layout = read(&root().join("docs/layout.md"));
    let missing: Vec<String> = declared_mods(&lib)
        .into_iter()
        .filter(|m| {
            !layout.contains(&format!("src/{m}/")) && !layout.contains(&format!("src/{m}.rs"))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/layout.md names no src/ path for {missing:?}"
    );

    let suites = read(&root().join("tests/all/main.rs"));
    let unlisted: Vec<String> = declared_mods(&suites)
        .into_iter()
        .filter(|m| !suites.contains(&format!("[`{m}`]")))
        .collect();
    assert!(
        unlisted.is_empty(),
        "tests/all/main.rs's list misses {unlisted:?}"
    );
}
