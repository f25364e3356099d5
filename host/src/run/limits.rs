//! The limits of a run: the server's settings, what a request may ask for, and what one
//! run gets once both are resolved.

use std::time::Duration;

use crate::budget::disk::{DEFAULT_SCRATCH_BYTES, DEFAULT_SCRATCH_FILES};

/// The most a client without MCP tasks may ask for. The TypeScript SDK (and clients
/// built on it) give up on a request after 60 s: a run at this limit, plus a compile on
/// its whole budget, is still answered before then.
pub const DEFAULT_MAX_TIMEOUT: Duration = Duration::from_secs(40);

/// What a run's build steps may take in all (a C++ program with templates compiles in
/// a few seconds; this leaves room on a loaded machine).
pub const DEFAULT_COMPILE_TIMEOUT: Duration = Duration::from_secs(15);

/// What a request asks for; `None` fields take the server's defaults.
#[derive(Debug, Clone, Default)]
pub struct LimitOverrides {
    pub timeout: Option<Duration>,
    pub memory_bytes: Option<u64>,
    /// A higher ceiling for `timeout` than the server's `max_timeout`, for a call the
    /// caller lets run long (an MCP task).
    pub max_timeout: Option<Duration>,
}

/// The limits every run gets, and the ceiling a request may ask for.
#[derive(Debug, Clone)]
pub struct LimitSettings {
    pub default_timeout: Duration,
    pub max_timeout: Duration,
    /// What a run's build steps (compiling and linking, see `process.spawn-build` in
    /// wit/runbox.wit) may take, apart from the program's own time limit.
    pub compile_timeout: Duration,
    pub memory_bytes: u64,
    pub output_bytes: usize,
    /// Bytes of file data a run (or a session, for its whole life) may keep in its
    /// scratch directory.
    pub scratch_bytes: u64,
    /// Files, directories and links a run (or a session) may create in its scratch
    /// directory.
    pub scratch_files: u64,
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings {
            default_timeout: Duration::from_secs(10),
            max_timeout: DEFAULT_MAX_TIMEOUT,
            compile_timeout: DEFAULT_COMPILE_TIMEOUT,
            memory_bytes: 512 << 20,
            output_bytes: 1 << 20,
            scratch_bytes: DEFAULT_SCRATCH_BYTES,
            scratch_files: DEFAULT_SCRATCH_FILES,
        }
    }
}

/// One run's limits, resolved against the server's.
#[derive(Debug, Clone, Copy)]
pub struct RunLimits {
    pub timeout: Duration,
    /// What its build steps may take, on top of `timeout`.
    pub compile_timeout: Duration,
    pub memory_bytes: usize,
}

/// Why a request's limits were refused.
#[derive(Debug, thiserror::Error)]
#[error("timeout must be greater than zero")]
pub struct ZeroTimeout;

impl LimitSettings {
    /// The limits of one run: the request's, within the server's (a larger timeout or
    /// memory cap than the server allows is capped to it).
    pub fn resolve(&self, overrides: &LimitOverrides) -> Result<RunLimits, ZeroTimeout> {
        let timeout = overrides.timeout.unwrap_or(self.default_timeout);
        if timeout.is_zero() {
            return Err(ZeroTimeout);
        }
        let memory = overrides
            .memory_bytes
            .unwrap_or(self.memory_bytes)
            .min(self.memory_bytes);
        let ceiling = overrides
            .max_timeout
            .map_or(self.max_timeout, |t| t.max(self.max_timeout));
        Ok(RunLimits {
            timeout: timeout.min(ceiling),
            compile_timeout: self.compile_timeout,
            memory_bytes: usize::try_from(memory).unwrap_or(usize::MAX),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_stay_within_the_server_limits() {
        let settings = LimitSettings::default();
        let asked = LimitOverrides {
            timeout: Some(Duration::from_secs(3600)),
            memory_bytes: Some(u64::MAX),
            max_timeout: None,
        };
        let limits = settings.resolve(&asked).unwrap();
        assert_eq!(limits.timeout, DEFAULT_MAX_TIMEOUT);
        assert_eq!(limits.memory_bytes, 512 << 20);
        let zero = LimitOverrides {
            timeout: Some(Duration::ZERO),
            memory_bytes: None,
            max_timeout: None,
        };
        assert!(settings.resolve(&zero).is_err());
        let default = settings.resolve(&LimitOverrides::default()).unwrap();
        assert_eq!(default.timeout, Duration::from_secs(10));
        assert_eq!(default.compile_timeout, DEFAULT_COMPILE_TIMEOUT);
        let task = LimitOverrides {
            timeout: Some(Duration::from_secs(3600)),
            max_timeout: Some(Duration::from_secs(1800)),
            ..LimitOverrides::default()
        };
        assert_eq!(
            settings.resolve(&task).unwrap().timeout,
            Duration::from_secs(1800)
        );
    }
}
