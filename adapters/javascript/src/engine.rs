//! The interpreter: one Boa [`Context`] with runbox's globals, running programs one after
//! the other in it.
//!
//! Everything here is plain Rust over `boa_engine`, without the WIT bindings, so the unit
//! tests run it natively; `guest.rs` hands it the request and the real standard streams.
//!
//! A program's globals come from `prelude.js` (console, process, require, …), built on the
//! primitives of [`natives`]. After the program's script the event loop of [`Loop`] runs
//! its promise jobs and timers to the end. `exit()` ends the program with an error that
//! JavaScript cannot catch; the context stays usable, so in a session the next program
//! sees everything the earlier ones left.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Duration;

use crate::modules::Modules;
use crate::typescript::{self, Transpiled};
use boa_engine::builtins::promise::{OperationType, PromiseState};
use boa_engine::context::time::JsInstant;
use boa_engine::context::HostHooks;
use boa_engine::error::PanicError;
use boa_engine::job::{
    GenericJob, IntervalJob, Job, JobExecutor, NativeAsyncJob, PromiseJob, TimeoutJob,
};
use boa_engine::module::Module;
use boa_engine::object::builtins::{
    JsArray, JsArrayBuffer, JsFunction, JsPromise, JsTypedArray, JsUint8Array,
};
use boa_engine::object::{JsObject, ObjectInitializer};
use boa_engine::property::Attribute;
use boa_engine::script::Script;
use boa_engine::{
    js_string, Context, JsError, JsNativeError, JsResult, JsString, JsValue, NativeFunction, Source,
};

/// The Boa version, as the runtime reports it (keep in step with Cargo.toml).
pub const BOA_VERSION: &str = "0.22.0";

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
/// The globals' sources, by the names their stack frames show (`runbox:…`, which
/// `prelude.js` leaves out of errors' stacks). The prelude runs in every interpreter; it
/// loads the others (see [`native_load`]) when a program first needs them.
const PRELUDE: (&str, &str) = ("runbox:prelude.js", include_str!("prelude.js"));
const PARTS: &[(&str, &str, &str)] = &[
    ("inspect", "runbox:inspect.js", include_str!("inspect.js")),
    ("node", "runbox:node.js", include_str!("node.js")),
    ("tools", "runbox:tools.js", include_str!("tools.js")),
];

/// How deep JavaScript calls may nest. Boa's default (512) stops ordinary recursive
/// programs; a call from JavaScript to JavaScript does not use the native stack, calls
/// through native code do (see the stack size in build.rs).
const RECURSION_LIMIT: usize = 10_000;
/// Boa's value stack, in values (its default is 10 240).
const STACK_SIZE_LIMIT: usize = 1 << 20;

/// Where a program's output goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// The program's standard output and error. Each call is one `console.log` line or one
/// `process.stdout.write`, to be written (and flushed) at once.
pub trait Output {
    fn write(&self, stream: Stream, bytes: &[u8]);
}

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

/// Why a program stopped before its end.
enum Stop {
    /// An exception nobody caught (or a runtime limit broken).
    Thrown(JsError),
    /// A promise rejected with no handler by the end of a turn of the event loop.
    Unhandled(JsValue),
}

impl From<JsError> for Stop {
    fn from(e: JsError) -> Self {
        Stop::Thrown(e)
    }
}

