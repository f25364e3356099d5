//! The runtimes as commands of another runtime's run (`runbox:plugin/commands`, see
//! `sandbox/commands.rs`): which name runs which runtime (each entry's `commands` in
//! plugins.toml), and one command run in a child of the caller's sandbox, on a fresh
//! instance of the runtime's plugin through its `command` export.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;

use super::instance::PluginInstance;
use crate::budget::disk::DiskBudget;
use crate::plugin::preparation::PluginSlot;
use crate::sandbox::commands::{captured, Invocation};
use crate::sandbox::Sandbox;
use crate::sandbox::{CommandFuture, CommandHost};

/// Every command name with the runtime that answers to it.
pub struct RuntimeCommands {
    by_name: IndexMap<String, Arc<PluginSlot>>,
}

impl RuntimeCommands {
    /// The commands of `plugins` (the manifest made sure no name has two runtimes).
    pub fn new<'a>(plugins: impl IntoIterator<Item = &'a Arc<PluginSlot>>) -> RuntimeCommands {
        let mut by_name = IndexMap::new();
        for slot in plugins {
            for name in &slot.spec.commands {
                by_name.insert(name.clone(), slot.clone());
            }
        }
        RuntimeCommands { by_name }
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    async fn run_command(
        &self,
        caller: &Arc<Sandbox>,
        invocation: Invocation,
    ) -> crate::sandbox::CommandResult {
        let name = invocation.name.clone();
        let Some(slot) = self.by_name.get(&name) else {
            return Ok(Err(format!("{name}: command not found")));
        };
        // A runtime still being prepared goes first now, and is waited for while the
        // call has time left.
        let left = crate::sandbox::clock::current()
            .map(|clock| {
                clock
                    .deadline()
                    .saturating_duration_since(std::time::Instant::now())
            })
            .unwrap_or_default();
        let plugin = match slot.wait_ready(left).await {
            Ok(plugin) => plugin,
            Err(why) => return Ok(Err(format!("{name}: {why}"))),
        };
        let child = caller.for_command(
            plugin.tools.clone(),
            plugin.settings.clone(),
            plugin.mounts.clone(),
        );
        let byproducts = Byproducts::before(&caller.scratch, &plugin.spec.command_own_files());
        let work = async {
            let mut instance = PluginInstance::new(&plugin, &child).await?;
            Ok(instance
                .run_command(&plugin, &invocation)
                .await?
                .unwrap_or_else(|| {
                    Err(format!(
                        "runtime `{}` cannot be run as a command",
                        plugin.spec.name
                    ))
                }))
        };
        let finished = captured(caller, &child, work).await;
        byproducts.remove_new(&caller.disk);
        finished
    }
}

impl CommandHost for RuntimeCommands {
    fn available(&self) -> Vec<(String, String)> {
        self.by_name
            .iter()
            .map(|(name, slot)| (name.clone(), slot.spec.name.clone()))
            .collect()
    }

    fn run<'a>(&'a self, caller: &'a Arc<Sandbox>, invocation: Invocation) -> CommandFuture<'a> {
        Box::pin(self.run_command(caller, invocation))
    }
}

/// The runtime's own files when run as a command (its `command-own-files`: preludes, a
/// driver's files) that it would leave in the caller's scratch directory: those that were
/// not there before are removed after it, so the caller's files are only what the
/// command's program made (`cc -c main.c` leaves the user's `main.o`).
struct Byproducts {
    /// Own files that did not exist before the command.
    new: Vec<PathBuf>,
}

impl Byproducts {
    fn before(scratch: &Path, own_files: &[String]) -> Byproducts {
        let new = own_files
            .iter()
            .map(|own| scratch.join(own.trim_end_matches('/')))
            .filter(|path| std::fs::symlink_metadata(path).is_err())
            .collect();
        Byproducts { new }
    }

    /// Removes them, giving their bytes and names back to the run's `disk` budget.
    fn remove_new(self, disk: &DiskBudget) {
        for path in self.new {
            if std::fs::symlink_metadata(&path).is_ok() {
                if let Err(e) = disk.remove_tree(&path) {
                    tracing::warn!(path = %path.display(), "cannot remove a command's own file: {e}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_own_files_the_command_made_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.py"), "mine").unwrap();
        let own = vec![
            "main.py".to_string(),
            ".runbox/".to_string(),
            "x.o".to_string(),
        ];
        let byproducts = Byproducts::before(dir.path(), &own);
        std::fs::create_dir_all(dir.path().join(".runbox/matplotlib")).unwrap();
        std::fs::write(dir.path().join("main.py"), "overwritten").unwrap();
        std::fs::write(dir.path().join("out.csv"), "made by the program").unwrap();
        byproducts.remove_new(&DiskBudget::new(1 << 20, 100));
        assert!(dir.path().join("main.py").exists(), "the user's file stays");
        assert!(!dir.path().join(".runbox").exists());
        assert!(dir.path().join("out.csv").exists());
    }
}
