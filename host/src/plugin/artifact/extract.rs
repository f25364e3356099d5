//! Reading packages and archives: one member out of an npm tarball or a wheel, or a whole
//! mount archive into a directory. Formats are recognised by their first bytes, not names.
//!
//! Unpacking never leaves the target directory: entries with absolute paths or `..` are
//! rejected, and symbolic and hard links are skipped (never created), so no later entry
//! can be written through one.

use std::fs::{self, File};
use std::io::{self, BufReader, Read, Write};
use std::path::{Component, Path, PathBuf};

use flate2::read::MultiGzDecoder;

use super::error::ArtifactError;

/// An archive format, as recognised by [`sniff`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Tar,
    /// gzip-compressed tar (`.tar.gz`, `.tgz`, npm tarballs).
    TarGz,
    /// zip (`.zip`, Python wheels).
    Zip,
}

const TAR_BLOCK: usize = 512;

/// Recognises an archive by its first bytes; `None` when it is none of [`Format`].
pub(crate) fn sniff(path: &Path) -> io::Result<Option<Format>> {
    let mut head = [0u8; TAR_BLOCK];
    let mut file = File::open(path)?;
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(sniff_bytes(&head[..n]))
}

fn sniff_bytes(head: &[u8]) -> Option<Format> {
    if head.starts_with(&[0x1f, 0x8b]) {
        return Some(Format::TarGz);
    }
    // Local file header, empty archive, or spanned archive.
    if head.len() >= 4
        && head[..2] == *b"PK"
        && matches!((head[2], head[3]), (3, 4) | (5, 6) | (7, 8))
    {
        return Some(Format::Zip);
    }
    if head.len() >= 262 && head[257..262] == *b"ustar" {
        return Some(Format::Tar);
    }
    // Pre-POSIX tar has no magic; its header checksum still identifies it.
    if head.len() == TAR_BLOCK && tar_checksum_ok(head) {
        return Some(Format::Tar);
    }
    None
}

fn tar_checksum_ok(header: &[u8]) -> bool {
    let field = &header[148..156];
    let digits: String = field
        .iter()
        .map(|&b| b as char)
        .skip_while(|c| *c == ' ')
        .take_while(|c| c.is_digit(8))
        .collect();
    let Ok(stored) = u32::from_str_radix(&digits, 8) else {
        return false;
    };
    let sum: u32 = header
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                u32::from(b' ')
            } else {
                u32::from(b)
            }
        })
        .sum();
    // An all-zero block would "match" a zero checksum; it is not an archive.
    stored != 0 && sum == stored
}

/// The result of looking for one file inside a package.
#[derive(Debug)]
pub(crate) enum Member {
    /// Found and copied; its size in bytes.
    Copied(u64),
    /// Not there; the files the package does contain, most likely ones first.
    Missing(Vec<String>),
}

/// Copies the regular file `name` from the package at `package` (an npm `.tgz`, a wheel,
/// or any tar/zip) into `out`. `artifact` names the plugins entry and `out_path` the
/// destination, for messages.
pub(crate) fn copy_member(
    package: &Path,
    name: &str,
    out: &mut dyn Write,
    artifact: &str,
    out_path: &Path,
) -> Result<Member, ArtifactError> {
    let want = normalize(name);
    let ctx = Ctx { artifact, package };
    let file = File::open(package).map_err(|e| ctx.open_error(e))?;
    match sniff(package).map_err(|e| ctx.open_error(e))? {
        Some(Format::TarGz) => tar_member(
            MultiGzDecoder::new(BufReader::new(file)),
            &want,
            out,
            &ctx,
            out_path,
        ),
        Some(Format::Tar) => tar_member(BufReader::new(file), &want, out, &ctx, out_path),
        Some(Format::Zip) => zip_member(file, &want, out, &ctx, out_path),
        None => Err(ctx.bad("not a gzip-compressed tarball, tar or zip file")),
    }
}

fn tar_member(
    reader: impl Read,
    want: &str,
    out: &mut dyn Write,
    ctx: &Ctx,
    out_path: &Path,
) -> Result<Member, ArtifactError> {
    let mut archive = tar::Archive::new(reader);
    let mut names = Vec::new();
    for entry in archive.entries().map_err(|e| ctx.bad(e))? {
        let mut entry = entry.map_err(|e| ctx.bad(e))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let entry_name = normalize(&String::from_utf8_lossy(&entry.path_bytes()));
        if entry_name == want {
            let size = copy(&mut entry, out, ctx, out_path)?;
            return Ok(Member::Copied(size));
        }
        names.push(entry_name);
    }
    Ok(Member::Missing(rank_candidates(names)))
}

