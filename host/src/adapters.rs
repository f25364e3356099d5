//! The built-in adapters: plugin components compiled from `adapters/` and embedded in the
//! binary, picked in `plugins.toml` with `adapter = "NAME"` (e.g. `"command"`).
//!
//! `build.rs` builds the `adapters` workspace for `wasm32-wasip2` and generates
//! [`BUILTIN`], one entry per workspace member, named after the member's directory.

include!(concat!(env!("OUT_DIR"), "/adapters.rs"));

#[cfg(test)]
mod tests {
    use super::BUILTIN;

    /// `\0asm`, then the component encoding's version and layer.
    const COMPONENT_HEADER: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

    #[test]
    fn every_builtin_is_a_component() {
        assert!(BUILTIN.iter().any(|(name, _)| *name == "command"));
        for (name, bytes) in BUILTIN {
            assert!(
                bytes.starts_with(&COMPONENT_HEADER),
                "built-in adapter `{name}` is not a WebAssembly component"
            );
        }
    }

    /// The component's own (top-level) imports and exports.
    fn interface(bytes: &[u8]) -> (Vec<String>, Vec<String>) {
        use wasmparser::{Parser, Payload};
        let (mut imports, mut exports) = (Vec::new(), Vec::new());
        // Nested modules and components each start with `Version` and end with `End`.
        let mut depth = 0;
        for payload in Parser::new(0).parse_all(bytes) {
            match payload.expect("valid component") {
                Payload::Version { .. } => depth += 1,
                Payload::End(_) => depth -= 1,
                Payload::ComponentImportSection(section) if depth == 1 => {
                    for import in section {
                        imports.push(import.unwrap().name.full_name().into_owned());
                    }
                }
                Payload::ComponentExportSection(section) if depth == 1 => {
                    for export in section {
                        exports.push(export.unwrap().name.full_name().into_owned());
                    }
                }
                _ => {}
            }
        }
        (imports, exports)
    }

    /// The `plugin` world's rule: `process`, `config`, `commands` (and the records it
    /// shares with `command`) and the WASI interfaces a sandboxed program needs, nothing
    /// else (no sockets, no http).
    #[test]
    fn every_builtin_imports_only_what_the_host_links() {
        const ALLOWED: &[&str] = &[
            "runbox:plugin/process@",
            "runbox:plugin/config@",
            "runbox:plugin/commands@",
            "runbox:plugin/command-line@",
            "wasi:cli/",
            "wasi:clocks/",
            "wasi:filesystem/",
            "wasi:io/",
            "wasi:random/",
        ];
        for (name, bytes) in BUILTIN {
            let (imports, exports) = interface(bytes);
            for import in &imports {
                assert!(
                    ALLOWED.iter().any(|prefix| import.starts_with(prefix)),
                    "built-in adapter `{name}` imports `{import}`, which the host does not link"
                );
            }
            assert!(
                exports
                    .iter()
                    .any(|e| e.starts_with("runbox:plugin/runtime@")),
                "built-in adapter `{name}` does not export runbox:plugin/runtime: {exports:?}"
            );
        }
    }
}
