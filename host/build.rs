//! Builds runbox's built-in plugin components and embeds them in the binary.
//!
//! `adapters/` is a cargo workspace of its own (the root workspace excludes it) whose
//! members are guest crates for `wasm32-wasip2`. This script builds it in release mode
//! into `target/adapters` (a target directory of its own, so the inner cargo never waits
//! for the lock the outer build holds), copies each member's component into `OUT_DIR`
//! and writes `$OUT_DIR/adapters.rs`, which `src/adapters.rs` includes:
//!
//! ```ignore
//! pub const BUILTIN: &[(&str, &[u8])] = &[("command", include_bytes!(".../command.wasm"))];
//! ```
//!
//! An adapter's name is its member's directory name; the member in `adapters/NAME` must
//! be a cdylib package named `runbox-adapter-NAME`.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The target the adapters are built for.
const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .expect("host/ has a parent")
        .to_path_buf();
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let adapters = root.join("adapters");
    let manifest = adapters.join("Cargo.toml");

    emit_locked_version(&root, "wit-component", "RUNBOX_WIT_COMPONENT_VERSION");
    let members = workspace_members(&manifest);
    rerun_if_changed(&root, &members);
    ensure_target_installed();
    let target_dir = root.join("target").join("adapters");
    build_adapters(&manifest, &target_dir);

    let built = target_dir.join(TARGET).join("release");
    let components: Vec<(String, PathBuf)> = members
        .iter()
        .map(|name| (name.clone(), copy_component(&built, name, &out_dir)))
        .collect();
    let generated = out_dir.join("adapters.rs");
    fs::write(&generated, builtin_table(&components))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", generated.display()));
}

/// The `members` of the adapters workspace. Only the plain form `members = ["a", "b"]` is
/// understood (no globs, no paths): each member is a directory right under `adapters/`.
fn workspace_members(manifest: &Path) -> Vec<String> {
    let text = fs::read_to_string(manifest)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", manifest.display()));
    // Drop comments, then take the array after `members`.
    let text: String = text
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let list = text
        .split_once("members")
        .and_then(|(_, rest)| rest.split_once('['))
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list)
        .unwrap_or_else(|| panic!("{}: no `members = [...]` list", manifest.display()));
    let members: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let name = item.trim_matches('"');
            let plain = item.len() == name.len() + 2
                && !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            assert!(
                plain,
                "{}: member {item} must be a quoted directory name (letters, digits, `-`, `_`)",
                manifest.display()
            );
            name.to_string()
        })
        .collect();
    assert!(
        !members.is_empty(),
        "{}: `members` is empty",
        manifest.display()
    );
    members
}

/// Sets the compile-time variable `var` to the versions of `package` in Cargo.lock (all of
/// them, comma-separated, when several are locked), so the host can key caches on them.
fn emit_locked_version(root: &Path, package: &str, var: &str) {
    let lock = root.join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text =
        fs::read_to_string(&lock).unwrap_or_else(|e| panic!("cannot read {}: {e}", lock.display()));
    let needle = format!("name = \"{package}\"\nversion = \"");
    let versions: Vec<&str> = text
        .split(&needle)
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(version, _)| version))
        .collect();
    assert!(
        !versions.is_empty(),
        "{} has no package {package}",
        lock.display()
    );
    println!("cargo:rustc-env={var}={}", versions.join(","));
}

/// Tells cargo to run this script again when an adapter's sources or the WIT change.
fn rerun_if_changed(root: &Path, members: &[String]) {
    let adapters = root.join("adapters");
    let mut paths = vec![
        root.join("wit"),
        adapters.join("Cargo.toml"),
        adapters.join("Cargo.lock"),
        // The library every adapter depends on.
        adapters.join("support"),
    ];
    // A directory is watched as a whole, recursively.
    paths.extend(members.iter().map(|m| adapters.join(m)));
    for path in paths {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// Installs the `wasm32-wasip2` standard library with rustup if the compiler lacks it.
fn ensure_target_installed() {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run `{} --print sysroot`: {e}",
                rustc.to_string_lossy()
            )
        });
    assert!(
        output.status.success(),
        "`rustc --print sysroot` failed: {}",
        output.status
    );
    let sysroot = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if sysroot.join("lib").join("rustlib").join(TARGET).is_dir() {
        return;
    }

    // On stderr, not as a cargo warning: cargo repeats a build script's warnings at every
    // later build, when the target is long installed.
    eprintln!(
        "the Rust target {TARGET} (needed for runbox's built-in adapters) is not installed; running `rustup target add {TARGET}`"
    );
    let status = Command::new("rustup")
        .args(["target", "add", TARGET])
        // This script's stdout is for cargo's directives only.
        .stdout(Stdio::from(std::io::stderr()))
        .status();
    match status {
        Ok(status) if status.success() => {}
        Ok(status) => panic!(
            "`rustup target add {TARGET}` failed ({status}); install the target yourself, it is needed to build runbox's built-in adapters"
        ),
        Err(e) => panic!(
            "the Rust target {TARGET} is not installed and rustup could not be run ({e}); install the {TARGET} standard library for {}, it is needed to build runbox's built-in adapters",
            rustc.to_string_lossy()
        ),
    }
}

