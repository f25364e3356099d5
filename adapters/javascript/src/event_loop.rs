//! The host side of the interpreter: standard input, `exit()`, promise rejections, and the
//! event loop that runs a program's promise jobs and timers to the end ([`Host::drive`]).
//! Boa lets a context reach its job executor, which is how the natives find the [`Host`].

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Duration;

use crate::output::Output;
use boa_engine::builtins::promise::{OperationType, PromiseState};
use boa_engine::context::time::JsInstant;
use boa_engine::context::HostHooks;
use boa_engine::job::{
    GenericJob, IntervalJob, Job, JobExecutor, NativeAsyncJob, PromiseJob, TimeoutJob,
};
use boa_engine::object::builtins::JsPromise;
use boa_engine::object::JsObject;
use boa_engine::{Context, JsError, JsResult, JsValue};

/// Why a program stopped before its end.
pub(crate) enum Stop {
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

/// What the natives and the event loop share: the job executor and host hooks of the
/// context (Boa lets a context reach its executor, which is how natives find it).
pub(crate) struct Host {
    pub(crate) output: Box<dyn Output>,
    pub(crate) stdin: RefCell<Vec<u8>>,
    pub(crate) stdin_pos: Cell<usize>,
    /// Set by `exit()`: the program is over, with this code.
    pub(crate) exit: Cell<Option<i32>>,
    /// Promises rejected with no handler yet, oldest first.
    pub(crate) rejected: RefCell<Vec<JsObject>>,
    queue: RefCell<Queue>,
    pub(crate) started: std::time::Instant,
    /// Where `tools.json` and the device `call` are: `/tools`, another directory only in
    /// the tests.
    pub(crate) tools_dir: RefCell<PathBuf>,
    /// Where the network's device `fetch` is: `/net`, another directory only in the tests.
    pub(crate) net_dir: RefCell<PathBuf>,
}

impl Host {
    /// The host of a new interpreter writing to `output`.
    pub(crate) fn new(output: Box<dyn Output>) -> Host {
        Host {
            output,
            stdin: RefCell::new(Vec::new()),
            stdin_pos: Cell::new(0),
            exit: Cell::new(None),
            rejected: RefCell::new(Vec::new()),
            queue: RefCell::new(Queue::default()),
            started: std::time::Instant::now(),
            tools_dir: RefCell::new(PathBuf::from(runbox_adapter_support::tools::DIR)),
            net_dir: RefCell::new(PathBuf::from(crate::net::DIR)),
        }
    }
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
    pub(crate) fn begin(&self, stdin: &[u8]) {
        self.end();
        *self.stdin.borrow_mut() = stdin.to_vec();
        self.stdin_pos.set(0);
    }

    /// Forgets what is left of a program: its jobs, timers, rejections and exit.
    pub(crate) fn end(&self) {
        *self.queue.borrow_mut() = Queue::default();
        self.rejected.borrow_mut().clear();
        self.exit.set(None);
    }

    pub(crate) fn from_context(context: &Context) -> Rc<Host> {
        context
            .downcast_job_executor::<Host>()
            .expect("the context's job executor is the runbox host")
    }

    /// The rest of standard input.
    pub(crate) fn take_stdin(&self) -> Vec<u8> {
        let stdin = self.stdin.borrow();
        let rest = stdin[self.stdin_pos.get()..].to_vec();
        self.stdin_pos.set(stdin.len());
        rest
    }

    /// The next line of standard input, without its line break; `None` at its end.
    pub(crate) fn read_line(&self) -> Option<Vec<u8>> {
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
    pub(crate) fn drive(self: Rc<Self>, context: &mut Context) -> Result<(), Stop> {
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