fn zip_member(
    file: File,
    want: &str,
    out: &mut dyn Write,
    ctx: &Ctx,
    out_path: &Path,
) -> Result<Member, ArtifactError> {
    let mut zip = zip::ZipArchive::new(BufReader::new(file)).map_err(|e| ctx.bad(e))?;
    let index = zip
        .index_for_name(want)
        .or_else(|| zip.file_names().position(|n| normalize(n) == want));
    if let Some(index) = index {
        let mut entry = zip.by_index(index).map_err(|e| ctx.bad(e))?;
        if entry.is_file() {
            let size = copy(&mut entry, out, ctx, out_path)?;
            return Ok(Member::Copied(size));
        }
    }
    let names = zip
        .file_names()
        .filter(|n| !n.ends_with('/'))
        .map(normalize)
        .collect();
    Ok(Member::Missing(rank_candidates(names)))
}

/// What unpacking an archive produced.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unpacked {
    pub(crate) files: u64,
    pub(crate) dirs: u64,
    /// Links and special files, which are never created.
    pub(crate) skipped: u64,
}

/// Unpacks the archive at `archive` into the existing directory `dest`.
pub(crate) fn unpack(
    archive: &Path,
    format: Format,
    dest: &Path,
    artifact: &str,
) -> Result<Unpacked, ArtifactError> {
    let ctx = Ctx {
        artifact,
        package: archive,
    };
    let file = File::open(archive).map_err(|e| ctx.open_error(e))?;
    match format {
        Format::TarGz => unpack_tar(MultiGzDecoder::new(BufReader::new(file)), dest, &ctx),
        Format::Tar => unpack_tar(BufReader::new(file), dest, &ctx),
        Format::Zip => unpack_zip(file, dest, &ctx),
    }
}

fn unpack_tar(reader: impl Read, dest: &Path, ctx: &Ctx) -> Result<Unpacked, ArtifactError> {
    let mut stats = Unpacked::default();
    let mut archive = tar::Archive::new(reader);
    for entry in archive.entries().map_err(|e| ctx.bad(e))? {
        let mut entry = entry.map_err(|e| ctx.bad(e))?;
        let kind = entry.header().entry_type();
        if matches!(
            kind,
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader | tar::EntryType::GNULongName
        ) {
            continue;
        }
        let raw_name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let path = entry.path().map_err(|e| ctx.bad(e))?.into_owned();
        let Some(rel) = ctx.safe_relative(&path, &raw_name)? else {
            continue; // the archive root itself, e.g. `./`
        };
        let target = dest.join(rel);
        if kind.is_dir() || (kind.is_file() && raw_name.ends_with('/')) {
            create_dir_all(&target)?;
            stats.dirs += 1;
        } else if kind.is_file() {
            write_file(&mut entry, &target, ctx)?;
            stats.files += 1;
        } else {
            tracing::warn!(
                "{}: skipping `{raw_name}` ({kind:?} entries are not unpacked)",
                ctx.artifact
            );
            stats.skipped += 1;
        }
    }
    Ok(stats)
}

fn unpack_zip(file: File, dest: &Path, ctx: &Ctx) -> Result<Unpacked, ArtifactError> {
    let mut stats = Unpacked::default();
    let mut zip = zip::ZipArchive::new(BufReader::new(file)).map_err(|e| ctx.bad(e))?;
    for index in 0..zip.len() {
        let mut entry = zip.by_index(index).map_err(|e| ctx.bad(e))?;
        let raw_name = entry.name().to_string();
        let Some(rel) = ctx.safe_relative(Path::new(&raw_name), &raw_name)? else {
            continue;
        };
        let target = dest.join(rel);
        if entry.is_symlink() {
            tracing::warn!("{}: skipping symbolic link `{raw_name}`", ctx.artifact);
            stats.skipped += 1;
        } else if entry.is_dir() {
            create_dir_all(&target)?;
            stats.dirs += 1;
        } else {
            write_file(&mut entry, &target, ctx)?;
            stats.files += 1;
        }
    }
    Ok(stats)
}

fn write_file(reader: &mut dyn Read, target: &Path, ctx: &Ctx) -> Result<(), ArtifactError> {
    if let Some(parent) = target.parent() {
        create_dir_all(parent)?;
    }
    let mut file = File::create(target)
        .map_err(|e| ArtifactError::io(format!("cannot create {}", target.display()), e))?;
    copy(reader, &mut file, ctx, target)?;
    Ok(())
}

