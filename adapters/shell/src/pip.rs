//! `pip` (and `pip3`): packages at run time (docs/network.md). `pip install REQ...` asks
//! the host, through the device `/net/fetch`, to install pure-Python wheels (their
//! dependencies included); the files of its answer are written, through the shell's files
//! and so within the run's disk limit, under [`SITE`], which python puts on its import
//! path. The python runtime's `pip` module prints the same lines (`python -m pip` is the
//! host's `python` command, and that module).
//!
//! ```text
//! pip install [-q] [-U] [-r FILE] REQUIREMENT...
//! pip list | pip freeze | pip --version
//! ```
//!
//! Exit status 0 done, 1 a failed install (`ERROR: MESSAGE`, the host's message) or an
//! unknown command, 2 a bad option.

use std::path::{Path, PathBuf};

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult};
use serde_json::Value;

use crate::net;

/// Where the packages go (in the run's scratch, kept by a session).
pub const SITE: &str = "/.runbox/site-packages";

const USAGE: &str = "\
Usage: pip install [-q] [-U] [-r FILE] REQUIREMENT...
       pip list | pip freeze | pip --version
runbox's pip: the host downloads pure-Python wheels (dependencies included) within its
network policy's [packages] and hands their files over /net/fetch; they are written to
/.runbox/site-packages, on python's import path (docs/network.md).
";

const VERSION: &str =
    "pip (runbox's: pure-Python wheels through /net/fetch, into /.runbox/site-packages)\n";

/// Options of pip's that change nothing here.
const IGNORED: &[&str] = &[
    "-U",
    "--upgrade",
    "-v",
    "--verbose",
    "--user",
    "--no-cache-dir",
    "--disable-pip-version-check",
    "--no-input",
    "--break-system-packages",
    "--no-warn-script-location",
    "--progress-bar=off",
];

/// The `pip` builtin, over the network directory `dir` (`/net` in the component).
pub struct PipCommand {
    dir: PathBuf,
}

impl PipCommand {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        PipCommand { dir: dir.into() }
    }
}

#[async_trait]
impl Builtin for PipCommand {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let (stdout, stderr, status) = match run(&self.dir, &ctx).await {
            Ok(stdout) => (stdout, String::new(), 0),
            Err((status, message)) => (String::new(), format!("ERROR: {message}\n"), status),
        };
        Ok(ExecResult {
            stdout: stdout.into(),
            stderr: stderr.into(),
            exit_code: status,
            ..ExecResult::default()
        })
    }
}

/// The command line: its output, or its exit status and error.
async fn run(dir: &Path, ctx: &BuiltinContext<'_>) -> Result<String, (i32, String)> {
    let (mut words, mut quiet, mut files) = (Vec::new(), false, Vec::new());
    let mut args = ctx.args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-r" | "--requirement" => match args.next() {
                Some(file) => files.push(file.clone()),
                None => return Err((2, format!("{arg} option requires 1 argument"))),
            },
            "-q" | "-qq" | "-qqq" | "--quiet" => quiet = true,
            "-h" | "--help" | "-V" | "--version" => {
                let help = arg.as_str() == "-h" || arg.as_str() == "--help";
                words = vec![if help { "help" } else { "--version" }.to_string()];
                break;
            }
            "--" => words.extend(args.by_ref().cloned()),
            _ if arg.starts_with("--requirement=") => {
                files.push(arg["--requirement=".len()..].to_string())
            }
            _ if IGNORED.contains(&arg.as_str()) => {}
            _ if arg.starts_with('-') => {
                return Err((
                    2,
                    format!("no such option: {arg} (runbox's pip takes -q, -U, -r FILE)"),
                ))
            }
            _ => words.push(arg.clone()),
        }
    }
    let command = words.first().map_or("help", String::as_str);
    match command {
        "help" => Ok(USAGE.to_string()),
        "--version" => Ok(VERSION.to_string()),
        "freeze" => Ok(installed(ctx)
            .await
            .iter()
            .map(|(name, version)| format!("{name}=={version}\n"))
            .collect()),
        "list" => Ok(table(&installed(ctx).await)),
        "install" => {
            let mut reqs = words[1..].to_vec();
            for file in &files {
                let text = net::read_input(ctx, file)
                    .await
                    .map_err(|e| (1, format!("Could not open requirements file: {file}: {e}")))?;
                let text = String::from_utf8_lossy(&text);
                let lines = text
                    .lines()
                    .map(|line| line.split(" #").next().unwrap_or_default());
                reqs.extend(
                    lines
                        .map(str::trim)
                        .filter(|line| !line.is_empty() && !line.starts_with(['#', '-']))
                        .map(str::to_string),
                );
            }
            if reqs.is_empty() {
                return Err((
                    1,
                    "You must give at least one requirement to install (see \"pip help\")".into(),
                ));
            }
            let installed = install(dir, ctx, &reqs).await.map_err(|e| (1, e))?;
            Ok(if quiet {
                String::new()
            } else {
                report(&installed)
            })
        }
        _ => Err((
            1,
            format!("unknown command \"{command}\" (runbox's pip has install, list, freeze)"),
        )),
    }
}

