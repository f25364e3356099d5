//! Why a plugin could not be loaded.

use crate::engine::EngineError;
use crate::plugin::artifact::ArtifactError;

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("plugin `{plugin}`: {message}")]
    Invalid { plugin: String, message: String },
}
