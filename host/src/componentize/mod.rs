//! Turns a WASI preview1 command module into a component the host can run.
//!
//! The official `wasi_snapshot_preview1` command adapter (here: the *preview1 bridge*,
//! to tell it from runbox's own adapters, the plugin components in `adapters/`) bridges
//! preview1 to WASI 0.2.
//! One thing it loses: every non-zero `proc_exit(n)` becomes exit code 1. So before
//! encoding, the module's `proc_exit` import is re-pointed at the host's
//! `runbox:plugin/exit` interface, which ends the program with the real code.
//!
//! A tool that is not a plain command is first made one: a reactor gets a `_start`
//! ([`reactor`]), and imports the host has nothing behind are answered by stubs
//! ([`stubs`]). plugins.toml says which ([`ToolRecipe`]).

mod error;
pub mod reactor;
pub mod snapshot;
pub mod state_access;
pub mod stubs;

pub use error::ComponentizeError;
pub use reactor::ReactorStart;
pub use stubs::ImportStub;

use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{ImportSection, RawSection};
use wasmparser::{Parser, Payload};
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::Resolve;

/// The WIT package, for the `tool` world's metadata.
const WIT: &str = include_str!("../../../wit/runbox.wit");
/// The core module and field the host's exit hook is imported under.
pub const EXIT_MODULE: &str = "runbox:plugin/exit@0.2.0";
pub const EXIT_FIELD: &str = "exit";

const PREVIEW1: &str = "wasi_snapshot_preview1";

/// A fingerprint of everything besides its input that decides what [`componentize`]
/// produces: the preview1 bridge's bytes, the WIT, wit-component's version and the
/// source (tests aside) of this module and of the snapshot. Part of every cache key of a componentized module, so changing any
/// of them recompiles instead of loading a stale component.
pub fn transform_fingerprint() -> &'static str {
    static FINGERPRINT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    FINGERPRINT.get_or_init(|| {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for part in [
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER,
            WIT.as_bytes(),
            env!("RUNBOX_WIT_COMPONENT_VERSION").as_bytes(),
            without_tests(include_str!("mod.rs")).as_bytes(),
            without_tests(include_str!("reactor.rs")).as_bytes(),
            without_tests(include_str!("stubs.rs")).as_bytes(),
            // A snapshot is part of a reactor tool's component.
            without_tests(include_str!("snapshot.rs")).as_bytes(),
        ] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
        hex::encode(h.finalize())
    })
}

/// A source file up to its tests: editing a test must not recompile every tool.
fn without_tests(source: &str) -> &str {
    source
        .find("\n#[cfg(test)]")
        .map_or(source, |end| &source[..end])
}

/// What a tool needs besides componentizing (plugins.toml's `reactor` and `stub-imports`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolRecipe {
    /// A reactor, started as this says.
    pub reactor: Option<ReactorStart>,
    /// Imports answered with a constant.
    pub stubs: Vec<ImportStub>,
}

impl ToolRecipe {
    /// How `tool`'s module becomes a command component.
    pub fn for_tool(tool: &crate::manifest::ToolSpec) -> Self {
        ToolRecipe {
            reactor: tool.reactor.as_ref().map(|r| ReactorStart {
                init: r.init.clone(),
                entry: r.entry.clone(),
                alloc: r.alloc.clone(),
                programs: 1,
            }),
            stubs: tool
                .stub_imports
                .iter()
                .filter_map(|(k, v)| ImportStub::parse(k, *v))
                .collect(),
        }
    }

    /// Whether the module is componentized as it is.
    pub fn is_plain(&self) -> bool {
        self.reactor.is_none() && self.stubs.is_empty()
    }
}

/// What kind of WebAssembly binary a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryKind {
    CoreModule,
    Component,
    NotWasm,
}

/// Tells a core module from a component by the header.
pub fn binary_kind(bytes: &[u8]) -> BinaryKind {
    match bytes.get(..8) {
        Some([0, b'a', b's', b'm', _, _, 0, 0]) => BinaryKind::CoreModule,
        Some([0, b'a', b's', b'm', _, _, 1, 0]) => BinaryKind::Component,
        _ => BinaryKind::NotWasm,
    }
}

/// Componentizes a preview1 command module, keeping real exit codes.
pub fn componentize(module: &[u8]) -> Result<Vec<u8>, ComponentizeError> {
    componentize_tool(module, &ToolRecipe::default())
}

/// Componentizes a preview1 module as `recipe` says: a reactor gets its `_start`, stubbed
/// imports their answers, and real exit codes are kept.
pub fn componentize_tool(module: &[u8], recipe: &ToolRecipe) -> Result<Vec<u8>, ComponentizeError> {
    let started;
    let module = match &recipe.reactor {
        Some(start) => {
            started = reactor::command_from_reactor(module, start)?;
            &started[..]
        }
        None => module,
    };
    let stub_modules = stubs::stub_modules(module, &recipe.stubs)?;
    let mut module = reroute_proc_exit(module)?;
    let mut resolve = Resolve::default();
    let pkg = resolve
        .push_str("runbox.wit", WIT)
        .map_err(ComponentizeError::Encode)?;
    let world_name = match recipe.reactor {
        Some(_) => "reactor-tool",
        None => "tool",
    };
    let world = resolve
        .select_world(&[pkg], Some(world_name))
        .map_err(ComponentizeError::Encode)?;
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        StringEncoding::UTF8,
        false,
    )
    .map_err(ComponentizeError::Encode)?;
    let mut encoder = ComponentEncoder::default();
    encoder
        .module(&module)
        .and_then(|e| {
            e.adapter(
                PREVIEW1,
                wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER,
            )
        })
        .map_err(ComponentizeError::Encode)?;
    for (name, stub) in &stub_modules {
        encoder
            .adapter(name, stub)
            .map_err(ComponentizeError::Encode)?;
    }
    let component = encoder
        .validate(true)
        .encode()
        .map_err(ComponentizeError::Encode)?;
    // A reactor may be kept between turns: with doors into its state, that state can be
    // copied (`state_access.rs`).
    match recipe.reactor {
        Some(_) => state_access::add_state_access(&component),
        None => Ok(component),
    }
}