impl Interpreter {
    /// A new interpreter with runbox's globals, writing to `output`.
    pub fn new(output: Box<dyn Output>, language: Language) -> Result<Self, String> {
        let host = Rc::new(Host {
            output,
            stdin: RefCell::new(Vec::new()),
            stdin_pos: Cell::new(0),
            exit: Cell::new(None),
            rejected: RefCell::new(Vec::new()),
            queue: RefCell::new(Queue::default()),
            started: std::time::Instant::now(),
            tools_dir: RefCell::new(PathBuf::from(runbox_adapter_support::tools::DIR)),
        });
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

// -------------------------------------------------------------------------------------
// The host side: standard streams, exit, promise rejections and the event loop.

/// What the natives and the event loop share: the job executor and host hooks of the
/// context (Boa lets a context reach its executor, which is how natives find it).
struct Host {
    output: Box<dyn Output>,
    stdin: RefCell<Vec<u8>>,
    stdin_pos: Cell<usize>,
    /// Set by `exit()`: the program is over, with this code.
    exit: Cell<Option<i32>>,
    /// Promises rejected with no handler yet, oldest first.
    rejected: RefCell<Vec<JsObject>>,
    queue: RefCell<Queue>,
    started: std::time::Instant,
    /// Where `tools.json` and the device `call` are: `/tools`, another directory only in
    /// the tests.
    tools_dir: RefCell<PathBuf>,
}

#[derive(Default)]
struct Queue {
    promise: VecDeque<PromiseJob>,
    generic: VecDeque<GenericJob>,
    futures: VecDeque<NativeAsyncJob>,
    /// Timers by due time, then by the order they were set.
    timers: BTreeMap<(JsInstant, u64), Timer>,
    sequence: u64,
}

enum Timer {
    Timeout(TimeoutJob),
    Interval(IntervalJob),
}

impl Timer {
    fn cancelled(&self) -> bool {
        match self {
            Timer::Timeout(t) => t.cancelled(),
            Timer::Interval(i) => i.cancelled(),
        }
    }
}

impl Queue {
    fn add_timer(&mut self, at: JsInstant, timer: Timer) {
        self.sequence += 1;
        self.timers.insert((at, self.sequence), timer);
    }

    fn has_tasks(&self) -> bool {
        !self.promise.is_empty() || !self.generic.is_empty() || !self.futures.is_empty()
    }
}

impl Host {
    fn begin(&self, stdin: &[u8]) {
        self.end();
        *self.stdin.borrow_mut() = stdin.to_vec();
        self.stdin_pos.set(0);
    }

    /// Forgets what is left of a program: its jobs, timers, rejections and exit.
    fn end(&self) {
        *self.queue.borrow_mut() = Queue::default();
        self.rejected.borrow_mut().clear();
        self.exit.set(None);
    }

    fn from_context(context: &Context) -> Rc<Host> {
        context
            .downcast_job_executor::<Host>()
            .expect("the context's job executor is the runbox host")
    }

    /// The rest of standard input.
    fn take_stdin(&self) -> Vec<u8> {
        let stdin = self.stdin.borrow();
        let rest = stdin[self.stdin_pos.get()..].to_vec();
        self.stdin_pos.set(stdin.len());
        rest
    }

    /// The next line of standard input, without its line break; `None` at its end.
    fn read_line(&self) -> Option<Vec<u8>> {
        let stdin = self.stdin.borrow();
        let start = self.stdin_pos.get();
        if start >= stdin.len() {
            return None;
        }
        let (line, next) = match stdin[start..].iter().position(|&b| b == b'\n') {
            Some(i) => (&stdin[start..start + i], start + i + 1),
            None => (&stdin[start..], stdin.len()),
        };
        self.stdin_pos.set(next);
        Some(line.strip_suffix(b"\r").unwrap_or(line).to_vec())
    }

    /// Runs the event loop until nothing is left to do: all promise jobs (microtasks),
    /// then each due timer followed by the microtasks it caused, sleeping until the next
    /// timer is due. Stops at the first uncaught error, and at a rejected promise that
    /// still has no handler once the microtasks have run (as Node.js does).
    fn drive(self: Rc<Self>, context: &mut Context) -> Result<(), Stop> {
        let cell = RefCell::new(context);
        let context = &cell;
        let mut running: Vec<Pin<Box<dyn Future<Output = JsResult<JsValue>> + '_>>> = Vec::new();
        let mut poll_context = std::task::Context::from_waker(Waker::noop());
        loop {
            // Microtasks, until none are left.
            loop {
                let job = self.queue.borrow_mut().promise.pop_front();
                match job {
                    Some(job) => {
                        job.call(&mut context.borrow_mut())?;
                    }
                    None => {
                        let job = self.queue.borrow_mut().generic.pop_front();
                        match job {
                            Some(job) => {
                                job.call(&mut context.borrow_mut())?;
                            }
                            None => break,
                        }
                    }
                }
            }
            let first_rejected = self.rejected.borrow().first().cloned();
            if let Some(promise) = first_rejected {
                let reason = JsPromise::from_object(promise)
                    .ok()
                    .and_then(|p| match p.state() {
                        PromiseState::Rejected(reason) => Some(reason),
                        _ => None,
                    })
                    .unwrap_or_default();
                return Err(Stop::Unhandled(reason));
            }
            context.borrow_mut().clear_kept_objects();

            // Native async jobs (module loading, `import()`): they make progress only
            // when polled, and finish without waiting for anything outside.
            let futures: Vec<NativeAsyncJob> = self.queue.borrow_mut().futures.drain(..).collect();
            for job in futures {
                running.push(Box::pin(job.call(context)));
            }
            let mut finished = Vec::new();
            running.retain_mut(|future| match future.as_mut().poll(&mut poll_context) {
                Poll::Ready(result) => {
                    finished.push(result);
                    false
                }
                Poll::Pending => true,
            });
            let progressed = !finished.is_empty();
            for result in finished {
                result?;
            }
            if self.queue.borrow().has_tasks() {
                continue;
            }

            // The next timer.
            let next = self
                .queue
                .borrow()
                .timers
                .first_key_value()
                .map(|(k, _)| *k);
            let Some(key) = next else {
                if running.is_empty() || !progressed {
                    return Ok(());
                }
                continue;
            };
            let now = context.borrow().clock().now();
            if key.0 > now {
                let wait: Duration = (key.0 - now).into();
                let wait = if running.is_empty() {
                    wait
                } else {
                    wait.min(Duration::from_millis(1))
                };
                std::thread::sleep(wait);
                continue;
            }
            let timer = self.queue.borrow_mut().timers.remove(&key);
            match timer {
                Some(timer) if timer.cancelled() => {}
                Some(Timer::Timeout(job)) => {
                    job.call(&mut context.borrow_mut())?;
                }
                Some(Timer::Interval(job)) => {
                    job.call(&mut context.borrow_mut())?;
                    if !job.cancelled() {
                        let at = context.borrow().clock().now() + job.interval();
                        self.queue.borrow_mut().add_timer(at, Timer::Interval(job));
                    }
                }
                None => {}
            }
        }
    }
}

impl JobExecutor for Host {
    fn enqueue_job(self: Rc<Self>, job: Job, context: &mut Context) {
        let mut queue = self.queue.borrow_mut();
        match job {
            Job::PromiseJob(job) => queue.promise.push_back(job),
            Job::GenericJob(job) => queue.generic.push_back(job),
            Job::AsyncJob(job) => queue.futures.push_back(job),
            Job::TimeoutJob(job) => {
                let at = context.clock().now() + job.timeout();
                queue.add_timer(at, Timer::Timeout(job));
            }
            Job::IntervalJob(job) => {
                let at = context.clock().now() + job.interval();
                queue.add_timer(at, Timer::Interval(job));
            }
            // Cleaning up a FinalizationRegistry is optional (the spec lets hosts skip it).
            Job::FinalizationRegistryCleanupJob(_) => {}
            _ => {}
        }
    }

    fn run_jobs(self: Rc<Self>, context: &mut Context) -> JsResult<()> {
        match self.drive(context) {
            Ok(()) => Ok(()),
            Err(Stop::Thrown(e)) => Err(e),
            Err(Stop::Unhandled(reason)) => Err(JsError::from_opaque(reason)),
        }
    }
}

impl HostHooks for Host {
    fn promise_rejection_tracker(
        &self,
        promise: &JsObject<boa_engine::builtins::promise::Promise>,
        operation: OperationType,
        _context: &mut Context,
    ) {
        let promise = promise.clone().upcast();
        let mut rejected = self.rejected.borrow_mut();
        match operation {
            OperationType::Reject => rejected.push(promise),
            OperationType::Handle => rejected.retain(|p| !JsObject::equals(p, &promise)),
        }
    }
}

// -------------------------------------------------------------------------------------
// The natives: what the prelude builds the globals from.

/// The object of native functions handed to the prelude.
fn natives(context: &mut Context) -> JsObject {
    let mut natives = ObjectInitializer::new(context);
    for (name, length, function) in [
        ("load", 1, native_load as NativeFn),
        ("write", 2, native_write),
        ("readStdin", 0, native_read_stdin),
        ("readStdinBytes", 0, native_read_stdin_bytes),
        ("readLine", 0, native_read_line),
        ("exit", 1, native_exit),
        ("now", 0, native_now),
        ("promiseState", 1, native_promise_state),
        ("readFile", 1, native_read_file),
        ("writeFile", 3, native_write_file),
        ("exists", 1, native_exists),
        ("readdir", 1, native_readdir),
        ("mkdir", 2, native_mkdir),
        ("remove", 3, native_remove),
        ("rename", 2, native_rename),
        ("stat", 1, native_stat),
        ("encodeUtf8", 1, native_encode_utf8),
        ("decodeUtf8", 3, native_decode_utf8),
        ("toolCall", 1, native_tool_call),
        ("toolsManifest", 0, native_tools_manifest),
    ] {
        natives.function(
            NativeFunction::from_fn_ptr(function),
            js_string!(name),
            length,
        );
    }
    natives.property(
        js_string!("version"),
        JsString::from(BOA_VERSION),
        Attribute::READONLY,
    );
    natives.build()
}

type NativeFn = fn(&JsValue, &[JsValue], &mut Context) -> JsResult<JsValue>;

fn arg(args: &[JsValue], i: usize) -> JsValue {
    args.get(i).cloned().unwrap_or_default()
}

fn string_arg(args: &[JsValue], i: usize, context: &mut Context) -> JsResult<String> {
    Ok(arg(args, i).to_string(context)?.to_std_string_lossy())
}

/// The bytes of a string (as UTF-8) or of a typed array.
fn bytes_arg(value: &JsValue, context: &mut Context) -> JsResult<Vec<u8>> {
    if let Some(object) = value.as_object() {
        if let Ok(array) = JsTypedArray::from_object(object.clone()) {
            let offset = array.byte_offset(context)?;
            let length = array.byte_length(context)?;
            let buffer = array.buffer(context)?;
            let buffer = buffer
                .as_object()
                .and_then(|b| JsArrayBuffer::from_object(b.clone()).ok())
                .ok_or_else(|| JsNativeError::typ().with_message("not an ArrayBuffer"))?;
            let data = buffer
                .data()
                .ok_or_else(|| JsNativeError::typ().with_message("detached ArrayBuffer"))?;
            return Ok(data
                .get(offset..offset + length)
                .unwrap_or_default()
                .to_vec());
        }
    }
    Ok(value.to_string(context)?.to_std_string_lossy().into_bytes())
}

/// `load(name)`: evaluates a part of the globals (`inspect`, `node`); its value is the
/// function that sets it up.
fn native_load(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let name = string_arg(args, 0, context)?;
    let (_, path, code) = PARTS
        .iter()
        .find(|(part, _, _)| *part == name)
        .ok_or_else(|| JsNativeError::typ().with_message(format!("no part `{name}`")))?;
    context.eval(Source::from_bytes(code).with_path(Path::new(path)))
}

/// `write(fd, data)`: data to standard output (1) or error (2).
fn native_write(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let stream = match arg(args, 0).to_i32(context)? {
        2 => Stream::Stderr,
        _ => Stream::Stdout,
    };
    let bytes = bytes_arg(&arg(args, 1), context)?;
    Host::from_context(context).output.write(stream, &bytes);
    Ok(JsValue::undefined())
}

fn native_read_stdin(_: &JsValue, _: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let bytes = Host::from_context(context).take_stdin();
    Ok(JsString::from(String::from_utf8_lossy(&bytes).as_ref()).into())
}

fn native_read_stdin_bytes(_: &JsValue, _: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let bytes = Host::from_context(context).take_stdin();
    Ok(JsUint8Array::from_iter(bytes, context)?.into())
}

fn native_read_line(_: &JsValue, _: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    Ok(match Host::from_context(context).read_line() {
        Some(line) => JsString::from(String::from_utf8_lossy(&line).as_ref()).into(),
        None => JsValue::null(),
    })
}

/// `encodeUtf8(string)`: its UTF-8 bytes (a lone surrogate becomes U+FFFD).
fn native_encode_utf8(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let text = string_arg(args, 0, context)?;
    Ok(JsUint8Array::from_iter(text.into_bytes(), context)?.into())
}

/// `decodeUtf8(bytes, fatal, ignoreBOM)`: the text of UTF-8 bytes; invalid sequences
/// become U+FFFD, or with `fatal` a TypeError.
fn native_decode_utf8(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let bytes = bytes_arg(&arg(args, 0), context)?;
    let text = decode_utf8(&bytes, arg(args, 1).to_boolean(), arg(args, 2).to_boolean())
        .ok_or_else(|| {
            JsNativeError::typ().with_message("The encoded data was not valid for encoding utf-8")
        })?;
    Ok(JsString::from(text.as_str()).into())
}

/// UTF-8 as `TextDecoder` decodes it: `None` for invalid bytes when `fatal`.
pub(crate) fn decode_utf8(bytes: &[u8], fatal: bool, ignore_bom: bool) -> Option<String> {
    let bytes = match bytes.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) if !ignore_bom => rest,
        _ => bytes,
    };
    if fatal {
        std::str::from_utf8(bytes).ok().map(str::to_owned)
    } else {
        Some(String::from_utf8_lossy(bytes).into_owned())
    }
}

