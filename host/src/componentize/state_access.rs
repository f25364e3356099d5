//! Doors into a component's state: an exported instance, [`STATE_INSTANCE`], whose
//! functions read and write the linear memories and mutable globals of the core instances
//! inside the component, so that the host can copy a session's interpreter out of one
//! instance and into a fresh instance of the same compiled code (`crate::state`).
//!
//! wasmtime's API reaches a component's exports only, never the core memories and globals
//! behind them (short of `guest_debug`, which instruments every instruction). So each core
//! module gets exports of its defined memories and mutable globals, and one more core
//! module, the *accessor*, imports them all and defines, per memory `N` and global `G`:
//!
//! - `memoryN-size: func() -> u32`, its size in 64 KiB pages;
//! - `memoryN-view: func() -> list<u8>`: the whole memory, as a list the host reads in
//!   place (the list's pointer and length are written over the memory's first 8 bytes,
//!   which the function's post-return puts back before the host looks);
//! - `memoryN-grow: func(pages: u32) -> s32`, as `memory.grow`;
//! - `memoryN-seek: func(offset: u32)` then `memoryN-write: func(bytes: list<u8>)`: the
//!   bytes land at `offset` (the write's `realloc` answers with it, so the canonical ABI's
//!   copy is the write);
//! - `globalG-get: func() -> u64` and `globalG-set: func(value: u64)`: the value's bits
//!   (an `i32` or `f32` in the low half).
//!
//! Only what the host itself calls between calls of a session touches these, and nothing
//! inside the component can reach them.

use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{
    Alias, CanonicalFunctionSection, CanonicalOption, CodeSection, ComponentAliasSection,
    ComponentExportKind, ComponentExportSection, ComponentInstanceSection, ComponentTypeSection,
    ComponentValType, ConstExpr, ExportKind, ExportSection, Function, FunctionSection,
    GlobalSection, GlobalType, ImportSection, InstanceSection, Instruction, MemArg, ModuleArg,
    PrimitiveValType, RawSection, TypeSection, ValType,
};
use wasmparser::{
    CanonicalFunction, ComponentAlias, ComponentExternalKind, ComponentOuterAliasKind,
    ExternalKind, Parser, Payload,
};

use super::error::ComponentizeError;

/// The name of the exported instance that holds the accessors.
pub const STATE_INSTANCE: &str = "runbox-state";

/// The prefix of the exports added to each core module.
const EXPORT_PREFIX: &str = "runbox-state:";

fn invalid(why: impl Into<String>) -> ComponentizeError {
    ComponentizeError::StateAccess(why.into())
}

/// A core value type a global may have here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scalar {
    I32,
    I64,
    F32,
    F64,
}

impl Scalar {
    fn of(ty: wasmparser::ValType) -> Result<Scalar, ComponentizeError> {
        Ok(match ty {
            wasmparser::ValType::I32 => Scalar::I32,
            wasmparser::ValType::I64 => Scalar::I64,
            wasmparser::ValType::F32 => Scalar::F32,
            wasmparser::ValType::F64 => Scalar::F64,
            other => return Err(invalid(format!("a mutable global of type {other:?}"))),
        })
    }

    fn val_type(self) -> ValType {
        match self {
            Scalar::I32 => ValType::I32,
            Scalar::I64 => ValType::I64,
            Scalar::F32 => ValType::F32,
            Scalar::F64 => ValType::F64,
        }
    }
}

/// One core module's state, as its added exports name it.
#[derive(Default)]
struct ModuleState {
    /// Each defined memory's export name and type.
    memories: Vec<(String, wasmparser::MemoryType)>,
    /// Each defined mutable global's export name and type.
    globals: Vec<(String, Scalar)>,
}

/// The sizes of the component's index spaces that the additions extend.
#[derive(Default, Debug)]
struct IndexSpaces {
    core_modules: u32,
    core_instances: u32,
    core_funcs: u32,
    core_memories: u32,
    types: u32,
    funcs: u32,
    instances: u32,
}

impl IndexSpaces {
    fn count(&mut self, kind: ComponentExternalKind) {
        match kind {
            ComponentExternalKind::Module => self.core_modules += 1,
            ComponentExternalKind::Func => self.funcs += 1,
            ComponentExternalKind::Type => self.types += 1,
            ComponentExternalKind::Instance => self.instances += 1,
            ComponentExternalKind::Component | ComponentExternalKind::Value => {}
        }
    }

