//! A plugins file read: its runtimes, validated, with the files it includes (the built-in
//! list, compiled into the binary, or one from disk).

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Deserialize;

use super::error::ManifestError;
use super::include::{self, Files};
#[cfg(test)]
use super::schema::ArtifactSource;
use super::schema::{AdapterSpec, ArtifactSpec, PluginSpec};
use super::validate;

/// The default plugin list, embedded at build time.
pub const DEFAULT_MANIFEST: &str = include_str!("../../../plugins.toml");
/// The name shown in errors for the embedded list.
pub const DEFAULT_MANIFEST_NAME: &str = "<built-in plugins.toml>";

/// A parsed and validated `plugins.toml`.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// Where it came from, for messages (a path, or [`DEFAULT_MANIFEST_NAME`]).
    pub source: String,
    /// The directory relative `path` artifacts are resolved against.
    pub base_dir: PathBuf,
    /// The runtimes, in file order.
    pub plugins: IndexMap<String, PluginSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct ManifestFile {
    #[serde(default)]
    plugins: IndexMap<String, PluginSpec>,
}

impl Manifest {
    /// The list compiled into the binary.
    pub fn builtin() -> Result<Manifest, ManifestError> {
        let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Manifest::parse(
            DEFAULT_MANIFEST,
            DEFAULT_MANIFEST_NAME,
            &base,
            Files::Builtin,
        )
    }