/// `toolCall(request)`: one call through the device of code mode's tools (`/tools/call`):
/// the request's JSON text in, the answer's out (an `unavailable` answer without a device).
fn native_tool_call(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let request = string_arg(args, 0, context)?;
    let dir = Host::from_context(context).tools_dir.borrow().clone();
    let answer = runbox_adapter_support::tools::call(&dir, request.as_bytes());
    Ok(JsString::from(answer.as_str()).into())
}

/// `toolsManifest()`: the text of `/tools/tools.json`, or `null` when there is none.
fn native_tools_manifest(_: &JsValue, _: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let dir = Host::from_context(context).tools_dir.borrow().clone();
    Ok(match runbox_adapter_support::tools::manifest(&dir) {
        Some(text) => JsString::from(text.as_str()).into(),
        None => JsValue::null(),
    })
}

/// `exit(code)`: records the code and unwinds with an error no `catch` can stop.
fn native_exit(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let code = arg(args, 0).to_i32(context)?;
    Host::from_context(context).exit.set(Some(code));
    Err(PanicError::new("exit").into())
}

/// Milliseconds since the interpreter started (monotonic, fractional).
fn native_now(_: &JsValue, _: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let host = Host::from_context(context);
    Ok(JsValue::from(host.started.elapsed().as_secs_f64() * 1000.0))
}

