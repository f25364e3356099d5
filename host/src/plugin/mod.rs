//! Plugins: how a `plugins.toml` entry becomes something a run can instantiate. Its
//! artifacts are fetched and verified ([`artifact`]), preview1 tools turned into
//! components ([`componentize`], with a start-up [`snapshot`] for reactors), compiled
//! once into the [`compiled_cache`] by the [`engine`], files it derives made with its
//! own tools ([`derived`]), and the whole prepared in the background ([`preparation`]);
//! runbox's own guest components are [`adapters`]. This module loads one: its component,
//! its tools and its read-only mounts, ready to instantiate per run.

pub mod artifact;
pub mod derived;
mod error;
mod load;
pub mod packages;
pub mod preparation;
pub mod provisional;
mod tool_loader;

pub use error::PluginError;
pub use load::{cache_state, load_plugin, load_plugin_telling, CacheState, Hooks, LoadedPlugin};
pub use tool_loader::parse_env;
