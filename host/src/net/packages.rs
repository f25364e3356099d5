//! Packages at run time (docs/network.md, "Packages at run time"): the host's own `pip`
//! fetches the wheels a program asks for (within `[packages]`), each is checked to be
//! pure Python, and their files go back to the program, which writes them into its run.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use serde_json::json;

use super::refusal::Refusal;
use crate::upstream::answer::Failure;

/// The longest one `pip download` may take (the run's own deadline may come first).
const PIP_TIMEOUT: Duration = Duration::from_secs(300);
/// Answers of installs kept in memory, in bytes at most: past it, an install asked for
/// again runs pip again (its wheels are still on disk).
const KEPT_ANSWERS_BYTES: usize = 64 << 20;
/// What pip takes as a file rather than a package's name.
const ARCHIVES: [&str; 6] = [".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".egg"];

/// `[packages]` of the policy, checked.
#[derive(Debug, Clone)]
pub struct PackagesConfig {
    /// Normalised names; `*` allows any.
    pub allow: Vec<String>,
    pub index_url: Option<String>,
    pub find_links: Vec<String>,
    pub pip: Vec<String>,
    pub max_bytes: u64,
}

/// A name as PEP 503 compares them: lower-case, runs of `-`, `_`, `.` as one `-`.
pub fn normalise(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The name of requirement `req` (`name[extras] specifiers`), or why it is not one this
/// device takes: no URL, path or pip option can pass.
pub fn requirement_name(req: &str) -> Result<String, String> {
    let req = req.trim();
    let name_end = req
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(req.len());
    let name = &req[..name_end];
    let rest = &req[name_end..];
    let rest_ok = rest
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || " []<>=!~,.*+_-".contains(c));
    let archive = ARCHIVES
        .iter()
        .any(|a| name.to_ascii_lowercase().ends_with(a));
    if name.is_empty()
        || !name.starts_with(|c: char| c.is_ascii_alphanumeric())
        || !rest_ok
        || archive
    {
        return Err(format!(
            "`{req}` is not a package requirement (NAME, NAME==VERSION, NAME>=VERSION; no URL, path or option)"
        ));
    }
    Ok(normalise(name))
}

/// One wheel installed.
#[derive(Debug, Clone)]
struct Wheel {
    file: String,
    name: String,
    version: String,
    sha256: String,
    files: Vec<(String, Vec<u8>)>,
}

/// The host's installer: its settings, where wheels are kept, and installs already made.
pub struct Installer {
    config: PackagesConfig,
    cache: PathBuf,
    /// Answers of installs made, by their requirements (at most [`KEPT_ANSWERS_BYTES`]).
    done: Mutex<HashMap<Vec<String>, Arc<Vec<u8>>>>,
    /// One pip at a time: programs cannot start a crowd of them.
    pip: tokio::sync::Mutex<()>,
    /// Variables of runbox's environment pip does not get (the secrets' values).
    hidden_env: Vec<String>,
}

impl Installer {
    pub fn new(config: PackagesConfig, cache: PathBuf, hidden_env: Vec<String>) -> Installer {
        Installer {
            config,
            cache,
            done: Mutex::new(HashMap::new()),
            pip: tokio::sync::Mutex::new(()),
            hidden_env,
        }
    }

    /// The answer to `{"install": reqs}`, or why not.
    pub async fn install(&self, reqs: &[String], policy: &Path) -> Result<Vec<u8>, Refusal> {
        if reqs.is_empty() {
            return Err(Refusal::new(
                Failure::BadRequest,
                "`install` names no package",
            ));
        }
        let any = self.config.allow.iter().any(|a| a == "*");
        for req in reqs {
            let name = requirement_name(req).map_err(|m| Refusal::new(Failure::BadRequest, m))?;
            if !any && !self.config.allow.contains(&name) {
                return Err(Refusal::new(
                    Failure::NotAllowed,
                    format!(
                        "package `{name}` is not in the network policy's [packages] allow list ({}); allowed: {}",
                        policy.display(),
                        self.config.allow.join(", ")
                    ),
                ));
            }
        }
        let key: Vec<String> = reqs.iter().map(|r| r.trim().to_string()).collect();
        if let Some(answer) = self
            .done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(answer.as_ref().clone());
        }
        let files = {
            let _one = self.pip.lock().await;
            self.download(&key).await?
        };
        let max = self.config.max_bytes;
        // Unzipping and hashing are CPU work: off the async workers.
        let wheels = tokio::task::spawn_blocking(move || {
            let mut wheels = Vec::new();
            let mut total = 0u64;
            for file in files {
                let wheel = read_wheel(&file, max.saturating_sub(total))?;
                total += wheel.files.iter().map(|(_, b)| b.len() as u64).sum::<u64>();
                wheels.push(wheel);
            }
            Ok::<_, Refusal>(wheels)
        })
        .await
        .map_err(|e| Refusal::new(Failure::Unavailable, format!("the install failed: {e}")))??;
        let answer = answer_of(&wheels);
        for w in &wheels {
            tracing::info!(wheel = %w.file, sha256 = %w.sha256, "package installed for a run");
        }
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        let kept: usize = done.values().map(|a| a.len()).sum();
        if kept + answer.len() <= KEPT_ANSWERS_BYTES {
            done.insert(key, Arc::new(answer.clone()));
        }
        Ok(answer)
    }

    /// Runs the host's `pip download` for `reqs`: the wheels it resolved to.
    async fn download(&self, reqs: &[String]) -> Result<Vec<PathBuf>, Refusal> {
        std::fs::create_dir_all(&self.cache).map_err(|e| {
            Refusal::new(
                Failure::Unavailable,
                format!("cannot make the wheel cache {}: {e}", self.cache.display()),
            )
        })?;
        let (program, base) = self
            .config
            .pip
            .split_first()
            .ok_or_else(|| Refusal::new(Failure::Unavailable, "no pip command"))?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(base)
            .args([
                "download",
                "--only-binary=:all:",
                "--python-version",
                "3.15",
            ])
            .args([
                "--disable-pip-version-check",
                "--no-input",
                "--progress-bar",
                "off",
            ])
            .arg("--dest")
            .arg(&self.cache);
        if let Some(index) = &self.config.index_url {
            cmd.args(["--index-url", index]);
        } else if !self.config.find_links.is_empty() {
            cmd.arg("--no-index");
        }
        for link in &self.config.find_links {
            cmd.args(["--find-links", link]);
        }
        cmd.arg("--").args(reqs);
        // pip keeps the operator's own configuration (its PIP_* variables, pip.conf), but
        // not the secrets' values, and works in an empty directory (a name is never a file).
        for name in &self.hidden_env {
            cmd.env_remove(name);
        }
        let workdir = tempfile::tempdir().map_err(|e| {
            Refusal::new(
                Failure::Unavailable,
                format!("cannot make pip's directory: {e}"),
            )
        })?;
        cmd.current_dir(workdir.path());
        cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
        let out = tokio::time::timeout(PIP_TIMEOUT, cmd.output())
            .await
            .map_err(|_| Refusal::new(Failure::Timeout, "pip took longer than 300 s"))?
            .map_err(|e| {
                Refusal::new(
                    Failure::Unavailable,
                    format!("cannot run the host's pip ({program}): {e}"),
                )
            })?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("ERROR")).collect();
            let said = if said.is_empty() {
                format!("pip exited with {}", out.status)
            } else {
                said.join(" ")
            };
            return Err(Refusal::new(
                Failure::Unavailable,
                format!(
                    "the host's pip found no pure-Python wheel for {}: {said}",
                    reqs.join(" ")
                ),
            ));
        }
        let wheels: Vec<PathBuf> = stdout
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                l.strip_prefix("Saved ")
                    .or_else(|| l.strip_prefix("File was already downloaded "))
            })
            .filter(|p| p.ends_with(".whl"))
            .map(|p| {
                self.cache
                    .join(Path::new(p.trim()).file_name().unwrap_or_default())
            })
            .collect();
        if wheels.is_empty() {
            return Err(Refusal::new(
                Failure::Unavailable,
                format!("the host's pip downloaded no wheel for {}", reqs.join(" ")),
            ));
        }
        Ok(wheels)
    }
}

