//! A WASI *reactor* turned into a *command*, so the host runs it like any other tool.
//!
//! A reactor exports functions instead of `_start`: an initializer (`_initialize`) and
//! entry points a host calls. Many interpreters built for embedding look like this (the
//! CPython 3.15 build runbox uses exports `turn(ptr, len) -> i32`, which runs one program
//! text; Perl's and Ruby 4.0's WASI builds are similar). plugins.toml describes the
//! reactor's calling convention (`[plugins.NAME.tools.TOOL.reactor]`), and
//! [`command_from_reactor`] writes a `_start` that follows it:
//!
//! 1. call each `init` export the module (still) exports, in order;
//! 2. take the program's first argument (`argv[1]`, read with preview1's `args_get`), copy
//!    it into memory from the `alloc(len) -> ptr` export, and call `entry(ptr, len) -> i32`;
//! 3. a non-zero result is the exit code (`proc_exit`);
//! 4. with `programs: 2`, then the same for `argv[2]` (see [`ReactorStart::programs`]).
//!
//! It also gets `turn(ptr, len) -> i32`, the same start (the `init` exports, once) and
//! `entry` for one program text, which the component exports as `turn: func(program:
//! string) -> s32` (the `reactor-tool` world): a host that keeps the tool between calls
//! runs one program per turn on it, so that the instance is at rest (no call under way)
//! between them. `cabi_export_realloc`, which the canonical ABI needs to hand it the
//! text, is `alloc` unless the module has a realloc of its own.
//!
//! Every other export but `memory` is dropped, so the module is a plain command that the
//! preview1 bridge can componentize.

use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{
    CodeSection, ExportKind, ExportSection, Function, FunctionSection, GlobalSection, Instruction,
    MemArg, RawSection, TypeSection, ValType,
};
use wasmparser::{ExternalKind, Parser, Payload, TypeRef};

use super::error::ComponentizeError;

/// How a reactor is started (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReactorStart {
    /// Exports of type `[] -> []` called first, those the module exports.
    pub init: Vec<String>,
    /// The export `[i32 i32] -> [i32]` that runs the program text it is given.
    pub entry: String,
    /// The export `[i32] -> [i32]` that allocates the bytes `entry` is given.
    pub alloc: String,
    /// How many leading arguments are program texts, run in turn until one fails: 1,
    /// or 2 for a tool served before its snapshot is taken (the snapshot's program, then
    /// the caller's).
    pub programs: u32,
}

const PREVIEW1: &str = "wasi_snapshot_preview1";

/// What [`command_from_reactor`] needs to know of the module.
#[derive(Default)]
struct Layout {
    imported_funcs: u32,
    defined_funcs: u32,
    imported_globals: u32,
    defined_globals: u32,
    /// Each function's type index, imports first.
    func_types: Vec<u32>,
    /// Each type's (params, results), when it is a function type.
    types: Vec<Option<(Vec<wasmparser::ValType>, Vec<wasmparser::ValType>)>>,
    preview1: std::collections::HashMap<String, u32>,
    exports: Vec<(String, ExternalKind, u32)>,
}