fn create_dir_all(dir: &Path) -> Result<(), ArtifactError> {
    fs::create_dir_all(dir)
        .map_err(|e| ArtifactError::io(format!("cannot create directory {}", dir.display()), e))
}

/// Copies `reader` to `out`, telling a corrupt archive (read error) from a full disk
/// (write error).
fn copy(
    reader: &mut dyn Read,
    out: &mut dyn Write,
    ctx: &Ctx,
    out_path: &Path,
) -> Result<u64, ArtifactError> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ctx.bad(e)),
        };
        out.write_all(&buf[..n])
            .map_err(|e| ArtifactError::io(format!("cannot write {}", out_path.display()), e))?;
        total += n as u64;
    }
}

/// `name` without leading `./` or `/`, for comparing entry names.
fn normalize(name: &str) -> String {
    let mut s = name;
    loop {
        if let Some(rest) = s.strip_prefix("./") {
            s = rest;
        } else if let Some(rest) = s.strip_prefix('/') {
            s = rest;
        } else {
            return s.to_string();
        }
    }
}

/// Puts the files a plugins entry most likely meant first: `.wasm`, tar and zip files.
fn rank_candidates(names: Vec<String>) -> Vec<String> {
    let likely = |n: &String| {
        let lower = n.to_ascii_lowercase();
        [".wasm", ".tar", ".tar.gz", ".tgz", ".zip"]
            .iter()
            .any(|ext| lower.ends_with(ext))
    };
    let (mut first, rest): (Vec<String>, Vec<String>) = names.into_iter().partition(likely);
    first.extend(rest);
    first
}

/// What error messages need to know.
struct Ctx<'a> {
    artifact: &'a str,
    package: &'a Path,
}

impl Ctx<'_> {
    fn open_error(&self, e: io::Error) -> ArtifactError {
        ArtifactError::io(
            format!(
                "cannot read {} (for {})",
                self.package.display(),
                self.artifact
            ),
            e,
        )
    }

    fn bad(&self, e: impl std::fmt::Display) -> ArtifactError {
        ArtifactError::BadArchive {
            artifact: self.artifact.to_string(),
            message: format!("{}: {e}", self.package.display()),
        }
    }

    /// `path` as a relative path that stays inside the target directory; `None` for the
    /// root itself. Absolute paths, drive prefixes and `..` are rejected.
    fn safe_relative(&self, path: &Path, raw_name: &str) -> Result<Option<PathBuf>, ArtifactError> {
        let mut out = PathBuf::new();
        for component in path.components() {
            match component {
                Component::Normal(part) => out.push(part),
                Component::CurDir => {}
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                    return Err(ArtifactError::UnsafeArchiveEntry {
                        artifact: self.artifact.to_string(),
                        entry: raw_name.to_string(),
                    })
                }
            }
        }
        Ok((!out.as_os_str().is_empty()).then_some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniff_recognises_formats_by_content() {
        assert_eq!(sniff_bytes(&[0x1f, 0x8b, 8, 0]), Some(Format::TarGz));
        assert_eq!(sniff_bytes(b"PK\x03\x04rest"), Some(Format::Zip));
        assert_eq!(sniff_bytes(b"PK\x05\x06"), Some(Format::Zip));
        assert_eq!(sniff_bytes(b"not an archive"), None);
        assert_eq!(sniff_bytes(&[0u8; 512]), None);
        let mut header = tar::Header::new_gnu();
        header.set_path("a.txt").unwrap();
        header.set_size(0);
        header.set_cksum();
        assert_eq!(sniff_bytes(header.as_bytes()), Some(Format::Tar));
        let mut old = tar::Header::new_old();
        old.set_path("a.txt").unwrap();
        old.set_size(0);
        old.set_cksum();
        assert_eq!(sniff_bytes(old.as_bytes()), Some(Format::Tar));
    }

    #[test]
    fn normalize_strips_leading_dot_and_slash() {
        assert_eq!(normalize("./package/x.wasm"), "package/x.wasm");
        assert_eq!(normalize("/a/b"), "a/b");
        assert_eq!(normalize("a/./b"), "a/./b");
    }

    #[test]
    fn candidates_put_wasm_and_archives_first() {
        let ranked = rank_candidates(vec![
            "package/README.md".into(),
            "package/dist/x.wasm".into(),
            "package/dist/base.tar.gz".into(),
        ]);
        assert_eq!(
            ranked,
            [
                "package/dist/x.wasm",
                "package/dist/base.tar.gz",
                "package/README.md"
            ]
        );
    }
}
