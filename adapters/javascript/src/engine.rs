//! The interpreter: one Boa [`Context`] with runbox's globals, running programs one after
//! the other in it.
//!
//! Everything here is plain Rust over `boa_engine`, without the WIT bindings, so the unit
//! tests run it natively; `guest.rs` hands it the request and the real standard streams.
//!
//! A program's globals come from `prelude.js` (console, process, require, …), built on the
//! primitives of `natives.rs`. After the program's script the event loop (`event_loop.rs`) runs
//! its promise jobs and timers to the end. `exit()` ends the program with an error that
//! JavaScript cannot catch; the context stays usable, so in a session the next program
//! sees everything the earlier ones left.

use std::path::Path;
use std::rc::Rc;

use crate::event_loop::{Host, Stop};
use crate::modules::Modules;
use crate::natives::{natives, PRELUDE};
pub use crate::output::{Output, Stream};
use crate::typescript::{self, Transpiled};
use boa_engine::builtins::promise::PromiseState;
use boa_engine::module::Module;
use boa_engine::object::builtins::{JsArray, JsFunction};
use boa_engine::script::Script;
use boa_engine::{Context, JsError, JsNativeError, JsResult, JsString, JsValue, Source};

/// The language a program is written in (the runtime's `source-language` setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Language {
    #[default]
    JavaScript,
    /// Transpiled to JavaScript first (see [`crate::typescript`]).
    TypeScript,
}

impl Language {
    /// The name programs run under, in stack traces (no file is written).
    fn program_path(self) -> &'static str {
        match self {
            Language::JavaScript => "main.js",
            Language::TypeScript => "main.ts",
        }
    }
}

/// How deep JavaScript calls may nest. Boa's default (512) stops ordinary recursive
/// programs; a call from JavaScript to JavaScript does not use the native stack, calls
/// through native code do (see the stack size in build.rs).
const RECURSION_LIMIT: usize = 10_000;
/// Boa's value stack, in values (its default is 10 240).
const STACK_SIZE_LIMIT: usize = 1 << 20;

/// One program to run.
#[derive(Debug, Default, Clone)]
pub struct Program<'a> {
    pub code: &'a str,
    pub args: &'a [String],
    pub stdin: Option<&'a [u8]>,
}

/// An interpreter that runs programs one after another in the same global scope.
pub struct Interpreter {
    context: Context,
    host: Rc<Host>,
    hooks: Hooks,
    language: Language,
    modules: Rc<Modules>,
    /// The running TypeScript program's way back to its own positions, for its errors.
    transpiled: Option<Transpiled>,
}

/// The functions of the prelude the engine calls.
struct Hooks {
    begin: JsFunction,
    exit_code: JsFunction,
    uncaught: JsFunction,
}

impl Interpreter {
    /// A new interpreter with runbox's globals, writing to `output`.
    pub fn new(output: Box<dyn Output>, language: Language) -> Result<Self, String> {
        let host = Rc::new(Host::new(output));
        let modules = Rc::new(Modules::default());
        let mut context = Context::builder()
            .job_executor(host.clone())
            .host_hooks(host.clone())
            .module_loader(modules.clone())
            .build()
            .map_err(|e| format!("cannot create the JavaScript context: {e}"))?;
        let limits = context.runtime_limits_mut();
        limits.set_recursion_limit(RECURSION_LIMIT);
        limits.set_stack_size_limit(STACK_SIZE_LIMIT);
        register_web_apis(&mut context)
            .map_err(|e| format!("cannot register the web APIs: {e}"))?;
        let hooks = install_prelude(&mut context)
            .map_err(|e| format!("cannot set up the JavaScript globals: {e}"))?;
        Ok(Interpreter {
            context,
            host,
            hooks,
            language,
            modules,
            transpiled: None,
        })
    }

    /// Runs `program` to its end (its script, then its promise jobs and timers) and
    /// returns its exit code: `exit(n)`'s, 1 after an uncaught exception, else
    /// `process.exitCode` or 0.
    pub fn run(&mut self, program: &Program<'_>) -> i32 {
        if self.language == Language::TypeScript {
            match typescript::transpile(program.code, self.language.program_path()) {
                Ok(transpiled) => self.transpiled = Some(transpiled),
                Err(e) => {
                    let text = format!("Uncaught {e}\n");
                    self.host.output.write(Stream::Stderr, text.as_bytes());
                    return 1;
                }
            }
        }
        self.modules.forget_files();
        self.host.begin(program.stdin.unwrap_or_default());
        let code = match self.execute(program) {
            Ok(()) => match self.host.exit.get() {
                Some(code) => code,
                None => self
                    .hooks
                    .exit_code
                    .call(&JsValue::undefined(), &[], &mut self.context)
                    .ok()
                    .and_then(|v| v.as_number())
                    .map_or(0, |n| n as i32),
            },
            Err(stop) => match self.host.exit.get() {
                Some(code) => code,
                None => {
                    self.report(stop);
                    1
                }
            },
        };
        self.host.end();
        self.context.clear_kept_objects();
        self.transpiled = None;
        code
    }