/// The module with a `_start` that starts the reactor as `start` says.
pub fn command_from_reactor(
    module: &[u8],
    start: &ReactorStart,
) -> Result<Vec<u8>, ComponentizeError> {
    let layout = read_layout(module)?;
    let invalid = |m: String| ComponentizeError::Reactor(m);
    let export_func = |name: &str| {
        layout
            .exports
            .iter()
            .find(|(n, k, _)| n == name && *k == ExternalKind::Func)
            .map(|(_, _, i)| *i)
    };
    let signature = |func: u32| -> Option<(Vec<wasmparser::ValType>, Vec<wasmparser::ValType>)> {
        let ty = *layout.func_types.get(func as usize)?;
        layout.types.get(ty as usize)?.clone()
    };
    use wasmparser::ValType::I32;
    let expect = |name: &str, params: &[wasmparser::ValType], results: &[wasmparser::ValType]| {
        let func = export_func(name)
            .ok_or_else(|| invalid(format!("the module does not export a function `{name}`")))?;
        match signature(func) {
            Some((p, r)) if p == params && r == results => Ok(func),
            _ => Err(invalid(format!(
                "export `{name}` must have type {params:?} -> {results:?}"
            ))),
        }
    };
    let entry = expect(&start.entry, &[I32, I32], &[I32])?;
    let alloc = expect(&start.alloc, &[I32], &[I32])?;
    let mut init = Vec::new();
    for name in &start.init {
        if export_func(name).is_some() {
            init.push(expect(name, &[], &[])?);
        }
    }
    let import = |name: &str| {
        layout.preview1.get(name).copied().ok_or_else(|| {
            invalid(format!(
                "the module does not import `{PREVIEW1}.{name}`, which its start needs"
            ))
        })
    };
    let (args_sizes_get, args_get, proc_exit) = (
        import("args_sizes_get")?,
        import("args_get")?,
        import("proc_exit")?,
    );
    let start_index = layout.imported_funcs + layout.defined_funcs;
    let (turn_index, realloc_index) = (start_index + 1, start_index + 2);
    let own_realloc =
        export_func("cabi_realloc").is_some() || export_func("cabi_export_realloc").is_some();
    // Set once the `init` exports ran in a turn.
    let started_global = layout.imported_globals + layout.defined_globals;
    let bodies = [
        start_body(
            &init,
            entry,
            alloc,
            start.programs.max(1),
            (args_sizes_get, args_get, proc_exit),
            started_global,
        ),
        turn_body(&init, entry, started_global),
        realloc_body(alloc),
    ];
    let bodies = if own_realloc {
        &bodies[..2]
    } else {
        &bodies[..]
    };

    let mut out = wasm_encoder::Module::new();
    let mut new_types = None;
    let mut code: Option<CodeSection> = None;
    let mut code_left = 0u32;
    let mut globals_written = false;
    let started = wasm_encoder::GlobalType {
        val_type: ValType::I32,
        mutable: true,
        shared: false,
    };
    let zero = wasm_encoder::ConstExpr::i32_const(0);
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload?;
        // A module without globals gets a section for the one added, where it goes.
        if !globals_written
            && matches!(
                payload,
                Payload::ExportSection(_)
                    | Payload::StartSection { .. }
                    | Payload::ElementSection(_)
                    | Payload::DataCountSection { .. }
                    | Payload::CodeSectionStart { .. }
                    | Payload::DataSection(_)
            )
        {
            let mut globals = GlobalSection::new();
            globals.global(started, &zero);
            out.section(&globals);
            globals_written = true;
        }
        match &payload {
            Payload::TypeSection(reader) => {
                let mut types = TypeSection::new();
                RoundtripReencoder
                    .parse_type_section(&mut types, reader.clone())
                    .map_err(|e| ComponentizeError::Reencode(e.to_string()))?;
                new_types = Some(types.len());
                types.ty().function([], []);
                types
                    .ty()
                    .function([ValType::I32, ValType::I32], [ValType::I32]);
                types.ty().function([ValType::I32; 4], [ValType::I32]);
                out.section(&types);
            }
            Payload::FunctionSection(reader) => {
                let mut funcs = FunctionSection::new();
                for ty in reader.clone() {
                    funcs.function(ty?);
                }
                let first = new_types.ok_or_else(|| invalid("no type section".into()))?;
                for ty in [first, first + 1, first + 2].iter().take(bodies.len()) {
                    funcs.function(*ty);
                }
                out.section(&funcs);
            }
            Payload::GlobalSection(reader) => {
                let mut globals = GlobalSection::new();
                RoundtripReencoder
                    .parse_global_section(&mut globals, reader.clone())
                    .map_err(|e| ComponentizeError::Reencode(e.to_string()))?;
                globals.global(started, &zero);
                out.section(&globals);
                globals_written = true;
            }
            Payload::ExportSection(_) => {
                let mut exports = ExportSection::new();
                for (name, kind, index) in &layout.exports {
                    if *kind == ExternalKind::Memory || name.starts_with("cabi_") {
                        let kind = match kind {
                            ExternalKind::Memory => ExportKind::Memory,
                            _ => ExportKind::Func,
                        };
                        exports.export(name, kind, *index);
                    }
                }
                exports.export("_start", ExportKind::Func, start_index);
                exports.export("turn", ExportKind::Func, turn_index);
                // For `turn`'s text only: as `cabi_realloc` the preview1 bridge would
                // also take its own memory from it, before the reactor is initialised.
                if !own_realloc {
                    exports.export("cabi_export_realloc", ExportKind::Func, realloc_index);
                }
                out.section(&exports);
            }
            // The bodies are copied as they are, then the new ones are appended.
            Payload::CodeSectionStart { count, .. } => {
                code_left = *count;
                code = Some(CodeSection::new());
                if code_left == 0 {
                    finish_code(&mut out, code.take(), bodies);
                }
            }
            Payload::CodeSectionEntry(entry) => {
                let range = entry.range();
                if let Some(code) = code.as_mut() {
                    code.raw(&module[range.start as usize..range.end as usize]);
                }
                code_left -= 1;
                if code_left == 0 {
                    finish_code(&mut out, code.take(), bodies);
                }
            }
            _ => {
                if let Some((id, range)) = payload.as_section() {
                    out.section(&RawSection {
                        id,
                        data: &module[range.start as usize..range.end as usize],
                    });
                }
            }
        }
    }
    Ok(out.finish())
}