/// A wheel's files, after checking it is pure Python and fits in `room` bytes.
fn read_wheel(path: &Path, room: u64) -> Result<Wheel, Refusal> {
    let file = path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let bad = |m: String| Refusal::new(Failure::NotAllowed, m);
    let Some(parsed) = crate::wheel::WheelName::parse(&file) else {
        return Err(bad(format!("{file} is not a wheel's file name")));
    };
    if !parsed.pure {
        return Err(bad(format!(
            "{file} has native code (its tags are {}, not ABI none and platform any): only pure-Python wheels can load in the sandbox",
            parsed.tags
        )));
    }
    let (package, version) = (parsed.name.to_string(), parsed.version.to_string());
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    if size > room {
        return Err(Refusal::new(
            Failure::Limit,
            format!("{file} is larger than the network policy's [packages] max_bytes"),
        ));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| Refusal::new(Failure::Unavailable, format!("cannot read {file}: {e}")))?;
    let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| bad(format!("{file} is not a zip archive: {e}")))?;
    let mut files = Vec::new();
    let mut total = 0u64;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| bad(format!("{file}: {e}")))?;
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().to_string();
        if crate::wheel::is_compiled(&name) {
            return Err(bad(format!(
                "{file} holds native code ({name}): only pure-Python wheels can load in the sandbox"
            )));
        }
        let Some(safe) = entry.enclosed_name() else {
            return Err(bad(format!(
                "{file} holds a path outside the package: {name}"
            )));
        };
        let safe = safe.to_string_lossy().into_owned();
        // What an entry says of its size is not trusted: its bytes are counted as they
        // inflate, and no more than the room left is read.
        let left = room.saturating_sub(total);
        let mut content = Vec::with_capacity(entry.size().min(left).min(1 << 20) as usize);
        (&mut entry)
            .take(left.saturating_add(1))
            .read_to_end(&mut content)
            .map_err(|e| bad(format!("{file}: {name}: {e}")))?;
        total = total.saturating_add(content.len() as u64);
        if total > room {
            return Err(Refusal::new(
                Failure::Limit,
                "the packages unpack to more than the network policy's [packages] max_bytes"
                    .to_string(),
            ));
        }
        files.push((safe, content));
    }
    Ok(Wheel {
        name: package,
        version,
        file,
        sha256,
        files,
    })
}