    fn count_core(&mut self, kind: ExternalKind) {
        match kind {
            ExternalKind::Func | ExternalKind::FuncExact => self.core_funcs += 1,
            ExternalKind::Memory => self.core_memories += 1,
            _ => {}
        }
    }
}

/// `component` with [`STATE_INSTANCE`] added. Fails for what it cannot reach: a module
/// instantiated twice, a global of a reference or vector type, a component that imports
/// or nests modules.
pub fn add_state_access(component: &[u8]) -> Result<Vec<u8>, ComponentizeError> {
    let mut out = wasm_encoder::Component::new();
    let mut spaces = IndexSpaces::default();
    // Each module's state, by module index; each instantiated module's instance.
    let mut modules: Vec<Option<ModuleState>> = Vec::new();
    let mut instantiated: Vec<(u32, u32)> = Vec::new();
    let mut nested = 0u32;
    let mut top_level_seen = false;
    for payload in Parser::new(0).parse_all(component) {
        let payload = payload?;
        if nested > 0 {
            match payload {
                Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => nested += 1,
                Payload::End(_) => nested -= 1,
                _ => {}
            }
            continue;
        }
        match &payload {
            Payload::Version { encoding, .. } => {
                if top_level_seen || *encoding != wasmparser::Encoding::Component {
                    return Err(invalid("not a component"));
                }
                top_level_seen = true;
            }
            Payload::ModuleSection {
                unchecked_range, ..
            } => {
                let bytes =
                    &component[unchecked_range.start as usize..unchecked_range.end as usize];
                let (module, state) = export_state(bytes)?;
                out.section(&RawSection {
                    id: wasm_encoder::ComponentSectionId::CoreModule as u8,
                    data: &module,
                });
                modules.push(Some(state));
                spaces.core_modules += 1;
                nested = 1;
            }
            Payload::ComponentSection {
                unchecked_range, ..
            } => {
                raw_section(
                    &mut out,
                    component,
                    wasm_encoder::ComponentSectionId::Component as u8,
                    unchecked_range.start,
                    unchecked_range.end,
                );
                nested = 1;
            }
            Payload::InstanceSection(reader) => {
                for instance in reader.clone() {
                    if let wasmparser::Instance::Instantiate { module_index, .. } = instance? {
                        if instantiated.iter().any(|(m, _)| *m == module_index) {
                            return Err(invalid("a module is instantiated twice"));
                        }
                        instantiated.push((module_index, spaces.core_instances));
                    }
                    spaces.core_instances += 1;
                }
                copy_section(&mut out, component, &payload);
            }
            Payload::ComponentInstanceSection(reader) => {
                spaces.instances += reader.count();
                copy_section(&mut out, component, &payload);
            }
            Payload::ComponentAliasSection(reader) => {
                for alias in reader.clone() {
                    match alias? {
                        ComponentAlias::CoreInstanceExport { kind, .. } => spaces.count_core(kind),
                        ComponentAlias::InstanceExport { kind, .. } => {
                            if kind == ComponentExternalKind::Module {
                                return Err(invalid("a module is aliased from an instance"));
                            }
                            spaces.count(kind)
                        }
                        ComponentAlias::Outer { kind, .. } => match kind {
                            ComponentOuterAliasKind::Type => spaces.types += 1,
                            ComponentOuterAliasKind::CoreModule => {
                                return Err(invalid("a module is aliased from outside"))
                            }
                            ComponentOuterAliasKind::CoreType
                            | ComponentOuterAliasKind::Component => {}
                        },
                    }
                }
                copy_section(&mut out, component, &payload);
            }
            Payload::ComponentCanonicalSection(reader) => {
                for function in reader.clone() {
                    match function? {
                        CanonicalFunction::Lift { .. } => spaces.funcs += 1,
                        _ => spaces.core_funcs += 1,
                    }
                }
                copy_section(&mut out, component, &payload);
            }
            Payload::ComponentImportSection(reader) => {
                for import in reader.clone() {
                    let kind = import?.ty.kind();
                    if kind == ComponentExternalKind::Module {
                        return Err(invalid("a module is imported"));
                    }
                    spaces.count(kind);
                }
                copy_section(&mut out, component, &payload);
            }
            Payload::ComponentExportSection(reader) => {
                for export in reader.clone() {
                    spaces.count(export?.kind);
                }
                copy_section(&mut out, component, &payload);
            }
            Payload::ComponentTypeSection(reader) => {
                spaces.types += reader.count();
                copy_section(&mut out, component, &payload);
            }
            Payload::ComponentStartSection { .. } => {
                return Err(invalid("a component start function"));
            }
            Payload::End(_) => {}
            _ => copy_section(&mut out, component, &payload),
        }
    }
    let mut reached = Vec::new();
    for (module, instance) in instantiated {
        if let Some(Some(state)) = modules.get_mut(module as usize) {
            reached.push((instance, std::mem::take(state)));
        }
    }
    append_accessors(&mut out, &spaces, &reached);
    Ok(out.finish())
}

