//! Long runs as MCP tasks (the `io.modelcontextprotocol/tasks` extension; docs/mcp.md,
//! "Long runs: MCP tasks").
//!
//! For a client that declares the extension, a `run_code` call may ask for up to
//! `--max-task-timeout`; one still running after `--task-after` is answered with a task
//! (`resultType: "task"`), and its run goes on. `tasks/get` reports it `working` (with
//! the time elapsed and the output so far), then `completed` with exactly the result the
//! call would have returned; `tasks/cancel` stops the run (`cancelled`). A finished task
//! is kept `ttlMs` (`--resource-ttl`) after it finished, at most `--max-tasks` at once.
//!
//! The store is runbox's own rather than rmcp's `TaskManager`: rmcp counts a task's TTL
//! from its creation and aborts a task still running at it, while a run's deadline (up
//! to an hour) is what must end it here, and the results must stay after it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolResult, DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus,
};
use rmcp::ErrorData;
use tokio_util::sync::CancellationToken;

use crate::service::Replica;
use crate::service::RunWatch;
use crate::sweeper;

/// The most `timeout_seconds` a task may ask for, by default.
pub const DEFAULT_MAX_TASK_TIMEOUT: Duration = Duration::from_secs(3600);
/// How long a call runs before it is answered with a task, by default.
pub const DEFAULT_TASK_AFTER: Duration = Duration::from_secs(5);
/// Tasks kept at once, by default.
pub const DEFAULT_MAX_TASKS: usize = 64;
/// How often a client is asked to poll.
pub const POLL_INTERVAL_MS: u64 = 1000;

/// How calls become tasks.
#[derive(Debug, Clone)]
pub struct TaskSettings {
    /// The most `timeout_seconds` a call from a client with tasks may ask for.
    pub max_timeout: Duration,
    /// A call still running after this becomes a task.
    pub after: Duration,
    /// Tasks kept at once.
    pub max_tasks: usize,
    /// How long a finished task is kept.
    pub ttl: Duration,
}

impl Default for TaskSettings {
    fn default() -> Self {
        TaskSettings {
            max_timeout: DEFAULT_MAX_TASK_TIMEOUT,
            after: DEFAULT_TASK_AFTER,
            max_tasks: DEFAULT_MAX_TASKS,
            ttl: crate::mcp::handler::retained::DEFAULT_RESOURCE_TTL,
        }
    }
}

enum State {
    Working,
    Completed(JsonObject),
    Failed(JsonObject),
    Cancelled,
}

struct Entry {
    task: Task,
    state: State,
    started: Instant,
    finished: Option<Instant>,
    cancel: CancellationToken,
    watch: Arc<RunWatch>,
    /// What runs, for the status message ("python", "in session 9f2c…").
    what: String,
}

/// The tasks of one server.
pub struct Tasks {
    settings: TaskSettings,
    entries: Arc<Mutex<HashMap<String, Entry>>>,
    /// Mints the task ids, and tells another replica's ids apart.
    replica: Replica,
}

impl Tasks {
    pub fn new(settings: TaskSettings, replica: Replica) -> Tasks {
        let entries: Arc<Mutex<HashMap<String, Entry>>> = Arc::default();
        start_sweeper(Arc::downgrade(&entries), settings.ttl);
        Tasks {
            settings,
            entries,
            replica,
        }
    }

    pub fn settings(&self) -> &TaskSettings {
        &self.settings
    }

    /// Makes a task of a run under way (`cancel` stops it, `watch` shows its output), or
    /// `None` when `--max-tasks` are kept and none of them has finished (the call is then
    /// answered when it ends, as for a client without tasks).
    pub fn start(
        &self,
        what: String,
        cancel: CancellationToken,
        watch: Arc<RunWatch>,
        started: Instant,
    ) -> Option<Task> {
        let mut entries = lock(&self.entries);
        sweep(&mut entries, self.settings.ttl);
        while entries.len() >= self.settings.max_tasks {
            // Make room by the task that finished first; working ones are never dropped.
            let oldest = entries
                .iter()
                .filter_map(|(id, e)| e.finished.map(|at| (at, id.clone())))
                .min()?;
            entries.remove(&oldest.1);
        }
        let now = timestamp();
        let id = self.replica.mint();
        let mut task = Task::new(id.clone(), TaskStatus::Working, now.clone(), now);
        task.ttl_ms = Some(self.settings.ttl.as_millis() as u64);
        task.poll_interval_ms = Some(POLL_INTERVAL_MS);
        task.status_message = Some(format!("running {what}"));
        entries.insert(
            id,
            Entry {
                task: task.clone(),
                state: State::Working,
                started,
                finished: None,
                cancel,
                watch,
                what,
            },
        );
        Some(task)
    }

