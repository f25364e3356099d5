//! The crate's modules form layers without a circle (docs/layout.md): read from the
//! source's own `use` lines and qualified paths, not from a list kept by hand.
//!
//! Two rules, both checked on every `.rs` file under `host/src`:
//! - no circle of imports between files. A file's import of its own folder's `mod.rs` is
//!   not counted: that is the folder's face (its declarations and re-exports), which in
//!   Rust a child reaches to name its siblings' items;
//! - each top-level module imports only modules of its own layer or below ([`LAYERS`]),
//!   and the faces above the service (`mcp`, `conformance`, the command line) reach the
//!   library through the service alone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The library's top-level modules, bottom to top. A module may import those on its
/// own line or on an earlier one.
const LAYERS: &[&[&str]] = &[
    // Budgets, plain types and small utilities that know nothing of runs.
    &[
        "budget", "metrics", "replica", "sweeper", "adapters", "tls", "wheel",
    ],
    &["files"],
    &["manifest", "wit"],
    // The engine and the compiled cache.
    &["engine"],
    // componentize and the snapshot; an instance's state through the accessors it adds.
    &["componentize", "state"],
    // Code mode's gateway and the network, which the sandbox's devices talk to.
    &["upstream", "net"],
    &["sandbox"],
    &["plugin"],
    &["run"],
    &["session"],
    &["service"],
    &["mcp", "conformance"],
];

/// Top-level modules that may only use the library through the service (and their own
/// files, and the [`UTILITIES`]).
const THROUGH_THE_SERVICE: &[&str] = &["mcp", "conformance"];

/// Ground-floor helpers that know nothing of runbox (a periodic sweep): anyone may use
/// them.
const UTILITIES: &[&str] = &["sweeper"];

/// What the command line may name of the library: the faces, not the rooms behind them.
const COMMAND_LINE_FACES: &[&str] = &["service.rs", "mcp/mod.rs", "conformance.rs"];

fn host_src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, as paths relative to `root` with `/` separators.
fn rust_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("read host/src") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).expect("under host/src");
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// Which crate a file belongs to: the binary's (`main.rs`, `cli/`) or the library's.
fn in_binary(file: &str) -> bool {
    file == "main.rs" || file.starts_with("cli/")
}

/// The module path of a file within its crate: `sandbox/store.rs` → `[sandbox, store]`.
fn module_path(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The source without comments and with string literals emptied, so that neither a
/// doc comment nor a string naming `crate::x` counts as an import.
fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &source[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(hashes) = raw_string_start(rest) {
            let end = format!("\"{}", "#".repeat(hashes));
            let body = &rest[2 + hashes..];
            i += 2 + hashes + body.find(&end).map_or(body.len(), |e| e + end.len());
            out.push_str("\"\"");
        } else if rest.starts_with('"') {
            let mut j = 1;
            while j < rest.len() {
                match rest.as_bytes()[j] {
                    b'\\' => j += 2,
                    b'"' => break,
                    _ => j += 1,
                }
            }
            i += (j + 1).min(rest.len());
            out.push_str("\"\"");
        } else if rest.starts_with("'\"'") {
            // The character literal '"' would otherwise open a string.
            i += 3;
            out.push_str("' '");
        } else {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// `r"`, `r#"`, `br##"`…: the number of `#`s of a raw string starting here.
fn raw_string_start(rest: &str) -> Option<usize> {
    let rest = rest.strip_prefix('b').unwrap_or(rest);
    let after_r = rest.strip_prefix('r')?;
    let hashes = after_r.len() - after_r.trim_start_matches('#').len();
    after_r[hashes..].starts_with('"').then_some(hashes)
}

/// The paths a `use` tree names: `a::{b, c::{d, e as f}}` → `a::b`, `a::c::d`, `a::c::e`.
fn expand_use_tree(tree: &str) -> Vec<Vec<String>> {
    fn split_top(list: &str) -> Vec<&str> {
        let (mut depth, mut start, mut items) = (0, 0, Vec::new());
        for (i, c) in list.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(&list[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        items.push(&list[start..]);
        items
    }
    fn walk(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
        for item in split_top(tree) {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            if let Some(open) = item.find('{') {
                let mut next = prefix.to_vec();
                next.extend(segments(&item[..open]));
                walk(
                    &next,
                    &item[open + 1..item.rfind('}').unwrap_or(item.len())],
                    out,
                );
            } else {
                let item = item.split(" as ").next().unwrap_or(item);
                let mut path = prefix.to_vec();
                path.extend(segments(item));
                out.push(path);
            }
        }
    }
    fn segments(path: &str) -> Vec<String> {
        path.split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty() && *s != "*")
            .map(str::to_string)
            .collect()
    }
    let compact: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    walk(&[], &compact, &mut out);
    out
}

/// `crate::a::b`, `super::c`, `self::d`, `runbox::e` as they appear in code.
fn qualified_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::", "runbox::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(start) {
            let at = from + at;
            from = at + start.len();
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut path = Vec::new();
            let mut rest = &code[at..];
            loop {
                let len = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                if len == 0 {
                    break;
                }
                path.push(rest[..len].to_string());
                match rest[len..].strip_prefix("::") {
                    Some(next) => rest = next,
                    None => break,
                }
            }
            out.push(path);
        }
    }
    out
}

/// The `use` declarations of `code`, expanded.
fn use_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("use ") {
        let at = from + at;
        from = at + 4;
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(end) = code[from..].find(';') else {
            break;
        };
        out.extend(expand_use_tree(&code[from..from + end]));
    }
    out
}

/// The position where a file's inline test module starts (`#[cfg(test)] mod tests {`),
/// inside which `super` is the file's own module.
fn inline_tests_start(code: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]") {
        let at = from + at;
        from = at + 1;
        let after = code[at + "#[cfg(test)]".len()..].trim_start();
        let after = after.strip_prefix("pub ").unwrap_or(after);
        if let Some(rest) = after.strip_prefix("mod ") {
            let name_len = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            if rest[name_len..].trim_start().starts_with('{') {
                return Some(at);
            }
        }
    }
    None
}