fn copy_section(out: &mut wasm_encoder::Component, wasm: &[u8], payload: &Payload<'_>) {
    if let Some((id, range)) = payload.as_section() {
        raw_section(out, wasm, id, range.start, range.end);
    }
}

fn raw_section<N: TryInto<usize>>(
    out: &mut wasm_encoder::Component,
    wasm: &[u8],
    id: u8,
    start: N,
    end: N,
) {
    let (Ok(start), Ok(end)) = (start.try_into(), end.try_into()) else {
        return;
    };
    out.section(&RawSection {
        id,
        data: &wasm[start..end],
    });
}

/// The module with exports of its defined memories and mutable globals, and their names.
fn export_state(module: &[u8]) -> Result<(Vec<u8>, ModuleState), ComponentizeError> {
    let mut state = ModuleState::default();
    let (mut imported_memories, mut imported_globals) = (0u32, 0u32);
    let mut added: Vec<(String, ExportKind, u32)> = Vec::new();
    for payload in Parser::new(0).parse_all(module) {
        match payload? {
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    match import?.ty {
                        wasmparser::TypeRef::Memory(_) => imported_memories += 1,
                        wasmparser::TypeRef::Global(_) => imported_globals += 1,
                        _ => {}
                    }
                }
            }
            Payload::MemorySection(reader) => {
                for (i, memory) in reader.into_iter().enumerate() {
                    let memory = memory?;
                    if memory.memory64 || memory.shared {
                        return Err(invalid("a 64-bit or shared memory"));
                    }
                    let name = format!("{EXPORT_PREFIX}memory{i}");
                    added.push((
                        name.clone(),
                        ExportKind::Memory,
                        imported_memories + i as u32,
                    ));
                    state.memories.push((name, memory));
                }
            }
            Payload::GlobalSection(reader) => {
                for (i, global) in reader.into_iter().enumerate() {
                    let ty = global?.ty;
                    if !ty.mutable {
                        continue;
                    }
                    let name = format!("{EXPORT_PREFIX}global{i}");
                    added.push((
                        name.clone(),
                        ExportKind::Global,
                        imported_globals + i as u32,
                    ));
                    state.globals.push((name, Scalar::of(ty.content_type)?));
                }
            }
            _ => {}
        }
    }

    // The module again, its export section with the additions (made where it would be).
    let mut out = wasm_encoder::Module::new();
    let mut exported = false;
    let write_exports = |out: &mut wasm_encoder::Module,
                         existing: Option<wasmparser::ExportSectionReader<'_>>|
     -> Result<(), ComponentizeError> {
        let mut exports = ExportSection::new();
        if let Some(reader) = existing {
            for export in reader {
                let export = export?;
                let kind = RoundtripReencoder.export_kind(export.kind).map_err(|e| {
                    ComponentizeError::Reencode(format!("an export of kind {:?}: {e}", export.kind))
                })?;
                exports.export(export.name, kind, export.index);
            }
        }
        for (name, kind, index) in &added {
            exports.export(name, *kind, *index);
        }
        out.section(&exports);
        Ok(())
    };
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload?;
        match &payload {
            Payload::ExportSection(reader) => {
                write_exports(&mut out, Some(reader.clone()))?;
                exported = true;
                continue;
            }
            // The sections that come after exports: an export section goes before them.
            Payload::StartSection { .. }
            | Payload::ElementSection(_)
            | Payload::DataCountSection { .. }
            | Payload::CodeSectionStart { .. }
            | Payload::DataSection(_)
                if !exported =>
            {
                write_exports(&mut out, None)?;
                exported = true;
            }
            Payload::End(_) if !exported => {
                write_exports(&mut out, None)?;
                exported = true;
            }
            _ => {}
        }
        if let Some((id, range)) = payload.as_section() {
            out.section(&RawSection {
                id,
                data: &module[range.start as usize..range.end as usize],
            });
        }
    }
    Ok((out.finish(), state))
}