/// Runs `cargo build --release --target wasm32-wasip2` on the adapters workspace.
fn build_adapters(manifest: &Path, target_dir: &Path) {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(&cargo);
    command
        .args(["build", "--release", "--target", TARGET, "--manifest-path"])
        .arg(manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .stdout(Stdio::from(std::io::stderr()));
    for (key, _) in env::vars_os() {
        if key.to_str().is_some_and(leaks_into_inner_build) {
            command.env_remove(&key);
        }
    }
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", cargo.to_string_lossy()));
    assert!(
        status.success(),
        "building runbox's built-in adapters (cargo build --release --target {TARGET} --manifest-path {}) failed: {status}",
        manifest.display()
    );
}

/// Whether the environment variable `key`, set for this script or by the user for the
/// outer build, would change what the inner cargo builds (flags, wrappers, target,
/// target directory, profile) or describes the outer package. The jobserver
/// (`CARGO_MAKEFLAGS`), `RUSTC`, `CARGO_HOME`, network and host-target settings stay.
fn leaks_into_inner_build(key: &str) -> bool {
    const EXACT: &[&str] = &[
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTDOCFLAGS",
        "CARGO_ENCODED_RUSTDOCFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_CRATE_NAME",
        "OUT_DIR",
        "TARGET",
        "HOST",
        "PROFILE",
        "OPT_LEVEL",
        "DEBUG",
        "NUM_JOBS",
    ];
    const PREFIXES: &[&str] = &[
        "CARGO_BUILD_", // build.target, build.target-dir, build.rustflags, wrappers
        "CARGO_PROFILE_",
        "CARGO_FEATURE_",
        "CARGO_CFG_",
        "CARGO_PKG_",
        "CARGO_MANIFEST_",
        "__CARGO",
    ];
    EXACT.contains(&key) || PREFIXES.iter().any(|p| key.starts_with(p))
}

/// Copies the component built for member `name` into `out_dir` as `NAME.wasm`.
fn copy_component(built: &Path, name: &str, out_dir: &Path) -> PathBuf {
    let file = format!("runbox_adapter_{}.wasm", name.replace('-', "_"));
    let from = built.join(&file);
    assert!(
        from.is_file(),
        "adapters/{name} built no {}: the member in adapters/{name} must be a cdylib package named `runbox-adapter-{name}`",
        from.display()
    );
    let to = out_dir.join(format!("{name}.wasm"));
    fs::copy(&from, &to)
        .unwrap_or_else(|e| panic!("cannot copy {} to {}: {e}", from.display(), to.display()));
    to
}

/// The Rust source of `BUILTIN`: each adapter's name and component bytes.
fn builtin_table(components: &[(String, PathBuf)]) -> String {
    let mut src = String::from(
        "// Generated by host/build.rs from the members of adapters/Cargo.toml.\n\n\
         /// The built-in adapters: each name (as `adapter = \"NAME\"` in `plugins.toml`)\n\
         /// with its component's bytes.\n\
         pub const BUILTIN: &[(&str, &[u8])] = &[\n",
    );
    for (name, path) in components {
        // `{:?}` of a str is a valid Rust string literal.
        let path = path.to_str().expect("OUT_DIR is valid UTF-8");
        writeln!(src, "    ({name:?}, include_bytes!({path:?})),").expect("writing to a String");
    }
    src.push_str("];\n");
    src
}