/// The modules a file declares with `mod NAME;` (reachable by bare paths in it).
fn declared_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in code.lines() {
        let line = line.trim();
        let line = line
            .strip_prefix("pub(crate) ")
            .or_else(|| line.strip_prefix("pub "))
            .unwrap_or(line);
        if let Some(name) = line.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            out.insert(name.trim().to_string());
        }
    }
    out
}

/// The source files, and for each the files it imports.
struct Graph {
    imports: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    fn read() -> Graph {
        let root = host_src();
        let mut files = Vec::new();
        rust_files(&root, &root, &mut files);
        let mut modules: BTreeMap<(bool, Vec<String>), String> = BTreeMap::new();
        for file in &files {
            modules.insert((in_binary(file), module_path(file)), file.clone());
        }
        // The longest prefix of `path` that names a file of the crate.
        let resolve = |binary: bool, path: &[String]| -> Option<String> {
            (0..=path.len())
                .rev()
                .find_map(|n| modules.get(&(binary, path[..n].to_vec())).cloned())
        };
        let mut imports = BTreeMap::new();
        for file in &files {
            let source = std::fs::read_to_string(root.join(file)).expect("read a source file");
            let code = code_only(&source);
            let binary = in_binary(file);
            let own = module_path(file);
            let declared = declared_modules(&code);
            let split = inline_tests_start(&code).unwrap_or(code.len());
            let mut targets = BTreeSet::new();
            for (part, in_tests) in [(&code[..split], false), (&code[split..], true)] {
                let paths = use_paths(part).into_iter().chain(qualified_paths(part));
                for path in paths {
                    let Some(first) = path.first() else { continue };
                    let (crate_binary, absolute) = match first.as_str() {
                        "crate" => (binary, path[1..].to_vec()),
                        "runbox" => (false, path[1..].to_vec()),
                        "self" => (binary, [own.clone(), path[1..].to_vec()].concat()),
                        "super" => {
                            let mut base = own.clone();
                            let mut rest = &path[..];
                            // In an inline test module the first `super` is the file.
                            if in_tests {
                                rest = &rest[1..];
                            }
                            while rest.first().is_some_and(|s| s == "super") {
                                base.pop();
                                rest = &rest[1..];
                            }
                            (binary, [base, rest.to_vec()].concat())
                        }
                        name if declared.contains(name) => (binary, [own.clone(), path].concat()),
                        _ => continue,
                    };
                    if let Some(target) = resolve(crate_binary, &absolute) {
                        if &target != file {
                            targets.insert(target);
                        }
                    }
                }
            }
            imports.insert(file.clone(), targets);
        }
        Graph { imports }
    }

    /// The file's imports without its own folder's face (`mod.rs` beside it).
    fn counted(&self, file: &str) -> impl Iterator<Item = &String> {
        let face = match file.rsplit_once('/') {
            Some((dir, name)) if name != "mod.rs" => Some(format!("{dir}/mod.rs")),
            _ => None,
        };
        self.imports[file]
            .iter()
            .filter(move |t| Some(t.as_str()) != face.as_deref())
    }

