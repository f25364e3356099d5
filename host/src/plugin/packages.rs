//! Pure-Python packages for a runtime (`[[plugins.NAME.packages]]`, or
//! `--python-packages FILE` for `python`): wheels fetched with the operator's `pip`
//! (`pip download --no-deps`) or read from disk, each pinned by its sha256, refused when
//! it holds compiled code, unpacked once into the cache, and shown read-only to every run
//! and session at the runtime's `packages-dir`.
//!
//! The sandbox has no network, rightly; a model that needs a package the runtime lacks
//! gets it only this way. A wheel is data the interpreter reads, like the standard
//! library: nothing of it runs on the host.
//!
//! `packages-dir` lies inside the directory of one of the runtime's mounts (python's is
//! `/usr/local/lib/site-packages`, beside `/usr/local/lib/python315.zip`): that mount's
//! files and the unpacked wheels are shown together as one directory, so the sandbox's
//! preopened directories, which a pre-initialised interpreter already knows, do not
//! change.

use std::io::Read;
use std::path::{Component, Path};

use sha2::{Digest, Sha256};

use crate::manifest::{ArtifactSpec, PackageSpec};
use crate::plugin::artifact::{ArtifactError, Cache, Progress};
use crate::sandbox::Mount;

/// File name endings of compiled code a pure-Python wheel must not hold.

#[derive(Debug, thiserror::Error)]
pub enum PackagesError {
    #[error("package {wheel} holds compiled code ({file}): only pure-Python wheels (…-none-any.whl) can run in the sandbox")]
    Compiled { wheel: String, file: String },
    #[error("package {wheel} is not a pure-Python wheel (its tags are `{tags}`, not …-none-any): only those can run in the sandbox")]
    Platform { wheel: String, tags: String },
    #[error("package {wheel} cannot be read: {why}")]
    Unreadable { wheel: String, why: String },
    #[error("`packages-dir` {dir} is not inside the directory of one of the runtime's mounts")]
    NoMount { dir: String },
    #[error("{file}:{line}: {why}")]
    Requirements {
        file: String,
        line: usize,
        why: String,
    },
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
}

/// The packages of a requirements file in pip's hash-checking form: one per line,
/// `NAME==VERSION --hash=sha256:HEX` or `PATH.whl --hash=sha256:HEX` (a path relative to
/// the file); `#` comments and blank lines are skipped.
pub fn parse_requirements(path: &Path) -> Result<Vec<PackageSpec>, PackagesError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| PackagesError::Requirements {
        file: file.clone(),
        line: 0,
        why: format!("cannot read it: {e}"),
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut packages = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line
            .split_once('#')
            .map_or(line, |(before, _)| before)
            .trim();
        if line.is_empty() {
            continue;
        }
        let refuse = |why: String| PackagesError::Requirements {
            file: file.clone(),
            line: n + 1,
            why,
        };
        let mut words = line.split_whitespace();
        let what = words.next().unwrap_or_default();
        let hash = words
            .find_map(|w| w.strip_prefix("--hash=sha256:"))
            .ok_or_else(|| {
                refuse(format!(
                    "`{what}` has no --hash=sha256:HEX: every package is pinned by its sha256"
                ))
            })?;
        let mut package = if what.ends_with(".whl") {
            PackageSpec {
                pypi: None,
                path: Some(what.into()),
                sha256: hash.to_string(),
            }
        } else {
            PackageSpec {
                pypi: Some(what.to_string()),
                path: None,
                sha256: hash.to_string(),
            }
        };
        package.check(base).map_err(refuse)?;
        packages.push(package);
    }
    Ok(packages)
}

/// Shows `packages` at `packages_dir` in the sandbox: the mount whose directory holds it
/// gets the unpacked wheels beside its own files.
pub fn mount_packages(
    packages: &[PackageSpec],
    packages_dir: &str,
    mounts: &mut [Mount],
    cache: &Cache,
    progress: &Progress,
) -> Result<(), PackagesError> {
    let dir = packages_dir.trim_end_matches('/');
    let (parent, name) = dir.rsplit_once('/').unwrap_or(("", dir));
    let parent = if parent.is_empty() { "/" } else { parent };
    let mount = mounts
        .iter_mut()
        .find(|m| {
            m.guest.trim_end_matches('/') == parent.trim_end_matches('/') || m.guest == parent
        })
        .ok_or_else(|| PackagesError::NoMount {
            dir: packages_dir.to_string(),
        })?;
    let mut wheels = Vec::new();
    for package in packages {
        let wheel = match (&package.pypi, &package.path) {
            (Some(requirement), _) => cache.wheel(requirement, &package.sha256, progress)?,
            (None, Some(path)) => {
                let spec = ArtifactSpec {
                    npm: None,
                    pypi: None,
                    path: Some(path.clone()),
                    file: None,
                    inner: None,
                    embedded: None,
                    sha256: package.sha256.clone(),
                };
                cache.checked_wheel(path, &spec)?;
                path.clone()
            }
            (None, None) => unreachable!("checked when read"),
        };
        check_pure(&wheel)?;
        wheels.push(wheel);
    }
    let mut key = Sha256::new();
    key.update(mount.host.to_string_lossy().as_bytes());
    key.update(name.as_bytes());
    for package in packages {
        key.update(package.sha256.as_bytes());
    }
    let key = hex::encode(&key.finalize()[..16]);
    let host = cache.mount_with(&mount.host, &key, |into| {
        let target = into.join(name);
        for wheel in &wheels {
            unpack(wheel, &target)?;
        }
        Ok(())
    })?;
    mount.host = host;
    Ok(())
}