    /// Records how task `id` ended: `result` is the call's result; a run stopped by
    /// `tasks/cancel` is `cancelled` whatever it returned.
    pub fn finish(&self, id: &str, result: Result<CallToolResult, ErrorData>) {
        let mut entries = lock(&self.entries);
        let Some(entry) = entries.get_mut(id) else {
            return;
        };
        entry.state = match result {
            _ if entry.cancel.is_cancelled() => State::Cancelled,
            Ok(result) => State::Completed(to_object(&result)),
            Err(error) => State::Failed(to_object(&error)),
        };
        entry.finished = Some(Instant::now());
        entry.task.status = status(&entry.state);
        entry.task.status_message = Some(match &entry.state {
            State::Cancelled => "cancelled by tasks/cancel".to_string(),
            State::Failed(_) => "failed".to_string(),
            _ => format!(
                "finished after {:.1} s",
                entry.started.elapsed().as_secs_f64()
            ),
        });
        entry.task.last_updated_at = timestamp();
    }

    /// `tasks/get`: the task's state; when it has finished, its result or error.
    pub fn get(&self, id: &str) -> Result<GetTaskResult, ErrorData> {
        let mut entries = lock(&self.entries);
        sweep(&mut entries, self.settings.ttl);
        let entry = entries.get_mut(id).ok_or_else(|| self.unknown(id))?;
        let payload = match &entry.state {
            State::Working => {
                entry.task.status_message = Some(working_message(entry));
                TaskPayload::Working
            }
            State::Completed(result) => TaskPayload::Completed {
                result: result.clone(),
            },
            State::Failed(error) => TaskPayload::Failed {
                error: error.clone(),
            },
            State::Cancelled => TaskPayload::Cancelled,
        };
        Ok(GetTaskResult::new(DetailedTask::new(
            entry.task.clone(),
            payload,
        )))
    }

    /// `tasks/cancel`: stops the task's run (it settles as `cancelled` within moments).
    /// Cancelling a finished task changes nothing.
    pub fn cancel(&self, id: &str) -> Result<(), ErrorData> {
        let mut entries = lock(&self.entries);
        sweep(&mut entries, self.settings.ttl);
        let entry = entries.get_mut(id).ok_or_else(|| self.unknown(id))?;
        if entry.finished.is_none() {
            entry.cancel.cancel();
            entry.task.status_message = Some("cancelling".into());
            entry.task.last_updated_at = timestamp();
        }
        Ok(())
    }

    /// `tasks/update`: runbox never asks for input, so there is nothing to update; the
    /// task must exist.
    pub fn update(&self, id: &str) -> Result<(), ErrorData> {
        let entries = lock(&self.entries);
        entries.get(id).map(|_| ()).ok_or_else(|| self.unknown(id))
    }

    /// Stops every task's run (the server is stopping).
    pub fn cancel_all(&self) {
        for entry in lock(&self.entries).values() {
            entry.cancel.cancel();
        }
    }

    /// Tasks working now.
    pub fn working(&self) -> usize {
        lock(&self.entries)
            .values()
            .filter(|e| e.finished.is_none())
            .count()
    }

    /// Tasks kept now (working, or finished and not expired).
    pub fn kept(&self) -> usize {
        lock(&self.entries).len()
    }

    /// The error for a task id this server does not have.
    fn unknown(&self, id: &str) -> ErrorData {
        let message = match self.replica.elsewhere("task", id) {
            Some(elsewhere) => elsewhere.to_string(),
            None => format!(
                "unknown task `{}`: no such task, or it finished longer ago than its ttlMs",
                id.escape_debug()
            ),
        };
        ErrorData::invalid_params(message, None)
    }
}

/// "running python for 12 s; 3456 bytes of output so far, the last line: …"
fn working_message(entry: &Entry) -> String {
    let elapsed = entry.started.elapsed().as_secs_f64();
    let mut message = format!("running {} for {elapsed:.0} s", entry.what);
    if let Some((bytes, last_line)) = entry.watch.output_so_far() {
        message.push_str(&format!("; {bytes} bytes of output so far"));
        if !last_line.is_empty() {
            message.push_str(&format!(", the last line: {last_line}"));
        }
    }
    message
}

