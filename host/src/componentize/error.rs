//! Why a module could not become a component.

#[derive(Debug, thiserror::Error)]
pub enum ComponentizeError {
    #[error("not a WebAssembly module: {0}")]
    Parse(#[from] wasmparser::BinaryReaderError),
    #[error("cannot re-encode the module's imports: {0}")]
    Reencode(String),
    #[error("cannot turn the module into a component: {0:#}")]
    Encode(anyhow::Error),
    #[error("cannot reach the component's state: {0}")]
    StateAccess(String),
    #[error("cannot start the module as a command: {0}")]
    Reactor(String),
}
