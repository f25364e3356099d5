//! What a module program's `import` finds:
//!
//! - the Node.js modules `require()` knows (`fs`, `node:fs`, `readline`, `util`, …), as a
//!   module whose default export is `require(name)` and whose named exports are its
//!   properties (Node.js's CommonJS interop);
//! - `runbox:tools`, the tools of code mode (`tools.js`): a module whose named exports are
//!   the servers of `/tools/tools.json`, `callTool` and `ToolError`, and whose default
//!   export holds the servers;
//! - files of the working directory by relative or absolute path (`./util.js`,
//!   `./types.ts`), TypeScript ones transpiled; `./util` finds `util.ts` or `util.js`, and
//!   `./util.js` finds `util.ts` when only that exists, as TypeScript resolves them.
//!
//! A file is read once per run: a session's next call reads it again.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use boa_engine::module::{
    Module, ModuleLoader, ModuleRequest, Referrer, SyntheticModuleInitializer,
};
use boa_engine::property::PropertyKey;
use boa_engine::{js_string, Context, JsError, JsNativeError, JsResult, JsString, JsValue, Source};

use crate::typescript;

/// The module loader of an interpreter.
#[derive(Default)]
pub struct Modules {
    /// The files loaded in this run, by normalized path.
    files: RefCell<HashMap<PathBuf, Module>>,
    /// `runbox:tools` as this run made it (its servers are those of the run's tools.json).
    tools: RefCell<Option<Module>>,
}

impl Modules {
    /// Forgets the files loaded, at the start of a run.
    pub fn forget_files(&self) {
        self.files.borrow_mut().clear();
        self.tools.borrow_mut().take();
    }

    fn load_file(&self, path: PathBuf, context: &mut Context) -> JsResult<Module> {
        if let Some(module) = self.files.borrow().get(&path) {
            return Ok(module.clone());
        }
        let name = path.to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).map_err(|e| {
            JsNativeError::error().with_message(format!("Cannot find module '{name}': {e}"))
        })?;
        let is_typescript = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("ts" | "mts" | "cts")
        );
        let code = if is_typescript {
            typescript::transpile(&text, &name)
                .map_err(|e| JsNativeError::syntax().with_message(format!("{name}: {e}")))?
                .code
        } else {
            text
        };
        let module = Module::parse(Source::from_bytes(&code).with_path(&path), None, context)?;
        self.files.borrow_mut().insert(path, module.clone());
        Ok(module)
    }
}

impl ModuleLoader for Modules {
    async fn load_imported_module(
        self: Rc<Self>,
        referrer: Referrer,
        request: ModuleRequest,
        context: &RefCell<&mut Context>,
    ) -> JsResult<Module> {
        let specifier = request.specifier().to_std_string_escaped();
        let context = &mut **context.borrow_mut();
        if is_path(&specifier) {
            let base = match &referrer {
                Referrer::Module(module) => module.path().and_then(Path::parent),
                _ => None,
            };
            let path = resolve(base.unwrap_or(Path::new("")), &specifier);
            return self.load_file(path, context);
        }
        if specifier == TOOLS {
            if let Some(module) = self.tools.borrow().as_ref() {
                return Ok(module.clone());
            }
            let module = required_module(request.specifier(), Interop::EsModule, context)?;
            *self.tools.borrow_mut() = Some(module.clone());
            return Ok(module);
        }
        required_module(request.specifier(), Interop::CommonJs, context)
    }
}

/// The specifier of the tools of code mode.
const TOOLS: &str = "runbox:tools";

/// What the default export of a module made from `require()`'s value is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Interop {
    /// The value itself (Node.js's CommonJS interop).
    CommonJs,
    /// Its `default` property: the value is a module namespace (`runbox:tools`).
    EsModule,
}

/// Whether `specifier` names a file rather than a package.
fn is_path(specifier: &str) -> bool {
    specifier.starts_with("./") || specifier.starts_with("../") || specifier.starts_with('/')
}

/// The file `specifier` names from the directory `base`: as written when it exists, else
/// with the extensions TypeScript's resolution tries.
fn resolve(base: &Path, specifier: &str) -> PathBuf {
    let path = normalize(&base.join(specifier));
    if path.is_file() {
        return path;
    }
    let text = path.to_string_lossy();
    let stem = text.strip_suffix(".js").unwrap_or(&text);
    [".ts", ".js", ".mts", ".mjs"]
        .iter()
        .map(|ext| PathBuf::from(format!("{stem}{ext}")))
        .find(|candidate| candidate.is_file())
        .unwrap_or(path)
}

/// `path` without `.` and with each `..` applied, so one file has one name.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `require(specifier)` as a module: the value's own properties are its named exports.
fn required_module(
    specifier: &JsString,
    interop: Interop,
    context: &mut Context,
) -> JsResult<Module> {
    let require = context
        .global_object()
        .get(js_string!("require"), context)?;
    let require = require.as_callable().ok_or_else(|| {
        JsError::from(JsNativeError::typ().with_message("`require` is not a function"))
    })?;
    let value = require.call(&JsValue::undefined(), &[specifier.clone().into()], context)?;
    let mut names = vec![js_string!("default")];
    if let Some(object) = value.as_object() {
        for key in object.own_property_keys(context)? {
            if let PropertyKey::String(name) = key {
                if name != js_string!("default") {
                    names.push(name);
                }
            }
        }
    }
    let exports = names.clone();
    Ok(Module::synthetic(
        &names,
        SyntheticModuleInitializer::from_copy_closure_with_captures(
            |module, (value, names, es_module), context| {
                let default = match value.as_object() {
                    Some(object) if *es_module => object.get(js_string!("default"), context)?,
                    _ => value.clone(),
                };
                module.set_export(&js_string!("default"), default)?;
                if let Some(object) = value.as_object() {
                    for name in &names[1..] {
                        module.set_export(name, object.get(name.clone(), context)?)?;
                    }
                }
                Ok(())
            },
            (value, exports, interop == Interop::EsModule),
        ),
        None,
        None,
        context,
    ))
}