fn status(state: &State) -> TaskStatus {
    match state {
        State::Working => TaskStatus::Working,
        State::Completed(_) => TaskStatus::Completed,
        State::Failed(_) => TaskStatus::Failed,
        State::Cancelled => TaskStatus::Cancelled,
    }
}

fn to_object(value: &impl serde::Serialize) -> JsonObject {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

/// Now, as ISO 8601 (what rmcp's own task manager writes).
fn timestamp() -> String {
    rmcp::task_manager::current_timestamp()
}

fn lock(
    entries: &Mutex<HashMap<String, Entry>>,
) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
    entries.lock().unwrap_or_else(|e| e.into_inner())
}

/// Drops finished tasks kept longer than `ttl`.
fn sweep(entries: &mut HashMap<String, Entry>, ttl: Duration) {
    entries.retain(|_, e| e.finished.is_none_or(|at| at.elapsed() < ttl));
}

/// Drops expired tasks every few seconds, so their results go at their TTL even when
/// nobody polls; ends with the store.
fn start_sweeper(entries: Weak<Mutex<HashMap<String, Entry>>>, ttl: Duration) {
    let every = sweeper::quarter_of(ttl, Duration::from_millis(100), Duration::from_secs(5));
    sweeper::start(
        "runbox-tasks",
        "finished tasks will stay until polled",
        every,
        entries,
        move |entries| sweep(&mut lock(entries), ttl),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(max_tasks: usize, ttl: Duration) -> TaskSettings {
        TaskSettings {
            max_tasks,
            ttl,
            ..TaskSettings::default()
        }
    }

    fn start(tasks: &Tasks) -> (String, CancellationToken) {
        let cancel = CancellationToken::new();
        let task = tasks
            .start(
                "python".into(),
                cancel.clone(),
                Arc::default(),
                Instant::now(),
            )
            .expect("room for a task");
        (task.task_id, cancel)
    }

    #[test]
    fn a_task_works_then_completes() {
        let tasks = Tasks::new(settings(4, Duration::from_secs(60)), Replica::default());
        let (id, _) = start(&tasks);
        assert_eq!(id.len(), 32);
        let got = tasks.get(&id).unwrap();
        assert_eq!(got.task.status(), TaskStatus::Working);
        assert!(got
            .task
            .task
            .status_message
            .as_deref()
            .unwrap()
            .starts_with("running python for"));
        assert_eq!(got.task.task.ttl_ms, Some(60_000));
        tasks.finish(&id, Ok(CallToolResult::success(vec![])));
        let got = tasks.get(&id).unwrap();
        assert!(matches!(got.task.payload, TaskPayload::Completed { .. }));
        assert!(tasks.get("nope").is_err());
    }

    #[test]
    fn cancelling_stops_the_run_and_settles_cancelled() {
        let tasks = Tasks::new(settings(4, Duration::from_secs(60)), Replica::default());
        let (id, cancel) = start(&tasks);
        tasks.cancel(&id).unwrap();
        assert!(cancel.is_cancelled());
        // The run ends with whatever result; the task is cancelled.
        tasks.finish(&id, Ok(CallToolResult::success(vec![])));
        assert_eq!(tasks.get(&id).unwrap().task.status(), TaskStatus::Cancelled);
    }

    #[test]
    fn finished_tasks_make_room_and_expire() {
        let tasks = Tasks::new(settings(2, Duration::from_millis(300)), Replica::default());
        let (a, _) = start(&tasks);
        let (_b, _) = start(&tasks);
        // Both working: no room.
        assert!(tasks
            .start(
                "x".into(),
                CancellationToken::new(),
                Arc::default(),
                Instant::now()
            )
            .is_none());
        tasks.finish(&a, Ok(CallToolResult::success(vec![])));
        let (_c, _) = start(&tasks);
        assert!(tasks.get(&a).is_err(), "the finished one made room");
        assert_eq!(tasks.working(), 2);
    }

    #[test]
    fn expired_tasks_are_swept() {
        let tasks = Tasks::new(settings(4, Duration::from_millis(200)), Replica::default());
        let (id, _) = start(&tasks);
        tasks.finish(&id, Ok(CallToolResult::success(vec![])));
        std::thread::sleep(Duration::from_millis(700));
        assert!(lock(&tasks.entries).is_empty());
    }
}