fn finish_code(out: &mut wasm_encoder::Module, code: Option<CodeSection>, bodies: &[Function]) {
    if let Some(mut code) = code {
        for body in bodies {
            code.function(body);
        }
        out.section(&code);
    }
}

/// The body of `turn(ptr, len)`: the `init` exports on the first turn, then `entry`.
fn turn_body(init: &[u32], entry: u32, started: u32) -> Function {
    use Instruction as I;
    let mut f = Function::new([]);
    f.instruction(&I::GlobalGet(started))
        .instruction(&I::I32Eqz)
        .instruction(&I::If(wasm_encoder::BlockType::Empty))
        .instruction(&I::I32Const(1))
        .instruction(&I::GlobalSet(started));
    for &func in init {
        f.instruction(&I::Call(func));
    }
    f.instruction(&I::End)
        .instruction(&I::LocalGet(0))
        .instruction(&I::LocalGet(1))
        .instruction(&I::Call(entry))
        .instruction(&I::End);
    f
}

/// The body of `cabi_export_realloc(old, old_size, align, size)`: `alloc(size + align -
/// 1)` rounded up to `align`, for the one use the canonical ABI makes of it here (a fresh
/// allocation for `turn`'s text).
fn realloc_body(alloc: u32) -> Function {
    use Instruction as I;
    let (align, size) = (2, 3);
    let mut f = Function::new([]);
    f.instruction(&I::LocalGet(size))
        .instruction(&I::LocalGet(align))
        .instruction(&I::I32Add)
        .instruction(&I::I32Const(1))
        .instruction(&I::I32Sub)
        .instruction(&I::Call(alloc))
        .instruction(&I::LocalGet(align))
        .instruction(&I::I32Add)
        .instruction(&I::I32Const(1))
        .instruction(&I::I32Sub)
        .instruction(&I::I32Const(0))
        .instruction(&I::LocalGet(align))
        .instruction(&I::I32Sub)
        .instruction(&I::I32And)
        .instruction(&I::End);
    f
}

fn read_layout(module: &[u8]) -> Result<Layout, ComponentizeError> {
    let mut layout = Layout::default();
    for payload in Parser::new(0).parse_all(module) {
        match payload? {
            Payload::TypeSection(reader) => {
                for group in reader {
                    for ty in group?.into_types() {
                        layout.types.push(match &ty.composite_type.inner {
                            wasmparser::CompositeInnerType::Func(f) => {
                                Some((f.params().to_vec(), f.results().to_vec()))
                            }
                            _ => None,
                        });
                    }
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import?;
                    if let TypeRef::Global(_) = import.ty {
                        layout.imported_globals += 1;
                    }
                    if let TypeRef::Func(ty) = import.ty {
                        if import.module == PREVIEW1 {
                            layout
                                .preview1
                                .insert(import.name.to_string(), layout.imported_funcs);
                        }
                        layout.func_types.push(ty);
                        layout.imported_funcs += 1;
                    }
                }
            }
            Payload::FunctionSection(reader) => {
                for ty in reader {
                    layout.func_types.push(ty?);
                    layout.defined_funcs += 1;
                }
            }
            Payload::GlobalSection(reader) => layout.defined_globals += reader.count(),
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export?;
                    layout
                        .exports
                        .push((export.name.to_string(), export.kind, export.index));
                }
            }
            Payload::Version { encoding, .. } if encoding != wasmparser::Encoding::Module => {
                return Err(ComponentizeError::Reactor(
                    "a reactor must be a core module, not a component".into(),
                ));
            }
            _ => {}
        }
    }
    Ok(layout)
}