    /// Reads a plugins file from disk.
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let base = path
            .parent()
            .map(Path::to_path_buf)
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from("."));
        Manifest::parse(&text, &path.display().to_string(), &base, Files::Dir(&base))
    }

    /// `path` if given, else the built-in list.
    pub fn load_or_builtin(path: Option<&Path>) -> Result<Manifest, ManifestError> {
        match path {
            Some(p) => Manifest::load(p),
            None => Manifest::builtin(),
        }
    }

    /// Reads the plugins file `text` (named `source` in errors), its relative artifact
    /// paths resolved against `base_dir` and its includes read from `files`.
    pub fn parse(
        text: &str,
        source: &str,
        base_dir: &Path,
        files: Files<'_>,
    ) -> Result<Manifest, ManifestError> {
        let syntax = |e: toml::de::Error| ManifestError::Syntax {
            file: source.to_string(),
            message: e.to_string().trim_end().to_string(),
        };
        let mut table: toml::Table = text.parse().map_err(syntax)?;
        let included =
            include::resolve(&mut table, files).map_err(|error| ManifestError::Include {
                file: source.to_string(),
                error,
            })?;
        // Without includes the text itself is read, for errors that point into it.
        let file: ManifestFile = match included {
            0 => toml::from_str(text).map_err(syntax)?,
            _ => toml::Value::Table(table).try_into().map_err(syntax)?,
        };
        if file.plugins.is_empty() {
            return Err(ManifestError::Empty {
                file: source.to_string(),
            });
        }
        let mut manifest = Manifest {
            source: source.to_string(),
            base_dir: base_dir.to_path_buf(),
            plugins: IndexMap::new(),
        };
        for (name, spec) in file.plugins {
            let spec = validate::entry(&name, spec, source, base_dir)?;
            manifest.insert(spec, source)?;
        }
        Ok(manifest)
    }

    /// Adds one checked entry; its commands must be free.
    fn insert(&mut self, spec: PluginSpec, source: &str) -> Result<(), ManifestError> {
        for command in &spec.commands {
            if let Some(owner) = self.command_owner(command) {
                return Err(ManifestError::CommandTaken {
                    file: source.to_string(),
                    runtime: spec.name.clone(),
                    command: command.clone(),
                    taken_by: owner.to_string(),
                });
            }
        }
        self.plugins.insert(spec.name.clone(), spec);
        Ok(())
    }

    /// The runtime that answers to the command `command`, if one does.
    pub fn command_owner(&self, command: &str) -> Option<&str> {
        self.plugins
            .values()
            .find(|p| p.commands.iter().any(|c| c == command))
            .map(|p| p.name.as_str())
    }

    /// Adds `other`'s runtimes after these (`--plugins-add`); a name both have is an
    /// error. Each entry keeps the paths it resolved against its own file.
    pub fn add(&mut self, other: Manifest) -> Result<(), ManifestError> {
        for (name, spec) in other.plugins {
            if self.plugins.contains_key(&name) {
                return Err(ManifestError::Taken {
                    file: other.source.clone(),
                    name,
                    taken_by: self.source.clone(),
                });
            }
            self.insert(spec, &other.source)?;
        }
        Ok(())
    }

    /// Every artifact the manifest uses, for fetching.
    pub fn artifacts(&self) -> impl Iterator<Item = (&PluginSpec, &ArtifactSpec)> {
        self.plugins.values().flat_map(|p| {
            let adapter = match &p.adapter {
                AdapterSpec::Artifact(a) => Some((p, a)),
                AdapterSpec::Builtin(_) => None,
            };
            adapter
                .into_iter()
                .chain(p.tools.values().map(move |t| (p, &t.artifact)))
                .chain(p.mounts.iter().map(move |m| (p, m.artifact())))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in list is compiled into the binary, which runs far from this
    /// repository: none of its artifacts may be a local `path` (quickjs's module aliases
    /// once were, and failed to prepare anywhere but the repository's root).
    #[test]
    fn the_builtin_list_names_no_local_files() {
        let manifest = Manifest::builtin().unwrap();
        for (plugin, artifact) in manifest.artifacts() {
            assert!(
                !matches!(artifact.source(), ArtifactSource::Path(_)),
                "runtime `{}` names the local file {:?}",
                plugin.name,
                artifact.source()
            );
        }
    }

    fn parse(text: &str) -> Result<Manifest, ManifestError> {
        Manifest::parse(
            text,
            "test.toml",
            Path::new("/base"),
            Files::Dir(Path::new("/base")),
        )
    }

    #[test]
    fn builtin_manifest_parses() {
        let m = Manifest::builtin().unwrap();
        for name in ["python", "ruby", "php-cgi", "quickjs"] {
            assert!(m.plugins.contains_key(name), "missing {name}");
        }
    }

    /// A snapshot program is one text or a list of whole ones; a part over what a
    /// stand-in can pass as an argument is refused (python's one 59 KB text crashed every
    /// stand-in run).
    #[test]
    fn snapshot_programs_come_in_parts_each_one_an_argument_can_hold() {
        let reactor = |program: &str| {
            format!(
                r#"
[plugins.r]
language = "R"
version = "1"
extension = "r"
adapter = "command"
[plugins.r.tools.t]
path = "x.wasm"
sha256 = "{}"
[plugins.r.tools.t.reactor]
entry = "turn"
alloc = "alloc"
[plugins.r.tools.t.reactor.snapshot]
program = {program}
"#,
                "0".repeat(64)
            )
        };
        let snapshot = |m: &Manifest| {
            m.plugins["r"].tools["t"]
                .reactor
                .as_ref()
                .and_then(|r| r.snapshot.clone())
                .unwrap()
        };
        let one = parse(&reactor("\"a = 1\"")).unwrap();
        assert_eq!(snapshot(&one).program, ["a = 1"]);
        let parts = parse(&reactor("[\"a = 1\", \"b = a\"]")).unwrap();
        assert_eq!(snapshot(&parts).program, ["a = 1", "b = a"]);
        assert_eq!(snapshot(&parts).text(), "a = 1\nb = a");
        let big = format!(
            "\"{}\"",
            "#".repeat(super::super::schema::MAX_PROGRAM_PART_BYTES + 1)
        );
        let e = parse(&reactor(&format!("[\"a = 1\", {big}]")))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("reactor.snapshot.program") && e.contains("part 2 is 49153 bytes"),
            "{e}"
        );
        let e = parse(&reactor("[]")).unwrap_err().to_string();
        assert!(e.contains("names no program"), "{e}");
        // Each of the built-in list's parts fits.
        let builtin = Manifest::builtin().unwrap();
        let python = &builtin.plugins["python"].tools["python"];
        assert_eq!(
            python
                .reactor
                .as_ref()
                .unwrap()
                .snapshot
                .as_ref()
                .unwrap()
                .program
                .len(),
            3
        );
    }

    #[test]
    fn syntax_error_names_the_file() {
        let e = parse("[plugins.x\n").unwrap_err().to_string();
        assert!(e.contains("test.toml"), "{e}");
    }

    #[test]
    fn bad_sha_names_entry_and_field() {
        let e = parse(
            r#"
[plugins.py]
language = "Python"
version = "1"
extension = "py"
adapter = "command"
[plugins.py.tools.python]
path = "x.wasm"
sha256 = "abc"
"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("test.toml"), "{e}");
        assert!(e.contains("`py`"), "{e}");
        assert!(e.contains("tools.python.sha256"), "{e}");
    }

    #[test]
    fn missing_field_is_reported() {
        let e = parse(
            r#"
[plugins.py]
language = "Python"
extension = "py"
adapter = "command"
"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("test.toml") && e.contains("version"), "{e}");
    }

    #[test]
    fn unknown_adapter_is_reported() {
        let e = parse(
            r#"
[plugins.py]
language = "Python"
version = "1"
extension = "py"
adapter = "nope"
"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("adapter") && e.contains("nope"), "{e}");
    }

    #[test]
    fn another_file_adds_runtimes_beside_and_may_not_take_a_name() {
        let mut base = Manifest::builtin().unwrap();
        let extra = |name: &str| {
            parse(&format!(
                "[plugins.{name}]\nlanguage = \"L\"\nversion = \"1\"\nextension = \"l\"\nadapter = \"command\"\n"
            ))
            .unwrap()
        };
        base.add(extra("lua")).unwrap();
        assert!(base.plugins.contains_key("python") && base.plugins.contains_key("lua"));
        assert_eq!(base.plugins.keys().last().unwrap(), "lua");
        let e = base.add(extra("python")).unwrap_err().to_string();
        assert!(
            e.contains("test.toml") && e.contains("`python`") && e.contains("built-in"),
            "{e}"
        );
    }

    #[test]
    fn relative_paths_resolve_against_the_file() {
        let m = parse(&format!(
            r#"
[plugins.py]
language = "Python"
version = "1"
extension = "py"
adapter = "command"
[plugins.py.tools.python]
path = "x.wasm"
sha256 = "{}"
"#,
            "a".repeat(64)
        ))
        .unwrap();
        let t = &m.plugins["py"].tools["python"];
        assert_eq!(
            t.artifact.source(),
            ArtifactSource::Path(Path::new("/base/x.wasm"))
        );
    }
}