    /// The files each file reaches through its imports, itself included.
    fn reach(&self, from: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::from([from.to_string()]);
        let mut todo = vec![from.to_string()];
        while let Some(file) = todo.pop() {
            for target in self.counted(&file) {
                if seen.insert(target.clone()) {
                    todo.push(target.clone());
                }
            }
        }
        seen
    }

    /// The circles: sets of more than one file that each reach all the others.
    fn circles(&self) -> Vec<Vec<String>> {
        let reach: BTreeMap<&String, BTreeSet<String>> =
            self.imports.keys().map(|f| (f, self.reach(f))).collect();
        let mut circles: Vec<Vec<String>> = Vec::new();
        for (file, reached) in &reach {
            let circle: Vec<String> = reached
                .iter()
                .filter(|other| reach[other].contains(*file))
                .cloned()
                .collect();
            if circle.len() > 1 && !circles.contains(&circle) {
                circles.push(circle);
            }
        }
        circles
    }
}

/// The top-level library module a file belongs to (`sandbox/store.rs` → `sandbox`);
/// `None` for the binary's files and `lib.rs`.
fn top_module(file: &str) -> Option<String> {
    if in_binary(file) || file == "lib.rs" {
        return None;
    }
    Some(module_path(file).first()?.clone())
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

#[test]
fn no_file_imports_another_in_a_circle() {
    let graph = Graph::read();
    let circles = graph.circles();
    let shown: Vec<String> = circles
        .iter()
        .map(|files| {
            let edges: Vec<String> = files
                .iter()
                .flat_map(|f| {
                    graph
                        .counted(f)
                        .filter(|t| files.contains(t))
                        .map(move |t| format!("  {f} -> {t}"))
                })
                .collect();
            format!("{}\n{}", files.join(", "), edges.join("\n"))
        })
        .collect();
    assert!(circles.is_empty(), "import circles:\n{}", shown.join("\n"));
}

#[test]
fn each_module_imports_only_its_own_layer_and_below() {
    let graph = Graph::read();
    let mut wrong = Vec::new();
    for (file, targets) in &graph.imports {
        if in_binary(file) {
            // The command line: the library through its faces only.
            for target in targets.iter().filter(|t| !in_binary(t)) {
                if !COMMAND_LINE_FACES.contains(&target.as_str()) {
                    wrong.push(format!("{file} (the command line) -> {target}"));
                }
            }
            continue;
        }
        let Some(from) = top_module(file) else {
            continue;
        };
        let Some(from_layer) = layer_of(&from) else {
            wrong.push(format!("{file}: `{from}` is on no layer of LAYERS"));
            continue;
        };
        for target in targets {
            let Some(to) = top_module(target) else {
                continue;
            };
            if to == from || UTILITIES.contains(&to.as_str()) {
                continue;
            }
            match layer_of(&to) {
                Some(l) if l > from_layer => {
                    wrong.push(format!("{file} -> {target}: `{to}` is above `{from}`"))
                }
                Some(_) if THROUGH_THE_SERVICE.contains(&from.as_str()) && to != "service" => wrong
                    .push(format!(
                        "{file} -> {target}: `{from}` uses the library through the service"
                    )),
                Some(_) => {}
                None => wrong.push(format!("{target}: `{to}` is on no layer of LAYERS")),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
}

/// The reader itself: it must see the imports these rules depend on.
#[test]
fn the_import_reader_sees_use_trees_paths_and_test_modules() {
    assert_eq!(
        expand_use_tree("crate::a::{b, c::{d, e as f}, self}"),
        [
            vec!["crate", "a", "b"],
            vec!["crate", "a", "c", "d"],
            vec!["crate", "a", "c", "e"],
            vec!["crate", "a", "self"],
        ]
    );
    let code =
        code_only("let s = \"crate::x\"; // crate::y\nlet t = r#\"crate::z\"#; crate::w::V;");
    assert_eq!(qualified_paths(&code), [vec!["crate", "w", "V"]]);
    let code = "use a::B;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n";
    assert_eq!(inline_tests_start(code), Some(10));
    assert_eq!(
        declared_modules("pub mod a;\nmod b;\nmod c {\n"),
        ["a", "b"].map(String::from).into()
    );

    // The crate as it is: the graph finds imports where the code has them.
    let graph = Graph::read();
    assert!(graph.imports["sandbox/store.rs"].contains("sandbox/filesystem/mod.rs"));
    assert!(graph.imports["mcp/handler/server.rs"].contains("service.rs"));
    assert!(graph.imports["main.rs"].contains("cli/mod.rs"));
    assert!(graph
        .counted("sandbox/store.rs")
        .all(|t| t != "sandbox/mod.rs"));
}
