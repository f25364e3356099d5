//! Checking one `plugins.toml` entry, one function per section: its name, its required
//! fields, its adapter, `own-files`, tools, derived files, mounts and settings. Relative
//! artifact paths are resolved against the file's directory on the way. Every error
//! names the file, the entry and the field.

use std::path::Path;

use super::error::ManifestError;
use super::schema::{AdapterSpec, ArtifactSpec, PluginSpec, ToolSpec};

/// Why one field is refused: (field, message); the caller adds the file and entry.
type FieldError = (String, String);

fn refuse(field: impl Into<String>, message: impl Into<String>) -> FieldError {
    (field.into(), message.into())
}

/// The entry `name` of `source` checked, its paths resolved against `base_dir`.
pub(super) fn entry(
    name: &str,
    mut spec: PluginSpec,
    source: &str,
    base_dir: &Path,
) -> Result<PluginSpec, ManifestError> {
    let checked = runtime_name(name)
        .and_then(|()| required_fields(&spec))
        .and_then(|()| adapter(&mut spec.adapter, base_dir))
        .and_then(|()| own_files(&spec))
        .and_then(|()| commands(&spec))
        .and_then(|()| tools(&mut spec, base_dir))
        .and_then(|()| derived(&spec))
        .and_then(|()| mounts(&mut spec, base_dir))
        .and_then(|()| packages(&mut spec, base_dir))
        .and_then(|()| settings(&spec));
    if let Err((field, message)) = checked {
        return Err(ManifestError::Field {
            file: source.to_string(),
            entry: name.to_string(),
            field,
            message,
        });
    }
    spec.name = name.to_string();
    Ok(spec)
}

fn packages(spec: &mut PluginSpec, base_dir: &Path) -> Result<(), FieldError> {
    if !spec.packages.is_empty() && spec.packages_dir.is_none() {
        return Err(refuse(
            "packages",
            "this runtime has no `packages-dir`: it cannot show packages to programs",
        ));
    }
    for package in &mut spec.packages {
        package
            .check(base_dir)
            .map_err(|m| refuse("packages", &m))?;
    }
    Ok(())
}

fn runtime_name(name: &str) -> Result<(), FieldError> {
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    if name.is_empty() || !name.bytes().all(allowed) {
        return Err(refuse(
            "name",
            "runtime names use only letters, digits, `-` and `_`",
        ));
    }
    Ok(())
}

fn required_fields(spec: &PluginSpec) -> Result<(), FieldError> {
    for (field, value) in [
        ("language", &spec.language),
        ("version", &spec.version),
        ("extension", &spec.extension),
    ] {
        if value.trim().is_empty() {
            return Err(refuse(field, "must not be empty"));
        }
    }
    Ok(())
}

fn adapter(adapter: &mut AdapterSpec, base_dir: &Path) -> Result<(), FieldError> {
    match adapter {
        AdapterSpec::Builtin(a) if !crate::adapters::BUILTIN.iter().any(|(n, _)| n == a) => {
            let known: Vec<_> = crate::adapters::BUILTIN.iter().map(|(n, _)| *n).collect();
            Err(refuse(
                "adapter",
                format!(
                    "unknown built-in adapter `{a}` (built-in: {}); or give an artifact table",
                    known.join(", ")
                ),
            ))
        }
        AdapterSpec::Builtin(_) => Ok(()),
        AdapterSpec::Artifact(a) => artifact("adapter", a, base_dir),
    }
}

fn own_files(spec: &PluginSpec) -> Result<(), FieldError> {
    let lists = [
        ("own-files", Some(&spec.own_files)),
        ("command-own-files", spec.command_own_files.as_ref()),
    ];
    for (field, list) in lists {
        for (i, own) in list.into_iter().flatten().enumerate() {
            let path = own.strip_suffix('/').unwrap_or(own);
            crate::files::normalize_path(path)
                .map_err(|rule| refuse(format!("{field}[{i}]"), rule))?;
        }
    }
    Ok(())
}

/// Command names a shell can type: letters, digits and `._+-`, not starting with `-`.
fn commands(spec: &PluginSpec) -> Result<(), FieldError> {
    for (i, command) in spec.commands.iter().enumerate() {
        let plain = command
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c));
        if command.is_empty() || !plain || command.starts_with(['-', '.']) {
            return Err(refuse(
                format!("commands[{i}]"),
                format!("`{command}` is not a command name (letters, digits and `._+-`)"),
            ));
        }
    }
    Ok(())
}

