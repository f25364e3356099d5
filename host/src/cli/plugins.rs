//! `runbox runtimes`, `runbox plugins fetch` and `runbox plugins test`.

use anyhow::Result;
use clap::Subcommand;
use runbox::conformance::check_plugin;
use runbox::plugin::cache_state;
use runbox::plugin::engine::{ProgramCompiler, SandboxEngine};
use runbox::service::RunboxOptions;

use super::GlobalArgs;

#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// Fetch and compile the artifacts of every runtime, or of the named ones.
    Fetch {
        /// Runtime names (default: all in the plugins file).
        names: Vec<String>,
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
    println!(
        "{:<10} {:<12} {:<20} {:<8} {:<8}",
        "NAME", "LANGUAGE", "VERSION", "FETCHED", "COMPILED"
    );
    for spec in manifest.plugins.values() {
        let state = cache_state(spec, &cache, &engine);
        let yes_no = |b: bool| if b { "yes" } else { "no" };
        println!(
            "{:<10} {:<12} {:<20} {:<8} {:<8}",
            spec.name,
            spec.language,
            spec.version,
            yes_no(state.fetched),
            yes_no(state.compiled)
        );
    }
    Ok(())
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