/// `promiseState(p)`: `[0]` pending, `[1, value]` fulfilled, `[2, reason]` rejected, or
/// `undefined` for a value that is not a promise.
fn native_promise_state(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let Some(promise) = arg(args, 0)
        .as_object()
        .and_then(|o| JsPromise::from_object(o.clone()).ok())
    else {
        return Ok(JsValue::undefined());
    };
    let items = match promise.state() {
        PromiseState::Pending => vec![JsValue::from(0)],
        PromiseState::Fulfilled(v) => vec![JsValue::from(1), v],
        PromiseState::Rejected(v) => vec![JsValue::from(2), v],
    };
    Ok(JsArray::from_iter(items, context).into())
}

/// An `Error` worded like Node.js's, e.g. `ENOENT: no such file or directory, open 'x'`
/// (`prelude.js` turns the prefix into `err.code`).
fn fs_error(e: &std::io::Error, syscall: &str, path: &str) -> JsError {
    JsNativeError::error()
        .with_message(fs_error_message(e, syscall, path))
        .into()
}

pub(crate) fn fs_error_message(e: &std::io::Error, syscall: &str, path: &str) -> String {
    use std::io::ErrorKind::*;
    let (code, text) = match e.kind() {
        NotFound => ("ENOENT", "no such file or directory"),
        PermissionDenied | ReadOnlyFilesystem => ("EACCES", "permission denied"),
        AlreadyExists => ("EEXIST", "file already exists"),
        IsADirectory => ("EISDIR", "illegal operation on a directory"),
        NotADirectory => ("ENOTDIR", "not a directory"),
        DirectoryNotEmpty => ("ENOTEMPTY", "directory not empty"),
        InvalidInput | InvalidFilename => ("EINVAL", "invalid argument"),
        // The scratch directory's caps (bytes, files) refuse with ENOSPC.
        StorageFull => ("ENOSPC", "no space left on device"),
        QuotaExceeded => ("EDQUOT", "disk quota exceeded"),
        FileTooLarge => ("EFBIG", "file too large"),
        _ => ("EIO", "i/o error"),
    };
    format!("{code}: {text}, {syscall} '{path}'")
}

