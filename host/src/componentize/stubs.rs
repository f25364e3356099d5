//! Answers for a module's non-WASI imports that the host has nothing behind.
//!
//! Some builds import a function from their embedder besides WASI (CPython 3.15's
//! `host.call`, through which an embedder may offer extra services; a host with nothing
//! to offer answers -1). plugins.toml names such imports and the constant each returns
//! (`stub-imports = { "host.call" = -1 }`). Each import module becomes a tiny core module
//! exporting those functions, linked into the component by wit-component as an adapter,
//! so the component imports nothing beyond WASI.

use std::collections::BTreeMap;

use wasm_encoder::{
    CodeSection, ExportKind, ExportSection, Function, FunctionSection, Instruction, TypeSection,
    ValType,
};
use wasmparser::{Parser, Payload, TypeRef};

use super::error::ComponentizeError;

/// One stubbed import: `module.name`, answering `value` (converted to its result type).
#[derive(Debug, Clone, PartialEq)]
pub struct ImportStub {
    pub module: String,
    pub name: String,
    pub value: i64,
}

impl ImportStub {
    /// Parses `"module.name"` (the module may not contain a dot; the name may).
    pub fn parse(key: &str, value: i64) -> Option<ImportStub> {
        let (module, name) = crate::manifest::stub_import_parts(key)?;
        Some(ImportStub {
            module: module.to_string(),
            name: name.to_string(),
            value,
        })
    }
}

/// One adapter module per stubbed import module: `(module name, core module bytes)`.
/// Every stub must match an import of `main`; its type comes from there.
pub fn stub_modules(
    main: &[u8],
    stubs: &[ImportStub],
) -> Result<Vec<(String, Vec<u8>)>, ComponentizeError> {
    let (types, imports) = function_imports(main)?;
    let mut by_module: BTreeMap<&str, Vec<(&ImportStub, Signature)>> = BTreeMap::new();
    for stub in stubs {
        let ty = imports
            .iter()
            .find(|(m, n, _)| *m == stub.module && *n == stub.name)
            .map(|(_, _, ty)| *ty)
            .ok_or_else(|| {
                ComponentizeError::Reactor(format!(
                    "stub-imports names `{}.{}`, which the module does not import",
                    stub.module, stub.name
                ))
            })?;
        let signature =
            types.get(ty as usize).cloned().flatten().ok_or_else(|| {
                ComponentizeError::Reactor(format!("bad type for `{}`", stub.name))
            })?;
        by_module
            .entry(stub.module.as_str())
            .or_default()
            .push((stub, signature));
    }
    Ok(by_module
        .into_iter()
        .map(|(module, funcs)| (module.to_string(), stub_module(&funcs)))
        .collect())
}

fn stub_module(funcs: &[(&ImportStub, Signature)]) -> Vec<u8> {
    let mut types = TypeSection::new();
    let mut functions = FunctionSection::new();
    let mut exports = ExportSection::new();
    let mut code = CodeSection::new();
    for (i, (stub, (params, results))) in funcs.iter().enumerate() {
        let i = i as u32;
        types
            .ty()
            .function(params.iter().copied(), results.iter().copied());
        functions.function(i);
        exports.export(&stub.name, ExportKind::Func, i);
        let mut body = Function::new([]);
        for result in results {
            body.instruction(&match result {
                ValType::I64 => Instruction::I64Const(stub.value),
                ValType::F32 => Instruction::F32Const((stub.value as f32).into()),
                ValType::F64 => Instruction::F64Const((stub.value as f64).into()),
                _ => Instruction::I32Const(stub.value as i32),
            });
        }
        body.instruction(&Instruction::End);
        code.function(&body);
    }
    let mut module = wasm_encoder::Module::new();
    module
        .section(&types)
        .section(&functions)
        .section(&exports)
        .section(&code);
    module.finish()
}

/// A function type: its parameters and results.
type Signature = (Vec<ValType>, Vec<ValType>);
/// A function import: module, name and type index.
type FunctionImport = (String, String, u32);

/// The module's function types and its function imports.
fn function_imports(
    main: &[u8],
) -> Result<(Vec<Option<Signature>>, Vec<FunctionImport>), ComponentizeError> {
    let mut types = Vec::new();
    let mut imports = Vec::new();
    let convert = |t: &wasmparser::ValType| match t {
        wasmparser::ValType::I64 => ValType::I64,
        wasmparser::ValType::F32 => ValType::F32,
        wasmparser::ValType::F64 => ValType::F64,
        _ => ValType::I32,
    };
    for payload in Parser::new(0).parse_all(main) {
        match payload? {
            Payload::TypeSection(reader) => {
                for group in reader {
                    for ty in group?.into_types() {
                        types.push(match &ty.composite_type.inner {
                            wasmparser::CompositeInnerType::Func(f) => Some((
                                f.params().iter().map(convert).collect(),
                                f.results().iter().map(convert).collect(),
                            )),
                            _ => None,
                        });
                    }
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import?;
                    if let TypeRef::Func(ty) = import.ty {
                        imports.push((import.module.to_string(), import.name.to_string(), ty));
                    }
                }
            }
            _ => {}
        }
    }
    Ok((types, imports))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stubs_take_their_type_from_the_import() {
        let main = wat::parse_str(
            r#"(module (import "host" "call" (func (param i32 i32 i32 i32) (result i32))))"#,
        )
        .unwrap();
        let stub = ImportStub::parse("host.call", -1).unwrap();
        let modules = stub_modules(&main, &[stub]).unwrap();
        assert_eq!(modules.len(), 1);
        assert_eq!(modules[0].0, "host");
        let engine = wasmtime::Engine::default();
        let module = wasmtime::Module::new(&engine, &modules[0].1).unwrap();
        let mut store = wasmtime::Store::new(&engine, ());
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).unwrap();
        let call = instance
            .get_typed_func::<(i32, i32, i32, i32), i32>(&mut store, "call")
            .unwrap();
        assert_eq!(call.call(&mut store, (1, 2, 3, 4)).unwrap(), -1);
    }

    #[test]
    fn a_stub_for_an_import_that_is_not_there_is_refused() {
        let main = wat::parse_str("(module)").unwrap();
        let stub = ImportStub::parse("host.call", -1).unwrap();
        let e = stub_modules(&main, &[stub]).unwrap_err().to_string();
        assert!(e.contains("does not import"), "{e}");
        assert!(ImportStub::parse("nodot", 0).is_none());
    }
}
