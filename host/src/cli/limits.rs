//! The per-run limits that `runbox run` and `runbox mcp` both take, with their defaults
//! read from the library's [`LimitSettings`], and the checks of limit values.

use std::time::Duration;

use anyhow::{bail, Result};
use clap::Args;
use runbox::service::LimitSettings;

/// `--memory-mb`, `--output-bytes`, `--compile-timeout` and the scratch caps.
#[derive(Debug, Clone, Args)]
pub struct LimitArgs {
    /// Memory limit of one run in MiB, shared by everything the run starts.
    #[arg(long, env = "RUNBOX_MEMORY_MB", value_name = "N",
          default_value_t = LimitSettings::default().memory_bytes >> 20)]
    pub memory_mb: u64,
    /// Output limit of one run, per stream, in bytes; a program writing more is stopped.
    #[arg(long, env = "RUNBOX_OUTPUT_BYTES", value_name = "BYTES",
          default_value_t = LimitSettings::default().output_bytes)]
    pub output_bytes: usize,
    /// What compiling and linking (C, C++) may take, in seconds, on top of the program's
    /// own time limit; a compile past it ends the run as a timeout that says so.
    #[arg(long, env = "RUNBOX_COMPILE_TIMEOUT", value_name = "SECS",
          default_value_t = LimitSettings::default().compile_timeout.as_secs_f64())]
    pub compile_timeout: f64,
    /// File data one run (or a session, for its whole life) may keep in its scratch
    /// directory, in MiB; past it the program's writes fail with ENOSPC.
    #[arg(long, env = "RUNBOX_SCRATCH_MB", value_name = "N",
          default_value_t = LimitSettings::default().scratch_bytes >> 20)]
    pub scratch_mb: u64,
    /// Files, directories and links one run (or a session) may create in its scratch
    /// directory.
    #[arg(long, env = "RUNBOX_SCRATCH_FILES", value_name = "N",
          default_value_t = LimitSettings::default().scratch_files)]
    pub scratch_files: u64,
}

impl Default for LimitArgs {
    fn default() -> Self {
        let limits = LimitSettings::default();
        LimitArgs {
            memory_mb: limits.memory_bytes >> 20,
            output_bytes: limits.output_bytes,
            compile_timeout: limits.compile_timeout.as_secs_f64(),
            scratch_mb: limits.scratch_bytes >> 20,
            scratch_files: limits.scratch_files,
        }
    }
}

impl LimitArgs {
    /// The limits checked, with `timeout` as both the default and the maximum.
    pub fn settings(
        &self,
        default_timeout: Duration,
        max_timeout: Duration,
    ) -> Result<LimitSettings> {
        if self.output_bytes == 0 {
            bail!("--output-bytes must be at least 1");
        }
        if !(1..=1 << 30).contains(&self.scratch_files) {
            bail!(
                "--scratch-files must be between 1 and {}, not {}",
                1u64 << 30,
                self.scratch_files
            );
        }
        Ok(LimitSettings {
            default_timeout,
            max_timeout,
            memory_bytes: memory_bytes("--memory-mb", self.memory_mb)?,
            output_bytes: self.output_bytes,
            compile_timeout: seconds("--compile-timeout", self.compile_timeout)?,
            scratch_bytes: memory_bytes("--scratch-mb", self.scratch_mb)?,
            scratch_files: self.scratch_files,
        })
    }
}

/// A time limit from a flag: above 0 and at most a day.
pub fn seconds(flag: &str, secs: f64) -> Result<Duration> {
    // Duration::from_secs_f64 panics past ~584 billion years; a day is plenty.
    if !(secs > 0.0 && secs <= 86_400.0) {
        bail!("{flag} must be a number of seconds above 0 and at most 86400, not {secs}");
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Bytes from a flag given in MiB: at least 1 MiB, at most 1 TiB.
pub fn memory_bytes(flag: &str, mib: u64) -> Result<u64> {
    if !(1..=1 << 20).contains(&mib) {
        bail!("{flag} must be between 1 and 1048576 (MiB), not {mib}");
    }
    Ok(mib << 20)
}