/// The functions the accessor defines for one memory, in the order it defines them.
const MEMORY_FUNCS: [&str; 7] = [
    "size",
    "view",
    "view-post",
    "grow",
    "seek",
    "realloc",
    "write",
];
/// And for one global.
const GLOBAL_FUNCS: [&str; 2] = ["get", "set"];

/// Appends the accessor module, its instance, the lifted accessors and the exported
/// instance that holds them.
fn append_accessors(
    out: &mut wasm_encoder::Component,
    spaces: &IndexSpaces,
    reached: &[(u32, ModuleState)],
) {
    let memories: Vec<(u32, &String, &wasmparser::MemoryType)> = reached
        .iter()
        .flat_map(|(i, s)| s.memories.iter().map(move |(n, t)| (*i, n, t)))
        .collect();
    let globals: Vec<(u32, &String, Scalar)> = reached
        .iter()
        .flat_map(|(i, s)| s.globals.iter().map(move |(n, t)| (*i, n, *t)))
        .collect();

    out.section(&wasm_encoder::ModuleSection(&accessor_module(
        &memories, &globals,
    )));
    let accessor_module = spaces.core_modules;
    let mut instances = InstanceSection::new();
    let names: Vec<String> = reached.iter().map(|(i, _)| i.to_string()).collect();
    instances.instantiate(
        accessor_module,
        reached
            .iter()
            .zip(&names)
            .map(|((i, _), name)| (name.as_str(), ModuleArg::Instance(*i))),
    );
    out.section(&instances);
    let accessor = spaces.core_instances;

    // The memories, as core memories of the component, then the accessor's functions.
    let mut aliases = ComponentAliasSection::new();
    for (instance, name, _) in &memories {
        aliases.alias(Alias::CoreInstanceExport {
            instance: *instance,
            kind: ExportKind::Memory,
            name,
        });
    }
    let core_names = accessor_export_names(memories.len(), globals.len());
    for name in &core_names {
        aliases.alias(Alias::CoreInstanceExport {
            instance: accessor,
            kind: ExportKind::Func,
            name,
        });
    }
    out.section(&aliases);
    let core_func = |n: usize| spaces.core_funcs + n as u32;
    let core_memory = |m: usize| spaces.core_memories + m as u32;

    // Types: list<u8>, then one function type per shape.
    let mut types = ComponentTypeSection::new();
    let t = |n: u32| spaces.types + n;
    let list = ComponentValType::Type(t(0));
    let (u32_, s32, u64_) = (
        ComponentValType::Primitive(PrimitiveValType::U32),
        ComponentValType::Primitive(PrimitiveValType::S32),
        ComponentValType::Primitive(PrimitiveValType::U64),
    );
    types
        .defined_type()
        .list(ComponentValType::Primitive(PrimitiveValType::U8));
    let no_params: [(&str, ComponentValType); 0] = [];
    types.function().params(no_params).result(Some(u32_)); // 1: size
    types.function().params(no_params).result(Some(list)); // 2: view
    types.function().params([("pages", u32_)]).result(Some(s32)); // 3: grow
    types.function().params([("offset", u32_)]).result(None); // 4: seek
    types.function().params([("bytes", list)]).result(None); // 5: write
    types.function().params(no_params).result(Some(u64_)); // 6: get
    types.function().params([("value", u64_)]).result(None); // 7: set
    out.section(&types);

    let mut lifts = CanonicalFunctionSection::new();
    let mut items: Vec<(String, u32)> = Vec::new();
    let mut lift = |name: String, func: usize, ty: u32, options: Vec<CanonicalOption>| {
        lifts.lift(core_func(func), t(ty), options);
        items.push((name, spaces.funcs + items.len() as u32));
    };
    for m in 0..memories.len() {
        let base = m * MEMORY_FUNCS.len();
        let memory = CanonicalOption::Memory(core_memory(m));
        lift(format!("memory{m}-size"), base, 1, vec![]);
        lift(
            format!("memory{m}-view"),
            base + 1,
            2,
            vec![memory, CanonicalOption::PostReturn(core_func(base + 2))],
        );
        lift(format!("memory{m}-grow"), base + 3, 3, vec![]);
        lift(format!("memory{m}-seek"), base + 4, 4, vec![]);
        lift(
            format!("memory{m}-write"),
            base + 6,
            5,
            vec![memory, CanonicalOption::Realloc(core_func(base + 5))],
        );
    }
    let globals_base = memories.len() * MEMORY_FUNCS.len();
    for g in 0..globals.len() {
        let base = globals_base + g * GLOBAL_FUNCS.len();
        lift(format!("global{g}-get"), base, 6, vec![]);
        lift(format!("global{g}-set"), base + 1, 7, vec![]);
    }
    out.section(&lifts);

    let mut instance = ComponentInstanceSection::new();
    instance.export_items(
        items
            .iter()
            .map(|(name, func)| (name.as_str(), ComponentExportKind::Func, *func)),
    );
    out.section(&instance);
    let mut exports = ComponentExportSection::new();
    exports.export(
        STATE_INSTANCE,
        ComponentExportKind::Instance,
        spaces.instances,
        None,
    );
    out.section(&exports);
}