fn tools(spec: &mut PluginSpec, base_dir: &Path) -> Result<(), FieldError> {
    for (tool, t) in spec.tools.iter_mut() {
        artifact(&format!("tools.{tool}"), &mut t.artifact, base_dir)?;
        tool_recipe(t).map_err(|(f, m)| refuse(format!("tools.{tool}.{f}"), m))?;
    }
    Ok(())
}

/// A tool's stubbed imports and its reactor settings.
fn tool_recipe(tool: &ToolSpec) -> Result<(), FieldError> {
    for key in tool.stub_imports.keys() {
        if super::schema::stub_import_parts(key).is_none() {
            return Err(refuse(
                "stub-imports",
                format!("`{key}` is not `module.name`, e.g. \"host.call\""),
            ));
        }
    }
    let Some(r) = &tool.reactor else {
        return Ok(());
    };
    if r.entry.is_empty() || r.alloc.is_empty() {
        return Err(refuse(
            "reactor",
            "`entry` and `alloc` name the reactor's exports",
        ));
    }
    if let Some(bad) = r
        .snapshot
        .iter()
        .flat_map(|s| s.env.iter())
        .find(|e| !e.contains('='))
    {
        return Err(refuse(
            "reactor.snapshot.env",
            format!("`{bad}` is not KEY=VALUE"),
        ));
    }
    let max = super::schema::MAX_PROGRAM_PART_BYTES;
    if let Some(snapshot) = &r.snapshot {
        if snapshot.program.is_empty() {
            return Err(refuse("reactor.snapshot.program", "names no program"));
        }
        if let Some((i, part)) = snapshot
            .program
            .iter()
            .enumerate()
            .find(|(_, p)| p.len() > max)
        {
            return Err(refuse(
                "reactor.snapshot.program",
                format!(
                    "part {} is {} bytes, over {max}: before its snapshot is taken the \
                     runtime is served with each part handed over as an argument; split it \
                     into a list of whole programs, run in order (`program = [{{ include = \
                     \"a.py\" }}, {{ include = \"b.py\" }}]`)",
                    i + 1,
                    part.len()
                ),
            ));
        }
    }
    Ok(())
}

fn derived(spec: &PluginSpec) -> Result<(), FieldError> {
    for (i, d) in spec.derived.iter().enumerate() {
        if crate::files::normalize_path(&d.dir).is_err() {
            return Err(refuse(
                format!("derived[{i}].dir"),
                "must be a relative directory, e.g. `pch`",
            ));
        }
        if d.run.first().is_none_or(|t| !spec.tools.contains_key(t)) {
            return Err(refuse(
                format!("derived[{i}].run"),
                "must start with the name of one of this entry's tools",
            ));
        }
        if let Some(bad) = d
            .files
            .keys()
            .find(|f| crate::files::normalize_path(f).is_err())
        {
            return Err(refuse(
                format!("derived[{i}].files"),
                format!("`{bad}` is not a relative path"),
            ));
        }
    }
    Ok(())
}

fn mounts(spec: &mut PluginSpec, base_dir: &Path) -> Result<(), FieldError> {
    for (i, m) in spec.mounts.iter_mut().enumerate() {
        let (kind, artifact_spec) =
            match (&mut m.archive, &mut m.file) {
                (Some(a), None) => ("archive", a),
                (None, Some(f)) => ("file", f),
                _ => return Err(refuse(
                    format!("mounts[{i}]"),
                    "give exactly one of `archive` (unpacked at `at`) or `file` (shown at `at`)",
                )),
            };
        artifact(&format!("mounts[{i}].{kind}"), artifact_spec, base_dir)?;
        if !m.at.starts_with('/') || (kind == "file" && m.at.trim_end_matches('/').is_empty()) {
            return Err(refuse(
                format!("mounts[{i}].at"),
                "must be an absolute path in the sandbox, e.g. `/usr` (for a file, its full path)",
            ));
        }
    }
    Ok(())
}

fn settings(spec: &PluginSpec) -> Result<(), FieldError> {
    for reserved in ["name", "language", "version", "extension", "session-state"] {
        if spec.settings.contains_key(reserved) {
            return Err(refuse(
                format!("settings.{reserved}"),
                "is set by runbox from the entry itself; remove it",
            ));
        }
    }
    Ok(())
}

/// An artifact at `field` checked, its relative `path` resolved against `base_dir`.
fn artifact(field: &str, spec: &mut ArtifactSpec, base_dir: &Path) -> Result<(), FieldError> {
    spec.validate()
        .map_err(|(f, m)| refuse(format!("{field}.{f}"), m))?;
    if let Some(p) = &spec.path {
        if p.is_relative() {
            spec.path = Some(base_dir.join(p));
        }
    }
    Ok(())
}