    fn execute(&mut self, program: &Program<'_>) -> Result<(), Stop> {
        let args = JsArray::from_iter(
            program
                .args
                .iter()
                .map(|a| JsValue::from(JsString::from(a.as_str()))),
            &mut self.context,
        );
        self.hooks
            .begin
            .call(&JsValue::undefined(), &[args.into()], &mut self.context)?;
        let path = Path::new(self.language.program_path());
        let code = match &self.transpiled {
            Some(transpiled) => transpiled.code.as_str(),
            None => program.code,
        };
        let source = Source::from_bytes(code).with_path(path);
        let script_error = match Script::parse(source, None, &mut self.context) {
            Ok(script) => {
                script.evaluate(&mut self.context)?;
                return self.host.clone().drive(&mut self.context);
            }
            Err(e) => e,
        };
        // Not a script, but maybe a module (`import`, `export`, top-level `await`): run it
        // as one, as Node.js does when it sees their syntax. Its declarations stay in the
        // module, not in the global scope.
        let source = Source::from_bytes(code).with_path(path);
        let Ok(module) = Module::parse(source, None, &mut self.context) else {
            return Err(script_error.into());
        };
        let promise = module.load_link_evaluate(&mut self.context);
        let result = self.host.clone().drive(&mut self.context);
        match promise.state() {
            // The module's own failure is an uncaught exception, not a rejection.
            PromiseState::Rejected(reason) => Err(Stop::Thrown(JsError::from_opaque(reason))),
            _ => result,
        }
    }

    /// Points the tools of code mode (`runbox:tools`) at `dir` instead of `/tools`.
    #[cfg(test)]
    pub fn set_tools_dir(&mut self, dir: &Path) {
        *self.host.tools_dir.borrow_mut() = dir.to_path_buf();
    }

    /// Points `fetch` at the device in `dir` instead of `/net`.
    #[cfg(test)]
    pub fn set_net_dir(&mut self, dir: &Path) {
        *self.host.net_dir.borrow_mut() = dir.to_path_buf();
    }

    /// Writes what an uncaught exception or an unhandled rejection says to stderr.
    fn report(&mut self, stop: Stop) {
        let text = self.describe(stop);
        // A TypeScript program's positions, not those of the JavaScript it became.
        let text = match &self.transpiled {
            Some(transpiled) => transpiled.restore_positions(&text, self.language.program_path()),
            None => text,
        };
        self.host.output.write(Stream::Stderr, text.as_bytes());
    }

    /// What an uncaught exception or an unhandled rejection says, ending in a newline.
    fn describe(&mut self, stop: Stop) -> String {
        let (value, in_promise) = match stop {
            Stop::Thrown(e) => match e.as_engine() {
                // An uncatchable engine error (a runtime limit): Boa's own words, without
                // its backtrace of identical frames.
                Some(engine) => return format!("Uncaught {engine}\n"),
                None => match e.clone().into_opaque(&mut self.context) {
                    Ok(value) => (value, false),
                    Err(_) => return format!("Uncaught {e}\n"),
                },
            },
            Stop::Unhandled(reason) => (reason, true),
        };
        self.hooks
            .uncaught
            .call(
                &JsValue::undefined(),
                &[value.clone(), JsValue::from(in_promise)],
                &mut self.context,
            )
            .ok()
            .and_then(|v| v.as_string().map(|s| s.to_std_string_lossy()))
            .unwrap_or_else(|| format!("Uncaught {}\n", value.display()))
    }
}

/// The web APIs of `boa_wintertc` programs use (its console is replaced by the prelude's).
fn register_web_apis(context: &mut Context) -> JsResult<()> {
    boa_wintertc::timers::register(context)?;
    boa_wintertc::microtask::register(None, context)?;
    boa_wintertc::clone::register(None, context)?;
    boa_wintertc::base64::register(None, context)
}

/// Evaluates the prelude and gives it the natives; returns its hooks.
fn install_prelude(context: &mut Context) -> JsResult<Hooks> {
    let (path, code) = PRELUDE;
    let setup = context.eval(Source::from_bytes(code).with_path(Path::new(path)))?;
    let setup = setup
        .as_function()
        .ok_or_else(|| JsNativeError::typ().with_message("the prelude is not a function"))?;
    let natives = natives(context);
    let hooks = setup.call(&JsValue::undefined(), &[natives.into()], context)?;
    let hooks = hooks
        .as_object()
        .ok_or_else(|| JsNativeError::typ().with_message("the prelude returned no hooks"))?;
    let hook = |name: &str, context: &mut Context| -> JsResult<JsFunction> {
        hooks
            .get(JsString::from(name), context)?
            .as_function()
            .ok_or_else(|| {
                JsNativeError::typ()
                    .with_message(format!("no hook `{name}`"))
                    .into()
            })
    };
    Ok(Hooks {
        begin: hook("begin", context)?,
        exit_code: hook("exitCode", context)?,
        uncaught: hook("uncaught", context)?,
    })
}