/// The accessor's export names, in the order of its functions.
fn accessor_export_names(memories: usize, globals: usize) -> Vec<String> {
    let mut names = Vec::new();
    for m in 0..memories {
        names.extend(MEMORY_FUNCS.iter().map(|f| format!("memory{m}-{f}")));
    }
    for g in 0..globals {
        names.extend(GLOBAL_FUNCS.iter().map(|f| format!("global{g}-{f}")));
    }
    names
}

/// The accessor module: imports every memory and global, defines the functions.
fn accessor_module(
    memories: &[(u32, &String, &wasmparser::MemoryType)],
    globals: &[(u32, &String, Scalar)],
) -> wasm_encoder::Module {
    let mut types = TypeSection::new();
    const T_VOID_I32: u32 = 0; // [] -> [i32]
    const T_I32_VOID: u32 = 1; // [i32] -> []
    const T_I32_I32: u32 = 2; // [i32] -> [i32]
    const T_REALLOC: u32 = 3; // [i32 i32 i32 i32] -> [i32]
    const T_I32_I32_VOID: u32 = 4; // [i32 i32] -> []
    const T_VOID_I64: u32 = 5; // [] -> [i64]
    const T_I64_VOID: u32 = 6; // [i64] -> []
    let i32_ = ValType::I32;
    types.ty().function([], [i32_]);
    types.ty().function([i32_], []);
    types.ty().function([i32_], [i32_]);
    types.ty().function([i32_; 4], [i32_]);
    types.ty().function([i32_, i32_], []);
    types.ty().function([], [ValType::I64]);
    types.ty().function([ValType::I64], []);

    let mut imports = ImportSection::new();
    for (instance, name, ty) in memories {
        imports.import(
            &instance.to_string(),
            name,
            wasm_encoder::MemoryType {
                minimum: 0,
                maximum: None,
                memory64: false,
                shared: false,
                page_size_log2: ty.page_size_log2,
            },
        );
    }
    for (instance, name, ty) in globals {
        imports.import(
            &instance.to_string(),
            name,
            GlobalType {
                val_type: ty.val_type(),
                mutable: true,
                shared: false,
            },
        );
    }

    // Per memory: the 8 bytes the view writes over, and where the next write goes.
    let mut own_globals = GlobalSection::new();
    for _ in memories {
        own_globals.global(
            GlobalType {
                val_type: ValType::I64,
                mutable: true,
                shared: false,
            },
            &ConstExpr::i64_const(0),
        );
        own_globals.global(
            GlobalType {
                val_type: ValType::I32,
                mutable: true,
                shared: false,
            },
            &ConstExpr::i32_const(0),
        );
    }
    let imported_globals = globals.len() as u32;
    let saved = |m: u32| imported_globals + 2 * m;
    let seek = |m: u32| imported_globals + 2 * m + 1;

    let mut functions = FunctionSection::new();
    let mut code = CodeSection::new();
    let mut define = |ty: u32, locals: Vec<(u32, ValType)>, body: &[Instruction<'_>]| {
        functions.function(ty);
        let mut f = Function::new(locals);
        for instruction in body {
            f.instruction(instruction);
        }
        f.instruction(&Instruction::End);
        code.function(&f);
    };
    for (m, (_, _, ty)) in memories.iter().enumerate() {
        let m = m as u32;
        let page_shift = i32::from(ty.page_size_log2.map_or(16u8, |p| p as u8));
        let word = |offset: u64, align: u32| MemArg {
            offset,
            align,
            target: wasm_encoder::MemArgTarget::Memory(m),
            ordering: None,
        };
        // size
        define(T_VOID_I32, vec![], &[Instruction::MemorySize(m)]);
        // view: the list (0, size in bytes) over the first 8 bytes, whose value is kept;
        // a memory of 4 GiB has no length a u32 holds.
        define(
            T_VOID_I32,
            vec![],
            &[
                Instruction::MemorySize(m),
                Instruction::I32Const(1 << (32 - page_shift)),
                Instruction::I32GeU,
                Instruction::If(wasm_encoder::BlockType::Empty),
                Instruction::Unreachable,
                Instruction::End,
                Instruction::I32Const(0),
                Instruction::I64Load(word(0, 0)),
                Instruction::GlobalSet(saved(m)),
                Instruction::I32Const(0),
                Instruction::I32Const(0),
                Instruction::I32Store(word(0, 0)),
                Instruction::I32Const(0),
                Instruction::MemorySize(m),
                Instruction::I32Const(page_shift),
                Instruction::I32Shl,
                Instruction::I32Store(word(4, 0)),
                Instruction::I32Const(0),
            ],
        );
        // view-post: the 8 bytes back
        define(
            T_I32_VOID,
            vec![],
            &[
                Instruction::I32Const(0),
                Instruction::GlobalGet(saved(m)),
                Instruction::I64Store(word(0, 0)),
            ],
        );
        // grow
        define(
            T_I32_I32,
            vec![],
            &[Instruction::LocalGet(0), Instruction::MemoryGrow(m)],
        );
        // seek
        define(
            T_I32_VOID,
            vec![],
            &[Instruction::LocalGet(0), Instruction::GlobalSet(seek(m))],
        );
        // realloc: where the write goes
        define(T_REALLOC, vec![], &[Instruction::GlobalGet(seek(m))]);
        // write: the canonical ABI has copied the bytes already
        define(T_I32_I32_VOID, vec![], &[]);
    }
    for (g, (_, _, ty)) in globals.iter().enumerate() {
        let g = g as u32;
        let (get, set): (Vec<Instruction<'_>>, Vec<Instruction<'_>>) = match ty {
            Scalar::I32 => (
                vec![Instruction::GlobalGet(g), Instruction::I64ExtendI32U],
                vec![
                    Instruction::LocalGet(0),
                    Instruction::I32WrapI64,
                    Instruction::GlobalSet(g),
                ],
            ),
            Scalar::I64 => (
                vec![Instruction::GlobalGet(g)],
                vec![Instruction::LocalGet(0), Instruction::GlobalSet(g)],
            ),
            Scalar::F32 => (
                vec![
                    Instruction::GlobalGet(g),
                    Instruction::I32ReinterpretF32,
                    Instruction::I64ExtendI32U,
                ],
                vec![
                    Instruction::LocalGet(0),
                    Instruction::I32WrapI64,
                    Instruction::F32ReinterpretI32,
                    Instruction::GlobalSet(g),
                ],
            ),
            Scalar::F64 => (
                vec![Instruction::GlobalGet(g), Instruction::I64ReinterpretF64],
                vec![
                    Instruction::LocalGet(0),
                    Instruction::F64ReinterpretI64,
                    Instruction::GlobalSet(g),
                ],
            ),
        };
        define(T_VOID_I64, vec![], &get);
        define(T_I64_VOID, vec![], &set);
    }

    let mut exports = ExportSection::new();
    for (index, name) in accessor_export_names(memories.len(), globals.len())
        .iter()
        .enumerate()
    {
        exports.export(name, ExportKind::Func, index as u32);
    }

    let mut module = wasm_encoder::Module::new();
    module.section(&types);
    module.section(&imports);
    module.section(&functions);
    module.section(&own_globals);
    module.section(&exports);
    module.section(&code);
    module
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_exports_its_memories_and_mutable_globals() {
        let module = wat_module(
            r#"(module
                (import "a" "g" (global (mut i32)))
                (memory 1)
                (global $sp (mut i32) (i32.const 1024))
                (global $k i32 (i32.const 7))
                (global $f (mut f64) (f64.const 1.5))
                (export "memory" (memory 0))
                (func (export "f") (result i32) global.get $sp))"#,
        );
        let (instrumented, state) = export_state(&module).unwrap();
        wasmparser::Validator::new()
            .validate_all(&instrumented)
            .unwrap();
        let names: Vec<_> = state.globals.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["runbox-state:global0", "runbox-state:global2"]);
        assert_eq!(state.globals[1].1, Scalar::F64);
        assert_eq!(state.memories.len(), 1);
    }

    fn wat_module(text: &str) -> Vec<u8> {
        wat::parse_str(text).unwrap()
    }
}