fn native_read_file(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let path = string_arg(args, 0, context)?;
    let bytes = std::fs::read(&path).map_err(|e| fs_error(&e, "open", &path))?;
    Ok(JsUint8Array::from_iter(bytes, context)?.into())
}

/// `writeFile(path, data, append)`.
fn native_write_file(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let path = string_arg(args, 0, context)?;
    let bytes = bytes_arg(&arg(args, 1), context)?;
    let append = arg(args, 2).to_boolean();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(!append)
        .open(&path)
        .map_err(|e| fs_error(&e, "open", &path))?;
    let end = if append {
        file.metadata()
            .map_err(|e| fs_error(&e, "open", &path))?
            .len()
    } else {
        0
    };
    runbox_adapter_support::write_all_at(&file, &bytes, end)
        .map_err(|e| fs_error(&e, "write", &path))?;
    Ok(JsValue::undefined())
}

fn native_exists(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let path = string_arg(args, 0, context)?;
    Ok(Path::new(&path).exists().into())
}

fn native_readdir(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let path = string_arg(args, 0, context)?;
    let entries = std::fs::read_dir(&path).map_err(|e| fs_error(&e, "scandir", &path))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| fs_error(&e, "scandir", &path))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        names.push(JsValue::from(JsString::from(name.as_str())));
    }
    Ok(JsArray::from_iter(names, context).into())
}