/// The body of `_start` (see the module documentation).
fn start_body(
    init: &[u32],
    entry: u32,
    alloc: u32,
    programs: u32,
    (args_sizes_get, args_get, proc_exit): (u32, u32, u32),
    started: u32,
) -> Function {
    // Locals: 0 sizes (argc, buf_len), 1 argc, 2 argv, 3 buf, 4 arg, 5 len, 6 code,
    // 7 result, 8 i (the argument being run).
    let (sizes, argc, argv, buf, arg, len, code, result, i) = (0, 1, 2, 3, 4, 5, 6, 7, 8);
    let mut f = Function::new([(9, ValType::I32)]);
    let mem = |offset: u64, align: u32| MemArg {
        offset,
        align,
        target: wasm_encoder::MemArgTarget::Memory(0),
        ordering: None,
    };
    use Instruction as I;
    let empty = wasm_encoder::BlockType::Empty;
    // result = entry(code, len); a non-zero result is the exit code
    let run_entry = |f: &mut Function| {
        f.instruction(&I::LocalGet(code))
            .instruction(&I::LocalGet(len))
            .instruction(&I::Call(entry))
            .instruction(&I::LocalSet(result))
            .instruction(&I::LocalGet(result))
            .instruction(&I::If(empty))
            .instruction(&I::LocalGet(result))
            .instruction(&I::Call(proc_exit))
            .instruction(&I::End);
    };
    for &func in init {
        f.instruction(&I::Call(func));
    }
    // Started: a `turn` after `_start` does not run the `init` exports again.
    f.instruction(&I::I32Const(1))
        .instruction(&I::GlobalSet(started));
    // sizes = align4(alloc(8 + 3)); args_sizes_get(sizes, sizes + 4). `alloc` need not
    // align: preview1 writes 4-byte words.
    f.instruction(&I::I32Const(11)).instruction(&I::Call(alloc));
    align4(&mut f);
    f.instruction(&I::LocalSet(sizes))
        .instruction(&I::LocalGet(sizes))
        .instruction(&I::LocalGet(sizes))
        .instruction(&I::I32Const(4))
        .instruction(&I::I32Add)
        .instruction(&I::Call(args_sizes_get))
        .instruction(&I::Drop)
        .instruction(&I::LocalGet(sizes))
        .instruction(&I::I32Load(mem(0, 2)))
        .instruction(&I::LocalSet(argc));
    f.instruction(&I::LocalGet(argc))
        .instruction(&I::I32Const(2))
        .instruction(&I::I32GeU)
        .instruction(&I::If(empty));
    // argv = align4(alloc(argc * 4 + 3)); buf = alloc(buf_len); args_get(argv, buf)
    f.instruction(&I::LocalGet(argc))
        .instruction(&I::I32Const(4))
        .instruction(&I::I32Mul)
        .instruction(&I::I32Const(3))
        .instruction(&I::I32Add)
        .instruction(&I::Call(alloc));
    align4(&mut f);
    f.instruction(&I::LocalSet(argv))
        .instruction(&I::LocalGet(sizes))
        .instruction(&I::I32Load(mem(4, 2)))
        .instruction(&I::Call(alloc))
        .instruction(&I::LocalSet(buf))
        .instruction(&I::LocalGet(argv))
        .instruction(&I::LocalGet(buf))
        .instruction(&I::Call(args_get))
        .instruction(&I::Drop)
        .instruction(&I::I32Const(1))
        .instruction(&I::LocalSet(i));
    // For each program argument: arg = argv[i]; len = strlen(arg)
    f.instruction(&I::Loop(empty))
        .instruction(&I::LocalGet(argv))
        .instruction(&I::LocalGet(i))
        .instruction(&I::I32Const(4))
        .instruction(&I::I32Mul)
        .instruction(&I::I32Add)
        .instruction(&I::I32Load(mem(0, 2)))
        .instruction(&I::LocalSet(arg))
        .instruction(&I::I32Const(0))
        .instruction(&I::LocalSet(len))
        .instruction(&I::Block(empty))
        .instruction(&I::Loop(empty))
        .instruction(&I::LocalGet(arg))
        .instruction(&I::LocalGet(len))
        .instruction(&I::I32Add)
        .instruction(&I::I32Load8U(mem(0, 0)))
        .instruction(&I::I32Eqz)
        .instruction(&I::BrIf(1))
        .instruction(&I::LocalGet(len))
        .instruction(&I::I32Const(1))
        .instruction(&I::I32Add)
        .instruction(&I::LocalSet(len))
        .instruction(&I::Br(0))
        .instruction(&I::End)
        .instruction(&I::End);
    // code = alloc(len); copy; entry owns `code` from here
    f.instruction(&I::LocalGet(len))
        .instruction(&I::Call(alloc))
        .instruction(&I::LocalSet(code))
        .instruction(&I::LocalGet(code))
        .instruction(&I::LocalGet(arg))
        .instruction(&I::LocalGet(len))
        .instruction(&I::MemoryCopy {
            src_mem: 0,
            dst_mem: 0,
        });
    run_entry(&mut f);
    // i += 1; again while i < argc and i <= programs
    f.instruction(&I::LocalGet(i))
        .instruction(&I::I32Const(1))
        .instruction(&I::I32Add)
        .instruction(&I::LocalTee(i))
        .instruction(&I::LocalGet(argc))
        .instruction(&I::I32LtU)
        .instruction(&I::LocalGet(i))
        .instruction(&I::I32Const(programs as i32))
        .instruction(&I::I32LeU)
        .instruction(&I::I32And)
        .instruction(&I::BrIf(0))
        .instruction(&I::End);
    // Without an argument the entry gets an empty program.
    f.instruction(&I::Else);
    run_entry(&mut f);
    f.instruction(&I::End).instruction(&I::End);
    f
}