fn wheel_name(wheel: &Path) -> String {
    wheel.file_name().map_or_else(
        || wheel.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Refuses a wheel whose tags name a platform, or that holds compiled code.
fn check_pure(wheel: &Path) -> Result<(), PackagesError> {
    let name = wheel_name(wheel);
    let Some(parsed) = crate::wheel::WheelName::parse(&name) else {
        return Err(PackagesError::Unreadable {
            wheel: name,
            why: "its file name is not NAME-VERSION-PYTHON-ABI-PLATFORM.whl".into(),
        });
    };
    if !parsed.pure {
        let tags = parsed.tags;
        return Err(PackagesError::Platform { wheel: name, tags });
    }
    let archive = open(wheel)?;
    for i in 0..archive.len() {
        let entry_name = archive.name_for_index(i).unwrap_or_default().to_string();
        if crate::wheel::is_compiled(&entry_name) {
            return Err(PackagesError::Compiled {
                wheel: name,
                file: entry_name,
            });
        }
    }
    Ok(())
}

fn open(wheel: &Path) -> Result<zip::ZipArchive<std::fs::File>, PackagesError> {
    let unreadable = |why: String| PackagesError::Unreadable {
        wheel: wheel_name(wheel),
        why,
    };
    let file = std::fs::File::open(wheel).map_err(|e| unreadable(e.to_string()))?;
    zip::ZipArchive::new(file).map_err(|e| unreadable(e.to_string()))
}

/// Unpacks `wheel` into `into` (every member a relative path with no `..`).
fn unpack(wheel: &Path, into: &Path) -> Result<(), ArtifactError> {
    let io = |what: String, e: std::io::Error| ArtifactError::io(what, e);
    let mut archive = open(wheel)
        .map_err(|e| ArtifactError::io(e.to_string(), std::io::ErrorKind::InvalidData.into()))?;
    for i in 0..archive.len() {
        let mut member = archive.by_index(i).map_err(|e| {
            io(
                format!("cannot read {}", wheel.display()),
                std::io::Error::other(e.to_string()),
            )
        })?;
        let rel = Path::new(member.name()).to_path_buf();
        if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(io(
                format!("{} holds an unsafe path {}", wheel.display(), rel.display()),
                std::io::ErrorKind::InvalidData.into(),
            ));
        }
        let path = into.join(&rel);
        if member.is_dir() {
            std::fs::create_dir_all(&path)
                .map_err(|e| io(format!("cannot create {}", path.display()), e))?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| io(format!("cannot create {}", parent.display()), e))?;
        }
        let mut bytes = Vec::new();
        member
            .read_to_end(&mut bytes)
            .map_err(|e| io(format!("cannot read {}", wheel.display()), e))?;
        std::fs::write(&path, bytes)
            .map_err(|e| io(format!("cannot write {}", path.display()), e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn wheel(dir: &Path, name: &str, members: &[&str]) -> std::path::PathBuf {
        let path = dir.join(name);
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        for member in members {
            zip.start_file(*member, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(b"x = 1\n").unwrap();
        }
        zip.finish().unwrap();
        path
    }

    #[test]
    fn compiled_or_platform_wheels_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let pure = wheel(
            dir.path(),
            "tiny-1.0-py3-none-any.whl",
            &["tiny/__init__.py"],
        );
        check_pure(&pure).unwrap();
        let sneaky = wheel(
            dir.path(),
            "sneaky-1.0-py3-none-any.whl",
            &[
                "sneaky/__init__.py",
                "sneaky/_speedups.cpython-311-x86_64-linux-gnu.so",
            ],
        );
        let e = check_pure(&sneaky).unwrap_err().to_string();
        assert!(
            e.contains("sneaky-1.0-py3-none-any.whl") && e.contains("_speedups"),
            "{e}"
        );
        let platform = wheel(
            dir.path(),
            "fast-1.0-cp311-cp311-linux_x86_64.whl",
            &["fast.py"],
        );
        let e = check_pure(&platform).unwrap_err().to_string();
        assert!(e.contains("fast-1.0-cp311-cp311-linux_x86_64.whl"), "{e}");
    }

    #[test]
    fn requirements_are_pinned_by_hash() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("requirements.txt");
        let hash = "a".repeat(64);
        std::fs::write(
            &file,
            format!("# pure ones\nsix==1.17.0 --hash=sha256:{hash}\n\nwheels/x-1.0-py3-none-any.whl --hash=sha256:{hash}  # local\n"),
        )
        .unwrap();
        let packages = parse_requirements(&file).unwrap();
        assert_eq!(packages[0].pypi.as_deref(), Some("six==1.17.0"));
        assert_eq!(
            packages[1].path.as_deref(),
            Some(dir.path().join("wheels/x-1.0-py3-none-any.whl").as_path())
        );
        std::fs::write(&file, "six==1.17.0\n").unwrap();
        let e = parse_requirements(&file).unwrap_err().to_string();
        assert!(e.contains(":1:") && e.contains("--hash=sha256"), "{e}");
        std::fs::write(&file, format!("six>=1 --hash=sha256:{hash}\n")).unwrap();
        let e = parse_requirements(&file).unwrap_err().to_string();
        assert!(e.contains("NAME==VERSION"), "{e}");
    }
}