/// `mkdir(path, recursive)`.
fn native_mkdir(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let path = string_arg(args, 0, context)?;
    let result = if arg(args, 1).to_boolean() {
        std::fs::create_dir_all(&path)
    } else {
        std::fs::create_dir(&path)
    };
    result.map_err(|e| fs_error(&e, "mkdir", &path))?;
    Ok(JsValue::undefined())
}

/// `remove(path, recursive, force)`: a file, or a directory (empty unless `recursive`);
/// with `force` a missing path is no error.
fn native_remove(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let path = string_arg(args, 0, context)?;
    let recursive = arg(args, 1).to_boolean();
    let force = arg(args, 2).to_boolean();
    let result = match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_dir() && recursive => std::fs::remove_dir_all(&path),
        Ok(meta) if meta.is_dir() => std::fs::remove_dir(&path),
        Ok(_) => std::fs::remove_file(&path),
        Err(e) => Err(e),
    };
    match result {
        Err(e) if !(force && e.kind() == std::io::ErrorKind::NotFound) => {
            Err(fs_error(&e, "rm", &path))
        }
        _ => Ok(JsValue::undefined()),
    }
}

fn native_rename(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let from = string_arg(args, 0, context)?;
    let to = string_arg(args, 1, context)?;
    std::fs::rename(&from, &to).map_err(|e| fs_error(&e, "rename", &from))?;
    Ok(JsValue::undefined())
}

/// `stat(path)`: `{ size, isFile, isDirectory, mtimeMs }`.
fn native_stat(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let path = string_arg(args, 0, context)?;
    let meta = std::fs::metadata(&path).map_err(|e| fs_error(&e, "stat", &path))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
    let mut stat = ObjectInitializer::new(context);
    stat.property(js_string!("size"), meta.len() as f64, Attribute::all())
        .property(js_string!("isFile"), meta.is_file(), Attribute::all())
        .property(js_string!("isDirectory"), meta.is_dir(), Attribute::all())
        .property(js_string!("mtimeMs"), mtime, Attribute::all());
    Ok(stat.build().into())
}