/// Rounds the address on top of the stack up to a multiple of 4.
fn align4(f: &mut Function) {
    f.instruction(&Instruction::I32Const(3))
        .instruction(&Instruction::I32Add)
        .instruction(&Instruction::I32Const(-4))
        .instruction(&Instruction::I32And);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Runs a preview1 command module's `_start` with `args` (after `link` adds any
    /// imports of its own) and returns the code it exits with.
    pub(crate) fn exit_code_of_command(
        command: &[u8],
        args: &[&str],
        link: impl FnOnce(&mut wasmtime::Linker<wasmtime_wasi::p1::WasiP1Ctx>),
    ) -> i32 {
        let engine = wasmtime::Engine::default();
        let module = wasmtime::Module::new(&engine, command).unwrap();
        let mut linker = wasmtime::Linker::new(&engine);
        wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s| s).unwrap();
        link(&mut linker);
        let wasi = wasmtime_wasi::WasiCtxBuilder::new().args(args).build_p1();
        let mut store = wasmtime::Store::new(&engine, wasi);
        let instance = linker.instantiate(&mut store, &module).unwrap();
        let err = instance
            .get_typed_func::<(), ()>(&mut store, "_start")
            .unwrap()
            .call(&mut store, ())
            .unwrap_err();
        err.downcast_ref::<wasmtime_wasi::I32Exit>()
            .unwrap_or_else(|| panic!("{err:?}"))
            .0
    }

    /// A reactor whose `entry` returns the program text's length plus its first byte, and
    /// whose `_initialize` sets a global the entry adds in.
    const REACTOR: &str = r#"(module
        (import "wasi_snapshot_preview1" "args_sizes_get" (func $sizes (param i32 i32) (result i32)))
        (import "wasi_snapshot_preview1" "args_get" (func $get (param i32 i32) (result i32)))
        (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
        (memory (export "memory") 1)
        (global $next (mut i32) (i32.const 1024))
        (global $inited (mut i32) (i32.const 0))
        (func (export "_initialize") (global.set $inited (i32.const 10)))
        (func (export "alloc") (param i32) (result i32)
            (global.get $next)
            (global.set $next (i32.add (global.get $next) (local.get 0))))
        (func (export "turn") (param i32 i32) (result i32)
            (i32.add (global.get $inited)
                (i32.add (local.get 1) (i32.load8_u (local.get 0)))))
        (func (export "shutdown") (result i32) (i32.const 0)))"#;

    fn start() -> ReactorStart {
        ReactorStart {
            init: vec!["_initialize".into(), "missing-init".into()],
            entry: "turn".into(),
            alloc: "alloc".into(),
            programs: 1,
        }
    }

    #[test]
    fn the_start_passes_the_first_argument_and_exits_with_the_result() {
        let module = wat::parse_str(REACTOR).unwrap();
        let command = command_from_reactor(&module, &start()).unwrap();
        wasmparser::Validator::new().validate_all(&command).unwrap();
        let exports: Vec<String> = Parser::new(0)
            .parse_all(&command)
            .filter_map(|p| match p.unwrap() {
                Payload::ExportSection(r) => Some(
                    r.into_iter()
                        .map(|e| e.unwrap().name.to_string())
                        .collect::<Vec<_>>(),
                ),
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(exports, ["memory", "_start", "turn", "cabi_export_realloc"]);

        // Run it with a preview1 host: argv[1] = "A!" gives 10 + 2 + 65 = 77.
        assert_eq!(exit_code_of_command(&command, &["prog", "A!"], |_| {}), 77);
    }

    #[test]
    fn two_programs_run_in_turn_and_the_first_failure_ends_the_start() {
        // `turn` succeeds (0) on a text starting with `o`, adding its length to a
        // global; any other text fails with 100 plus that global.
        let module = wat::parse_str(
            r#"(module
            (import "wasi_snapshot_preview1" "args_sizes_get" (func $sizes (param i32 i32) (result i32)))
            (import "wasi_snapshot_preview1" "args_get" (func $get (param i32 i32) (result i32)))
            (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
            (memory (export "memory") 1)
            (global $next (mut i32) (i32.const 1024))
            (global $seen (mut i32) (i32.const 0))
            (func (export "alloc") (param i32) (result i32)
                (global.get $next)
                (global.set $next (i32.add (global.get $next) (local.get 0))))
            (func (export "turn") (param i32 i32) (result i32)
                (if (result i32) (i32.eq (i32.load8_u (local.get 0)) (i32.const 111))
                    (then (global.set $seen (i32.add (global.get $seen) (local.get 1))) (i32.const 0))
                    (else (i32.add (i32.const 100) (global.get $seen))))))"#,
        )
        .unwrap();
        let start = |programs| ReactorStart {
            init: vec![],
            entry: "turn".into(),
            alloc: "alloc".into(),
            programs,
        };
        let two = command_from_reactor(&module, &start(2)).unwrap();
        wasmparser::Validator::new().validate_all(&two).unwrap();
        // The first program ran (seen = 3), then the second failed.
        assert_eq!(
            exit_code_of_command(&two, &["prog", "ok!", "x"], |_| {}),
            103
        );
        // A failing first program ends it: the second is not run.
        assert_eq!(
            exit_code_of_command(&two, &["prog", "x", "ok"], |_| {}),
            100
        );
        // One program only runs argv[1]; later arguments are the program's own.
        let one = command_from_reactor(&module, &start(1)).unwrap();
        assert_eq!(
            exit_code_of_command(&one, &["prog", "x", "ok"], |_| {}),
            100
        );
        assert_eq!(exit_code_of_command(&two, &["prog"], |_| {}), 100);
    }

    #[test]
    fn a_wrong_convention_is_refused_with_the_export_named() {
        let module = wat::parse_str(REACTOR).unwrap();
        let wrong = ReactorStart {
            entry: "shutdown".into(),
            ..start()
        };
        let e = command_from_reactor(&module, &wrong)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`shutdown`"), "{e}");
        let missing = ReactorStart {
            alloc: "malloc".into(),
            ..start()
        };
        let e = command_from_reactor(&module, &missing)
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not export a function `malloc`"), "{e}");
    }
}