/// Rewrites the import section so `wasi_snapshot_preview1.proc_exit` becomes
/// `runbox:plugin/exit@0.2.0.exit`; every other section is copied byte for byte.
fn reroute_proc_exit(module: &[u8]) -> Result<Vec<u8>, ComponentizeError> {
    let mut out = wasm_encoder::Module::new();
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload?;
        if let Payload::ImportSection(reader) = &payload {
            let mut imports = ImportSection::new();
            for import in reader.clone().into_imports() {
                let import = import?;
                let ty = RoundtripReencoder
                    .entity_type(import.ty)
                    .map_err(|e| ComponentizeError::Reencode(e.to_string()))?;
                let (m, n) = if import.module == PREVIEW1 && import.name == "proc_exit" {
                    (EXIT_MODULE, EXIT_FIELD)
                } else {
                    (import.module, import.name)
                };
                imports.import(m, n, ty);
            }
            out.section(&imports);
            continue;
        }
        if let Some((id, range)) = payload.as_section() {
            out.section(&RawSection {
                id,
                data: &module[range.start as usize..range.end as usize],
            });
        }
    }
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn imports(module: &[u8]) -> Vec<(String, String)> {
        let mut v = vec![];
        for p in Parser::new(0).parse_all(module) {
            if let Payload::ImportSection(r) = p.unwrap() {
                for i in r.into_imports() {
                    let i = i.unwrap();
                    v.push((i.module.to_string(), i.name.to_string()));
                }
            }
        }
        v
    }

    const MODULE: &str = r#"(module
        (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))
        (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
        (memory (export "memory") 1)
        (func (export "_start") (call $exit (i32.const 3))))"#;

    #[test]
    fn proc_exit_is_rerouted_and_other_imports_kept() {
        let module = wat::parse_str(MODULE).unwrap();
        let out = reroute_proc_exit(&module).unwrap();
        assert_eq!(
            imports(&out),
            vec![
                (PREVIEW1.to_string(), "fd_write".to_string()),
                (EXIT_MODULE.to_string(), EXIT_FIELD.to_string()),
            ]
        );
        wasmparser::Validator::new().validate_all(&out).unwrap();
    }

    #[test]
    fn componentizes_a_command_module() {
        let module = wat::parse_str(MODULE).unwrap();
        let component = componentize(&module).unwrap();
        assert_eq!(binary_kind(&component), BinaryKind::Component);
    }

    /// A reactor with an embedder import becomes a component importing only WASI and
    /// the exit hook.
    #[test]
    fn componentizes_a_reactor_with_a_stubbed_import() {
        let module = wat::parse_str(
            r#"(module
            (import "host" "call" (func $call (param i32 i32 i32 i32) (result i32)))
            (import "wasi_snapshot_preview1" "args_sizes_get" (func (param i32 i32) (result i32)))
            (import "wasi_snapshot_preview1" "args_get" (func (param i32 i32) (result i32)))
            (import "wasi_snapshot_preview1" "proc_exit" (func (param i32)))
            (memory (export "memory") 1)
            (func (export "alloc") (param i32) (result i32) (i32.const 1024))
            (func (export "turn") (param i32 i32) (result i32)
                (call $call (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0))))"#,
        )
        .unwrap();
        let recipe = ToolRecipe {
            reactor: Some(ReactorStart {
                init: vec!["_initialize".into()],
                entry: "turn".into(),
                alloc: "alloc".into(),
                programs: 1,
            }),
            stubs: vec![ImportStub::parse("host.call", -1).unwrap()],
        };
        let component = componentize_tool(&module, &recipe).unwrap();
        assert_eq!(binary_kind(&component), BinaryKind::Component);
        let engine = wasmtime::Engine::default();
        let component = wasmtime::component::Component::new(&engine, &component).unwrap();
        let imports: Vec<String> = component
            .component_type()
            .imports(&engine)
            .map(|(name, _)| name.to_string())
            .collect();
        assert!(
            imports
                .iter()
                .all(|i| i.starts_with("wasi:") || i.starts_with(EXIT_MODULE)),
            "{imports:?}"
        );
    }

    #[test]
    fn binary_kinds() {
        assert_eq!(binary_kind(b"\0asm\x01\0\0\0"), BinaryKind::CoreModule);
        assert_eq!(binary_kind(b"\0asm\x0d\0\x01\0"), BinaryKind::Component);
        assert_eq!(binary_kind(b"#!/bin/sh"), BinaryKind::NotWasm);
    }
}
