//! The options every command takes (the plugins file, the cache, progress), and what they
//! give the commands: the manifest, the cache, a loaded or started runbox.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use runbox::service::Manifest;
use runbox::service::ProgramCompiler;
use runbox::service::{Cache, Progress};
use runbox::service::{Runbox, RunboxOptions, StartError};

/// The heading `--help` shows the global flags under, apart from a command's own.
pub const GLOBAL_HEADING: &str = "Global options";

#[derive(Debug, Args)]
#[command(next_help_heading = GLOBAL_HEADING)]
pub struct GlobalArgs {
    /// A plugins.toml that replaces the built-in runtime list.
    #[arg(long, global = true, env = "RUNBOX_PLUGINS", value_name = "FILE")]
    pub plugins: Option<PathBuf>,
    /// A plugins.toml whose runtimes are added beside the built-in ones (or those of
    /// --plugins); repeat for more. A name already taken is an error.
    #[arg(
        long = "plugins-add",
        global = true,
        env = "RUNBOX_PLUGINS_ADD",
        value_name = "FILE",
        value_delimiter = ':'
    )]
    pub plugins_add: Vec<PathBuf>,
    /// A requirements file of pure-Python wheels every python run and session can import:
    /// one `NAME==VERSION --hash=sha256:HEX` (or `PATH.whl --hash=…`) per line, fetched
    /// with pip, checked, and refused if a wheel holds compiled code.
    #[arg(
        long,
        global = true,
        env = "RUNBOX_PYTHON_PACKAGES",
        value_name = "FILE"
    )]
    pub python_packages: Option<PathBuf>,
    /// Where artifacts and compiled runtimes are cached [default: $XDG_CACHE_HOME/runbox].
    #[arg(long, global = true, env = "RUNBOX_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Where runs keep their scratch directories [default: scratch/ in the cache
    /// directory]. Stale ones of a killed runbox are removed at start.
    #[arg(long, global = true, env = "RUNBOX_SCRATCH_DIR", value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,
    /// The compiler of programs a plugin produces (a compiler's output): cranelift,
    /// cranelift-unoptimized or winch.
    #[arg(long, global = true, env = "RUNBOX_PROGRAM_COMPILER", value_name = "NAME",
          default_value = "cranelift", value_parser = parse_program_compiler)]
    pub program_compiler: ProgramCompiler,
    /// Show no progress bars and no start-up line (`runbox mcp --http` still prints the
    /// address it serves at, which port 0 leaves to the system).
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

pub fn parse_program_compiler(name: &str) -> Result<ProgramCompiler, String> {
    ProgramCompiler::from_name(name).ok_or_else(|| {
        let names: Vec<_> = ProgramCompiler::ALL.iter().map(|c| c.name()).collect();
        format!("`{name}` is not one of {}", names.join(", "))
    })
}

/// The help of a RUNTIME argument: the built-in runtimes by name.
pub fn runtime_help() -> String {
    let names = runbox::service::Manifest::builtin()
        .map(|m| m.plugins.keys().cloned().collect::<Vec<_>>().join(", "))
        .unwrap_or_default();
    format!(
        "The runtime: {names} (the built-in ones; `runbox runtimes` lists those of \
         --plugins and --plugins-add too)"
    )
}

impl GlobalArgs {
    pub fn manifest(&self) -> Result<Manifest> {
        let mut manifest = Manifest::load_or_builtin(self.plugins.as_deref())?;
        for path in &self.plugins_add {
            manifest.add(Manifest::load(path)?)?;
        }
        if let Some(file) = &self.python_packages {
            let packages = runbox::service::parse_requirements(file)?;
            let python = manifest.plugins.get_mut("python").ok_or_else(|| {
                anyhow::anyhow!("--python-packages: the plugins file has no `python` runtime")
            })?;
            if python.packages_dir.is_none() {
                anyhow::bail!("--python-packages: the `python` runtime has no `packages-dir`");
            }
            python.packages.extend(packages);
        }
        Ok(manifest)
    }

    pub fn cache(&self) -> Result<Cache> {
        Ok(match &self.cache_dir {
            Some(dir) => Cache::at(dir.clone()),
            None => Cache::from_env()?,
        })
    }

    pub fn progress(&self) -> Progress {
        if self.quiet {
            Progress::hidden()
        } else {
            Progress::stderr()
        }
    }

    /// Starts the runtimes' preparation in the background (see `preparation.rs`) and
    /// returns at once: for a server, which must answer before minutes of compiling.
    pub fn start(&self, options: RunboxOptions) -> Result<Runbox> {
        let options = self.with_globals(options);
        Ok(Runbox::start(
            &self.manifest()?,
            &self.cache()?,
            options,
            self.progress(),
        )?)
    }

    /// Prepares each runtime only once a call asks for it (see `preparation.rs`), in the
    /// background: for `runbox run`, whose program may run other runtimes as commands.
    pub fn start_on_demand(&self, options: RunboxOptions) -> Result<Runbox> {
        let options = self.with_globals(options);
        Ok(Runbox::start_on_demand(
            &self.manifest()?,
            &self.cache()?,
            options,
            self.progress(),
        )?)
    }

    fn with_globals(&self, mut options: RunboxOptions) -> RunboxOptions {
        options.scratch_dir = self.scratch_dir.clone();
        options.program_compiler = self.program_compiler;
        options
    }

    /// Loads the runtimes (fetching and compiling what is missing) off the async runtime;
    /// fails on the first that cannot be loaded.
    pub async fn load(&self, options: RunboxOptions) -> Result<Runbox> {
        self.load_with(options, Runbox::load).await
    }

    /// Like [`GlobalArgs::load`], but a runtime that cannot be loaded is marked as failed
    /// and the others are still loaded.
    pub async fn load_each(&self, options: RunboxOptions) -> Result<Runbox> {
        self.load_with(options, Runbox::load_each).await
    }

    async fn load_with(
        &self,
        options: RunboxOptions,
        load: fn(&Manifest, &Cache, RunboxOptions, &Progress) -> Result<Runbox, StartError>,
    ) -> Result<Runbox> {
        let options = self.with_globals(options);
        let manifest = self.manifest()?;
        let cache = self.cache()?;
        let progress = self.progress();
        let runbox =
            tokio::task::spawn_blocking(move || load(&manifest, &cache, options, &progress))
                .await??;
        Ok(runbox)
    }
}

/// Fails fast and clearly on a runtime name the plugins file does not have.
pub fn check_runtime_name(global: &GlobalArgs, runtime: &str) -> Result<()> {
    let manifest = global.manifest()?;
    if !manifest.plugins.contains_key(runtime) {
        return Err(runbox::service::CallError::UnknownRuntime {
            name: runtime.to_string(),
            valid: manifest.plugins.keys().cloned().collect(),
        }
        .into());
    }
    Ok(())
}
