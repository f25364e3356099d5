//! `runbox runtimes`, `runbox plugins fetch` and `runbox plugins test`.

use std::path::Path;

use anyhow::{Context, Result};
use clap::Subcommand;
use runbox::conformance::check_plugin;
use runbox::service::cache_state;
use runbox::service::RunboxOptions;
use runbox::service::{ProgramCompiler, SandboxEngine};

use super::global::GlobalArgs;

#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// Fetch and compile the artifacts of every runtime, or of the named ones.
    Fetch {
        /// Runtime names (default: all in the plugins file).
        names: Vec<String>,
        /// Only fetch the artifacts, and put them in DIR, named by their sha256: an
        /// offline bundle. A runbox finds it as `artifacts/` beside its executable, or
        /// at RUNBOX_BUNDLED_ARTIFACTS, and then needs neither npm nor pip.
        #[arg(long, value_name = "DIR")]
        bundle: Option<std::path::PathBuf>,
    },
    /// Run the conformance suite (describe, every sample) against every plugin, or the
    /// named ones. Exits non-zero when a check fails.
    Test {
        /// Runtime names (default: all in the plugins file).
        names: Vec<String>,
    },
}

/// `runbox plugins test [NAME…]`: the conformance suite; 1 when a check fails.
pub async fn test(global: &GlobalArgs, names: Vec<String>) -> Result<u8> {
    let manifest = global.manifest()?;
    let options = RunboxOptions {
        only: names,
        ..RunboxOptions::default()
    };
    // A plugin that cannot be loaded fails its first check; the others are still checked.
    let runbox = global.load_each(options).await?;
    let (mut passed, mut failed) = (0, 0);
    // Plugins are checked side by side; each one's checks in order.
    let names = runbox.runtime_names();
    let results = futures::future::join_all(
        names
            .iter()
            .map(|name| check_plugin(&runbox, &manifest.plugins[name])),
    )
    .await;
    for checks in results {
        for check in checks {
            match &check.failure {
                None => {
                    passed += 1;
                    println!("ok    {} {}", check.plugin, check.name);
                }
                Some(why) => {
                    failed += 1;
                    println!("FAIL  {} {}: {why}", check.plugin, check.name);
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    Ok(if failed == 0 { 0 } else { 1 })
}

/// `runbox runtimes`: each runtime, and whether it is fetched and compiled.
pub fn runtimes(global: &GlobalArgs) -> Result<()> {
    let manifest = global.manifest()?;
    let cache = global.cache()?;
    let engine = SandboxEngine::new(&cache.root().join("compiled"), ProgramCompiler::default())?;
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let rows: Vec<[String; 5]> = manifest
        .plugins
        .values()
        .map(|spec| {
            let state = cache_state(spec, &cache, &engine);
            [
                spec.name.clone(),
                spec.language.clone(),
                yes_no(state.fetched).to_string(),
                yes_no(state.compiled).to_string(),
                spec.version.clone(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            ["NAME", "LANGUAGE", "FETCHED", "COMPILED", "VERSION"],
            &rows
        )
    );
    Ok(())
}

/// Columns as wide as their widest cell, the last (the long versions) unpadded.
fn table<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == N {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            }
        }
        out.push('\n');
        out
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// `runbox plugins fetch --bundle DIR [NAME…]`: the artifacts, fetched (or taken from the
/// cache) and put in DIR under their sha256, which is what [`Cache::bundles`] reads.
///
/// [`Cache::bundles`]: runbox::service::Cache::bundles
pub fn bundle(global: &GlobalArgs, names: &[String], dir: &Path) -> Result<u8> {
    let manifest = global.manifest()?;
    let cache = global.cache()?;
    let progress = global.progress();
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut bundled = std::collections::BTreeMap::new();
    for (plugin, artifact) in manifest.artifacts() {
        if !names.is_empty() && !names.contains(&plugin.name) {
            continue;
        }
        let from = cache.fetch(artifact, &progress)?;
        let name = artifact.sha256.to_ascii_lowercase();
        let to = dir.join(&name);
        if !to.is_file() {
            // A hard link where the cache is on the same filesystem, else a copy.
            if std::fs::hard_link(&from, &to).is_err() {
                std::fs::copy(&from, &to).with_context(|| {
                    format!("cannot copy {} to {}", from.display(), to.display())
                })?;
            }
        }
        bundled.insert(name, std::fs::metadata(&to)?.len());
    }
    let bytes: u64 = bundled.values().sum();
    eprintln!(
        "bundled {} artifacts ({:.1} MB) in {}",
        bundled.len(),
        bytes as f64 / 1e6,
        dir.display()
    );
    Ok(0)
}

/// `runbox plugins fetch [NAME…]`: fetch and compile now.
pub async fn fetch(global: &GlobalArgs, names: Vec<String>) -> Result<u8> {
    let options = RunboxOptions {
        only: names,
        ..RunboxOptions::default()
    };
    let runbox = global.load(options).await?;
    eprintln!("ready: {}", runbox.runtime_names().join(", "));
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::table;

    #[test]
    fn the_runtimes_table_lines_up_however_long_a_cell() {
        let rows = [
            [
                "python".to_string(),
                "Python".into(),
                "yes".into(),
                "a very long version, with packages".into(),
            ],
            [
                "javascript".to_string(),
                "JavaScript".into(),
                "no".into(),
                "Boa".into(),
            ],
        ];
        let text = table(["NAME", "LANGUAGE", "FETCHED", "VERSION"], &rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "NAME        LANGUAGE    FETCHED  VERSION");
        let column = |line: &str, word: &str| line.find(word).unwrap();
        assert_eq!(column(lines[1], "yes"), column(lines[0], "FETCHED"));
        assert_eq!(column(lines[2], "no"), column(lines[0], "FETCHED"));
        assert_eq!(column(lines[1], "a very"), column(lines[0], "VERSION"));
    }
}