/// One wheel the host installed.
#[derive(Debug, Default)]
struct Wheel {
    name: String,
    version: String,
    sha256: String,
    wheel: String,
}

/// Asks the host to install `reqs` and writes its answer's files under [`SITE`] (none
/// unless every path stays inside it): the wheels, or the error's message.
async fn install(
    dir: &Path,
    ctx: &BuiltinContext<'_>,
    reqs: &[String],
) -> Result<Vec<Wheel>, String> {
    let request = serde_json::json!({ "install": reqs }).to_string();
    let answer = net::exchange(dir, &request)
        .and_then(|text| net::answer_object(&text))
        .map_err(|failure| failure.message)?;
    let not_an_install = || "the host's answer is not an install's".to_string();
    let mut files = Vec::new();
    for entry in answer
        .get("files")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let [Value::String(name), Value::String(content)] =
            entry.as_array().map(Vec::as_slice).unwrap_or_default()
        else {
            return Err(not_an_install());
        };
        if name.is_empty()
            || name.starts_with('/')
            || name.contains(['\\', '\0'])
            || name.split('/').any(|part| part == "..")
        {
            return Err(format!(
                "the host's answer names a file outside site-packages: {name:?}"
            ));
        }
        let bytes = net::base64_decode(content).ok_or_else(not_an_install)?;
        files.push((Path::new(SITE).join(name), bytes));
    }
    for (path, bytes) in &files {
        net::write_file(ctx.fs.as_ref(), path, bytes, false, true)
            .await
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let field = |wheel: &Value, name: &str| {
        let value = wheel.get(name).and_then(Value::as_str);
        value.unwrap_or_default().to_string()
    };
    let wheels = answer.get("installed").and_then(Value::as_array);
    Ok(wheels
        .into_iter()
        .flatten()
        .map(|wheel| Wheel {
            name: field(wheel, "name"),
            version: field(wheel, "version"),
            sha256: field(wheel, "sha256"),
            wheel: field(wheel, "wheel"),
        })
        .collect())
}

/// What pip prints after an install: the packages, then each wheel's SHA-256.
fn report(installed: &[Wheel]) -> String {
    if installed.is_empty() {
        return String::new();
    }
    let names: Vec<String> = installed
        .iter()
        .map(|w| format!("{}-{}", w.name, w.version))
        .collect();
    let mut out = format!("Successfully installed {}\n", names.join(" "));
    for w in installed {
        out.push_str(&format!("  {} sha256={}\n", w.wheel, w.sha256));
    }
    out
}

/// (name, version) of each `NAME-VERSION.dist-info` under [`SITE`].
async fn installed(ctx: &BuiltinContext<'_>) -> Vec<(String, String)> {
    let entries = ctx.fs.read_dir(Path::new(SITE)).await.unwrap_or_default();
    let mut packages: Vec<(String, String)> = entries
        .iter()
        .filter_map(|entry| entry.name.strip_suffix(".dist-info"))
        .map(|stem| {
            let (name, version) = stem.split_once('-').unwrap_or((stem, ""));
            (name.to_string(), version.to_string())
        })
        .collect();
    packages.sort_by_key(|(name, _)| name.to_lowercase());
    packages
}

/// `pip list`'s table (nothing when there are no packages).
fn table(packages: &[(String, String)]) -> String {
    if packages.is_empty() {
        return String::new();
    }
    let width = packages.iter().map(|p| p.0.len()).fold(7, usize::max);
    let version_width = packages.iter().map(|p| p.1.len()).fold(7, usize::max);
    let rule = ("-".repeat(width), "-".repeat(version_width));
    let head = [("Package".to_string(), "Version".to_string()), rule];
    head.iter()
        .chain(packages)
        .map(|(name, version)| format!("{name:<width$} {version}\n"))
        .collect()
}
