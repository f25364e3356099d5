//! `{ include = "PATH" }`: a value of a plugins file held in a file of its own. The
//! programs runbox ships with its runtimes (python's `_runbox` module, preludes, session
//! drivers, the C++ support files) are files under `runtimes/NAME/`, which their
//! languages' tools can check, rather than strings inside TOML.
//!
//! An include is replaced by the file's text before the entry is read; an include of a
//! `.toml` file by that file's value of the same key (`samples = { include =
//! "runtimes/python/samples.toml" }` takes the `[[samples]]` of that file). The built-in
//! list's files are compiled into the binary ([`RUNTIME_FILES`], made by host/build.rs from
//! `runtimes/`), so it names no file outside it; another plugins file's are read relative
//! to its own directory.

use std::path::Path;

use toml::{Table, Value};

include!(concat!(env!("OUT_DIR"), "/runtime_files.rs"));

/// Where a plugins file's includes are read from.
#[derive(Debug, Clone, Copy)]
pub enum Files<'a> {
    /// The built-in list's: [`RUNTIME_FILES`], by their paths in this repository.
    Builtin,
    /// A plugins file's: relative to its directory.
    Dir(&'a Path),
}

/// An include that could not be made.
#[derive(Debug, thiserror::Error)]
#[error("`{at}`: {{ include = \"{path}\" }}: {why}")]
pub struct IncludeError {
    /// Where it stands, as a dotted path of keys.
    pub at: String,
    pub path: String,
    pub why: String,
}

/// The key a table of one `include` names.
const INCLUDE: &str = "include";

/// Replaces every include in `table` (at any depth) by what it names; how many there were.
pub fn resolve(table: &mut Table, files: Files<'_>) -> Result<usize, IncludeError> {
    resolve_table(table, files, "")
}

fn resolve_table(table: &mut Table, files: Files<'_>, at: &str) -> Result<usize, IncludeError> {
    let mut made = 0;
    for (key, value) in table.iter_mut() {
        let here = if at.is_empty() {
            key.clone()
        } else {
            format!("{at}.{key}")
        };
        made += resolve_value(value, key, files, &here)?;
    }
    Ok(made)
}

/// `value`, standing under `key` at `at`.
fn resolve_value(
    value: &mut Value,
    key: &str,
    files: Files<'_>,
    at: &str,
) -> Result<usize, IncludeError> {
    match value {
        Value::Table(table) => match included_path(table) {
            Some(path) => {
                let (included, inner) = include(&path, key, files, at)?;
                *value = included;
                Ok(1 + inner)
            }
            None => resolve_table(table, files, at),
        },
        Value::Array(items) => {
            let mut made = 0;
            for (i, item) in items.iter_mut().enumerate() {
                made += resolve_value(item, key, files, &format!("{at}[{i}]"))?;
            }
            Ok(made)
        }
        _ => Ok(0),
    }
}

/// The path a table of just `include = "PATH"` names.
fn included_path(table: &Table) -> Option<String> {
    match (table.len(), table.get(INCLUDE)) {
        (1, Some(Value::String(path))) => Some(path.clone()),
        _ => None,
    }
}

/// What `path` holds, standing under `key`: its text, or (a `.toml` file) its `key`, with
/// how many includes that held.
fn include(
    path: &str,
    key: &str,
    files: Files<'_>,
    at: &str,
) -> Result<(Value, usize), IncludeError> {
    let fail = |why: String| IncludeError {
        at: at.to_string(),
        path: path.to_string(),
        why,
    };
    let text = read(path, files).map_err(fail)?;
    if !path.ends_with(".toml") {
        return Ok((Value::String(text), 0));
    }
    let mut table: Table = text
        .parse()
        .map_err(|e: toml::de::Error| fail(e.to_string().trim_end().to_string()))?;
    let mut value = table
        .remove(key)
        .ok_or_else(|| fail(format!("the file has no `{key}`")))?;
    let inner = resolve_value(&mut value, key, files, at)?;
    Ok((value, inner))
}

fn read(path: &str, files: Files<'_>) -> Result<String, String> {
    match files {
        Files::Builtin => RUNTIME_FILES
            .iter()
            .find(|(name, _)| *name == path)
            .map(|(_, text)| text.to_string())
            .ok_or_else(|| "no such file was built into runbox (runtimes/…)".to_string()),
        Files::Dir(dir) => {
            let file = dir.join(path);
            std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(text: &str, dir: &Path) -> Result<Table, IncludeError> {
        let mut table: Table = text.parse().unwrap();
        resolve(&mut table, Files::Dir(dir)).map(|_| table)
    }

    #[test]
    fn an_include_is_its_files_text_and_a_toml_file_its_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("prelude.py"), "print(1)\n").unwrap();
        std::fs::write(
            dir.path().join("samples.toml"),
            "[[samples]]\nname = \"a\"\ncode = { include = \"prelude.py\" }\n",
        )
        .unwrap();
        let t = resolved(
            "[x]\nprogram = { include = \"prelude.py\" }\n\
             argv = [\"python\", { include = \"prelude.py\" }]\n\
             samples = { include = \"samples.toml\" }\n\
             other = { include = \"prelude.py\", more = 1 }\n",
            dir.path(),
        )
        .unwrap();
        assert_eq!(t["x"]["program"].as_str(), Some("print(1)\n"));
        assert_eq!(t["x"]["argv"][1].as_str(), Some("print(1)\n"));
        assert_eq!(t["x"]["samples"][0]["code"].as_str(), Some("print(1)\n"));
        assert!(
            t["x"]["other"].is_table(),
            "a table with more keys is no include"
        );
    }

    #[test]
    fn a_missing_file_or_key_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let e = resolved("[x]\np = { include = \"nope.py\" }\n", dir.path()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("`x.p`: { include = \"nope.py\" }: cannot read"),
            "{e}"
        );
        std::fs::write(dir.path().join("s.toml"), "other = 1\n").unwrap();
        let e = resolved("[x]\nsamples = { include = \"s.toml\" }\n", dir.path()).unwrap_err();
        assert!(e.to_string().contains("the file has no `samples`"), "{e}");
    }

    /// Every file of runtimes/ is built in as it is in the repository.
    #[test]
    fn the_built_in_files_are_the_repositorys() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        assert!(RUNTIME_FILES.len() >= 20, "{}", RUNTIME_FILES.len());
        for (path, text) in RUNTIME_FILES {
            assert_eq!(
                std::fs::read_to_string(root.join(path)).unwrap(),
                *text,
                "{path}"
            );
        }
    }
}