fn answer_of(wheels: &[Wheel]) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let installed: Vec<_> = wheels
        .iter()
        .map(|w| json!({"name": w.name, "version": w.version, "sha256": w.sha256, "wheel": w.file}))
        .collect();
    let files: Vec<_> = wheels
        .iter()
        .flat_map(|w| w.files.iter().map(|(p, b)| json!([p, b64.encode(b)])))
        .collect();
    json!({"ok": true, "installed": installed, "files": files})
        .to_string()
        .into_bytes()
}

/// The host's pip: `pip3` or `pip` on the PATH, else `python3 -m pip`.
pub fn default_pip() -> Vec<String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["pip3", "pip"] {
        if std::env::split_paths(&path).any(|d| d.join(name).is_file()) {
            return vec![name.to_string()];
        }
    }
    vec!["python3".into(), "-m".into(), "pip".into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_are_names_and_versions_only() {
        assert_eq!(requirement_name("Foo_Bar.baz==1.0").unwrap(), "foo-bar-baz");
        assert_eq!(
            requirement_name("requests[socks] >= 2, <3").unwrap(),
            "requests"
        );
        for bad in [
            "--index-url=http://x",
            "-e .",
            "pkg @ http://x/y.whl",
            "./local",
            "",
            "x; rm",
        ] {
            assert!(requirement_name(bad).is_err(), "{bad}");
        }
    }

    fn wheel(dir: &Path, name: &str, entries: &[(&str, &[u8])]) -> PathBuf {
        let path = dir.join(name);
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        for (entry, body) in entries {
            zip.start_file(*entry, zip::write::SimpleFileOptions::default())
                .unwrap();
            std::io::Write::write_all(&mut zip, body).unwrap();
        }
        zip.finish().unwrap();
        path
    }

    #[test]
    fn only_pure_python_wheels_pass() {
        let dir = tempfile::tempdir().unwrap();
        let pure = wheel(
            dir.path(),
            "tiny-1.0-py3-none-any.whl",
            &[("tiny/__init__.py", b"X = 1\n")],
        );
        let w = read_wheel(&pure, 1 << 20).unwrap();
        assert_eq!(
            (w.name.as_str(), w.version.as_str(), w.files.len()),
            ("tiny", "1.0", 1)
        );
        assert_eq!(w.sha256.len(), 64);
        let tagged = wheel(
            dir.path(),
            "fast-1.0-cp311-cp311-linux_x86_64.whl",
            &[("fast/__init__.py", b"")],
        );
        assert!(read_wheel(&tagged, 1 << 20)
            .unwrap_err()
            .message
            .contains("native code"));
        let hidden = wheel(
            dir.path(),
            "sly-1.0-py3-none-any.whl",
            &[("sly/_x.so", b"\x7fELF")],
        );
        assert!(read_wheel(&hidden, 1 << 20)
            .unwrap_err()
            .message
            .contains("holds native code"));
        let escape = wheel(
            dir.path(),
            "esc-1.0-py3-none-any.whl",
            &[("../../etc/x.py", b"")],
        );
        assert!(read_wheel(&escape, 1 << 20)
            .unwrap_err()
            .message
            .contains("outside"));
        assert!(read_wheel(&pure, 2)
            .unwrap_err()
            .message
            .contains("max_bytes"));
        // A megabyte of zeros packs into about a kilobyte: counted as it inflates.
        let zeros = vec![0u8; 1 << 20];
        let bomb = wheel(
            dir.path(),
            "bomb-1.0-py3-none-any.whl",
            &[("bomb/data.py", &zeros)],
        );
        assert!(std::fs::metadata(&bomb).unwrap().len() < 20_000);
        assert!(read_wheel(&bomb, 50_000)
            .unwrap_err()
            .message
            .contains("max_bytes"));
        assert!(requirement_name("evil.whl").is_err() && requirement_name("x.tar.gz").is_err());
    }
}
