//! The MCP handler: the `run_code`, `list_runtimes`, `create_session`, `fork_session` and
//! `close_session` tools over a [`Runbox`].
//!
//! One request: rmcp parses `tools/call` → [`RunboxServer::run_code`] checks the
//! arguments (`arguments.rs`) → [`Runbox::run`] with a token that rmcp cancels on
//! `notifications/cancelled` or when the connection ends, while progress notifications
//! go out for a client that asked (`progress.rs`) → the outcome as `structuredContent`
//! plus readable text and files (`content.rs`).

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use std::time::Instant;

use rmcp::model::{
    CacheScope, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock, CreateTaskResult,
    GetTaskParams, GetTaskResult, Implementation, JsonObject, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ResourceContents, ResultType, ServerCapabilities, ServerConfig,
    UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler};

use crate::mcp::handler::app;
use crate::mcp::handler::content::{run_result, structured, tool_error, INLINE_IMAGE_BYTES};
use crate::mcp::handler::progress::with_progress;
use crate::mcp::handler::retained::{ReadError, Retained};
use crate::mcp::handler::schema;
use crate::mcp::handler::settings::ServerSettings;
use crate::mcp::handler::tasks::Tasks;
use crate::mcp::handler::tools::close_session::{self, check_close_session, CloseSessionOutput};
use crate::mcp::handler::tools::create_session::{
    self, check_create_session, create_session_description, CreateSessionOutput,
};
use crate::mcp::handler::tools::fork_session::{self, check_fork_session, ForkSessionOutput};
use crate::mcp::handler::tools::list_runtimes::{
    self, Limits, ListRuntimesOutput, ToolServerEntry, NO_NETWORK,
};
use crate::mcp::handler::tools::run_code::{
    self, check_run_code, run_code_description, tools_description,
};
use crate::mcp::handler::tools::secs;
use crate::service::Held;
use crate::service::ReturnCaps;
use crate::service::RunStatus;
use crate::service::RunWatch;
use crate::service::{LimitOverrides, RunRequest, Runbox};
use tokio_util::sync::CancellationToken;

/// The MCP server: cheap to clone (one per HTTP session), all clones share one [`Runbox`]
/// (one limit of concurrent runs, one set of sessions) and one store of kept results.
#[derive(Clone)]
pub struct RunboxServer {
    runbox: Arc<Runbox>,
    settings: Arc<ServerSettings>,
    kept: Arc<Retained>,
    tasks: Arc<Tasks>,
    /// Cancelled when the server stops with runs still under way (a drain that ran out of
    /// time): every run ends, and its call is still answered.
    stopping: CancellationToken,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl RunboxServer {
    /// A handler with the default settings (see [`RunboxServer::with_settings`]).
    pub fn new(runbox: Arc<Runbox>) -> Self {
        RunboxServer::with_settings(runbox, ServerSettings::default())
    }

    /// A handler for the runtimes `runbox` has loaded: their names become the `runtime`
    /// enums and `run_code`'s description tells a model what it can run.
    pub fn with_settings(runbox: Arc<Runbox>, settings: ServerSettings) -> Self {
        let runtimes = runbox.runtimes();
        let limits = runbox.limits().clone();
        let mut tool_router = Self::tool_router();
        let route = tool_router
            .map
            .get_mut("run_code")
            .expect("run_code is a tool");
        route.attr.input_schema = run_code::run_code_input_schema(&runtimes, &limits);
        let max_task_timeout = Some(settings.tasks.max_timeout);
        let mut description = run_code_description(&runtimes, &limits, max_task_timeout);
        if let Some(gateway) = runbox.gateway() {
            description.push_str(&tools_description(&gateway.catalog()));
        }
        if let Some(net) = runbox.net() {
            description.push_str(&format!("\n\n{} See /net/README.md.", net.summary()));
        }
        route.attr.description = Some(description.into());
        let route = tool_router
            .map
            .get_mut("create_session")
            .expect("create_session is a tool");
        route.attr.input_schema = create_session::create_session_input_schema(&runtimes);
        route.attr.description = Some(
            create_session_description(
                &runtimes,
                runbox.sessions().idle_timeout().as_secs_f64(),
                runbox.sessions().max(),
            )
            .into(),
        );
        // Clients validate these (AJV in JavaScript ones): only standard JSON Schema,
        // and as small as they can be (every conversation carries them).
        for route in tool_router.map.values_mut() {
            route.attr.input_schema = schema::for_the_wire(&route.attr.input_schema, false);
            if let Some(output) = &route.attr.output_schema {
                route.attr.output_schema = Some(schema::for_the_wire(output, true));
            }
        }
        if let Some(route) = tool_router.map.get_mut("run_code") {
            route.attr.output_schema = Some(run_code::run_code_output_on_the_wire());
        }
        let kept = Retained::new(
            settings.retained_bytes,
            settings.resource_ttl,
            Some(runbox.server_memory()),
            runbox.replica().clone(),
        );
        let tasks = Tasks::new(settings.tasks.clone(), runbox.replica().clone());
        RunboxServer {
            runbox,
            tasks: Arc::new(tasks),
            settings: Arc::new(settings),
            kept: Arc::new(kept),
            stopping: CancellationToken::new(),
            tool_router,
        }
    }

    /// The service the tools call.
    pub fn runbox(&self) -> &Arc<Runbox> {
        &self.runbox
    }

    /// The tasks under way and kept.
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// Stops every run under way, tasks' included; each call is answered as cancelled.
    pub fn stop_runs(&self) {
        self.stopping.cancel();
        self.tasks.cancel_all();
    }

    /// Stops every task's run (the server is stopping).
    pub fn cancel_tasks(&self) {
        self.tasks.cancel_all();
    }

    /// The memory budget every run, call and kept result draws from.
    pub fn server_memory(&self) -> crate::service::MemoryBudget {
        self.runbox.server_memory()
    }

    /// A kept output or file for `resources/read`, and the charge for its answer (to
    /// hold until the answer is sent).
    pub fn read_kept(&self, uri: &str) -> Result<(ResourceContents, Held), ErrorData> {
        self.kept.read(uri).map_err(|e| match e {
            ReadError::NotOurs(_) | ReadError::Gone { .. } | ReadError::OtherReplica(_) => {
                ErrorData::resource_not_found(e.to_string(), Some(serde_json::json!({"uri": uri})))
            }
            ReadError::Busy(_) => ErrorData::internal_error(e.to_string(), None),
        })
    }

    /// How output files are read back for a result: whatever the kept results' budget
    /// grants (to be linked), and besides that only what could be inlined.
    fn return_caps(&self) -> ReturnCaps {
        ReturnCaps {
            file_bytes: INLINE_IMAGE_BYTES,
            total_bytes: 2 * INLINE_IMAGE_BYTES,
            keep: Some(self.kept.budget().clone()),
        }
    }

    /// Memory a call holds from admission until its result is rendered, besides its
    /// payload and output: the inlined files read outside the kept budget, and the
    /// result itself (built, then counted while serialized).
    fn presentation_bytes(&self) -> usize {
        2 * INLINE_IMAGE_BYTES as usize + 3 * self.settings.results.max_result_bytes
    }

    /// Run a program in a sandbox (the description is written at start-up).
    #[tool(
        name = "run_code",
        input_schema = run_code::run_code_base_input_schema(),
        output_schema = run_code::run_code_output_schema(),
        // Hints at their defaults (not idempotent; destructive unless read-only; open
        // world) are left out: tools/list carries only what differs from them.
        annotations(title = "Run code", read_only_hint = true, open_world_hint = false)
    )]
    async fn run_code(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let as_task = answers_with_tasks(&context);
        let max_timeout = match as_task {
            true => self.tasks.settings().max_timeout,
            false => self.runbox.limits().max_timeout,
        };
        let input = match check_run_code(arguments, &self.runbox.runtime_names(), max_timeout) {
            Ok(input) => input,
            Err(message) => return tool_error(message).into(),
        };
        let what = match (&input.session_id, input.runtime.as_str()) {
            (Some(id), "") => format!("in session {id}"),
            (_, runtime) => runtime.to_string(),
        };
        let watch = Arc::new(RunWatch::default());
        let session_id = input.session_id.clone();
        let capped = input.timeout_note(max_timeout);
        let request = RunRequest {
            runtime: input.runtime,
            code: input.code,
            stdin: input.stdin.map(String::into_bytes),
            args: Vec::new(),
            limits: LimitOverrides {
                timeout: input.timeout,
                memory_bytes: None,
                max_timeout: Some(max_timeout),
            },
            files: input.files,
            return_caps: self.return_caps(),
            presentation_bytes: self.presentation_bytes(),
            session_id: input.session_id,
            watch: Some(watch.clone()),
            keep_state_when_stopped: false,
        };
        let doing = format!("running {what}");
        if !as_task {
            let run = self.result_of(request, session_id, capped, context.ct.clone());
            return with_progress(&context, &doing, Some(&watch), run)
                .await
                .into();
        }
        // Its own token: the run outlives the request once it is a task.
        let cancel = CancellationToken::new();
        let started = Instant::now();
        let mut job = tokio::spawn({
            let server = self.clone();
            let cancel = cancel.clone();
            async move { server.result_of(request, session_id, capped, cancel).await }
        });
        let after = self.tasks.settings().after;
        let early = with_progress(&context, &doing, Some(&watch), async {
            tokio::select! {
                done = &mut job => Some(done),
                _ = tokio::time::sleep(after) => None,
                _ = context.ct.cancelled() => {
                    cancel.cancel();
                    Some((&mut job).await)
                }
            }
        })
        .await;
        if let Some(done) = early {
            return finished(done).into();
        }
        match self.tasks.start(what, cancel, watch.clone(), started) {
            Some(task) => {
                let tasks = self.tasks.clone();
                let id = task.task_id.clone();
                tokio::spawn(async move {
                    let done = job.await;
                    tasks.finish(
                        &id,
                        done.map_err(|e| ErrorData::internal_error(e.to_string(), None)),
                    );
                });
                CallToolResponse::Task(CreateTaskResult::new(task))
            }
            // No room for one more task: answered when it ends, as without tasks.
            None => finished(with_progress(&context, &doing, Some(&watch), job).await).into(),
        }
    }

    /// Runs `request` and renders its result (or the tool error saying why it could not
    /// run), with `note` (what the arguments' checks changed) as its notice.
    async fn result_of(
        &self,
        request: RunRequest,
        session_id: Option<String>,
        note: Option<String>,
        cancel: CancellationToken,
    ) -> CallToolResult {
        // The run also stops when the server does.
        let run_cancel = self.stopping.child_token();
        let link = tokio::spawn({
            let run_cancel = run_cancel.clone();
            let cancel = cancel.clone();
            async move {
                cancel.cancelled().await;
                run_cancel.cancel();
            }
        });
        let mut ran = self.runbox.run(request, run_cancel).await;
        link.abort();
        if let Ok(outcome) = &mut ran {
            if let Some(note) = note {
                outcome.notice = Some(match outcome.notice.take() {
                    Some(resumed) => format!("{note}; {resumed}"),
                    None => note,
                });
            }
            if self.stopping.is_cancelled() && !cancel.is_cancelled() {
                // Not the client's doing: say whose.
                if outcome.status == RunStatus::Terminated {
                    outcome.error = Some(
                        "the server stopped before the run ended (its drain timeout \
                         passed, or a second stop signal came)"
                            .into(),
                    );
                }
            }
        }
        match ran {
            // Rendering reads and encodes every output file (up to the scratch caps):
            // on a blocking thread, so the async workers keep answering other calls.
            Ok(outcome) => {
                let limits = self.settings.results;
                let kept = self.kept.clone();
                let rendered = tokio::task::spawn_blocking(move || {
                    run_result(outcome, session_id, &limits, &kept)
                });
                rendered.await.unwrap_or_else(|e| {
                    tool_error(format!("runbox failed while rendering the result: {e}"))
                })
            }
            Err(e) => tool_error(e.to_string()),
        }
    }

    /// What `run_code` can run, and within which limits.
    #[tool(
        name = "list_runtimes",
        description = list_runtimes::DESCRIPTION,
        annotations(
            title = "List runtimes",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_runtimes(&self) -> Json<ListRuntimesOutput> {
        let sessions = self.runbox.sessions();
        Json(ListRuntimesOutput {
            runtimes: self.runbox.runtimes().into_iter().map(Into::into).collect(),
            limits: Limits::new(
                self.runbox.limits(),
                sessions.max(),
                sessions.idle_timeout(),
            ),
            tools: self
                .runbox
                .gateway()
                .map(|g| ToolServerEntry::listing(&g.catalog())),
            network: match self.runbox.net() {
                Some(net) => net.summary(),
                None => NO_NETWORK.to_string(),
            },
        })
    }

    /// Start a session (the description is written at start-up).
    #[tool(
        name = "create_session",
        input_schema = create_session::create_session_base_input_schema(),
        output_schema = create_session::create_session_output_schema(),
        annotations(
            title = "Create a session",
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    async fn create_session(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let runtime = match check_create_session(arguments, &self.runbox.runtime_names()) {
            Ok(runtime) => runtime,
            Err(message) => return tool_error(message),
        };
        let what = format!("starting a {runtime} session");
        let created = with_progress(&context, &what, None, self.runbox.create_session(&runtime));
        match created.await {
            Ok(info) => {
                let output = CreateSessionOutput {
                    session_id: info.session_id,
                    runtime: info.runtime,
                    idle_timeout_seconds: info.idle_timeout.as_secs_f64(),
                    session_state: info.keeps_state,
                };
                let kept = if output.session_state {
                    "variables, functions, imports and files"
                } else {
                    "files (each call runs the program anew)"
                };
                let text = format!(
                    "session {} ({}) created: pass it as session_id to run_code; {kept} carry \
                     over between calls; it ends after {} s without calls, or with close_session.",
                    output.session_id,
                    output.runtime,
                    secs(output.idle_timeout_seconds)
                );
                structured(vec![ContentBlock::text(text)], &output)
            }
            Err(e) => tool_error(e.to_string()),
        }
    }

    /// Copy a session.
    #[tool(
        name = "fork_session",
        description = fork_session::DESCRIPTION,
        input_schema = fork_session::fork_session_input_schema(),
        output_schema = fork_session::fork_session_output_schema(),
        annotations(
            title = "Fork a session",
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    async fn fork_session(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let (session_id, count) = match check_fork_session(arguments) {
            Ok(args) => args,
            Err(message) => return tool_error(message),
        };
        let what = format!("copying session {session_id} {count} times");
        let forked = with_progress(
            &context,
            &what,
            None,
            self.runbox.fork_session(&session_id, count),
        );
        match forked.await {
            Ok(children) => {
                let output = ForkSessionOutput {
                    session_ids: children.into_iter().map(|c| c.session_id).collect(),
                    source: session_id,
                };
                let text = format!(
                    "session {} copied into {}: each holds its variables and files as they were, \
                     and lives on its own; pass one as session_id to run_code.",
                    output.source,
                    output.session_ids.join(", ")
                );
                structured(vec![ContentBlock::text(text)], &output)
            }
            Err(e) => tool_error(e.to_string()),
        }
    }

    /// End a session.
    #[tool(
        name = "close_session",
        description = close_session::DESCRIPTION,
        input_schema = close_session::close_session_input_schema(),
        output_schema = close_session::close_session_output_schema(),
        annotations(title = "Close a session", open_world_hint = false)
    )]
    async fn close_session(&self, Parameters(arguments): Parameters<JsonObject>) -> CallToolResult {
        let session_id = match check_close_session(arguments) {
            Ok(id) => id,
            Err(message) => return tool_error(message),
        };
        match self.runbox.close_session(&session_id) {
            Ok(()) => {
                let output = CloseSessionOutput {
                    session_id,
                    closed: true,
                };
                let text = format!(
                    "session {} closed; its files were removed",
                    output.session_id
                );
                structured(vec![ContentBlock::text(text)], &output)
            }
            Err(e) => tool_error(e.to_string()),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for RunboxServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_tasks()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("runbox", env!("CARGO_PKG_VERSION"))
                    .with_title("runbox: run code in a sandbox"),
            )
            .with_instructions(format!(
                "runbox runs programs in WebAssembly sandboxes. Call run_code with a runtime \
                 (its description lists them) and the program's source; list_runtimes tells \
                 versions, samples and limits. For multi-step work (load data once, then query it), create_session \
                 and pass its session_id to run_code. A result shows the head and tail of a \
                 long output and links what it leaves out (runbox:// URIs, readable with \
                 resources/read for {} s).",
                secs(self.settings.resource_ttl.as_secs_f64())
            ))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tasks.get(&request.task_id)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel(&request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.update(&request.task_id)
    }

    /// The tools; for a client of the MCP Apps extension, `run_code` names the result app
    /// (`_meta.ui.resourceUri`). Any other client gets the list as it always was.
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // As rmcp's own `list_tools` answers (its `#[tool_handler]` default).
        let cache_hints = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        let mut tools = self.tool_router.list_all();
        if app::wanted_by(context.client_capabilities().as_ref()) {
            for tool in tools.iter_mut().filter(|t| t.name == "run_code") {
                tool.meta = Some(app::tool_meta());
            }
        }
        Ok(ListToolsResult {
            result_type: Some(ResultType::COMPLETE),
            tools,
            meta: None,
            next_cursor: None,
            ttl_ms: cache_hints.then_some(0),
            cache_scope: cache_hints.then_some(CacheScope::Public),
        })
    }

    /// No resources are listed (kept outputs are unguessable handles, listed to no one),
    /// but the result app for a client of the MCP Apps extension.
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        if app::wanted_by(context.client_capabilities().as_ref()) {
            return Ok(ListResourcesResult::with_all_items(vec![app::resource()]));
        }
        Ok(ListResourcesResult::default())
    }

    /// A kept output or file (`runbox://…`, linked from a result), or the result app
    /// (`ui://runbox/run`, for a client of the MCP Apps extension).
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri == app::URI && app::wanted_by(context.client_capabilities().as_ref()) {
            return Ok(ReadResourceResult::new(vec![app::contents()]).into());
        }
        // Through rmcp the answer's charge ends here, once it is rendered: over HTTP
        // runbox sends these reads itself, charged until sent (`transport/http/server.rs`).
        let (contents, _answer) = self.read_kept(&request.uri)?;
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// Whether a call may be answered with a task: its client declared the tasks extension
/// in this request, in the revision that defines it (2026-07-28, with the version in the
/// request's `_meta`). A handshake-era client that lists the extension in its
/// `initialize` (the MCP Inspector 2.12 does) has no way to poll such a task: it gets
/// the result itself, within `--max-timeout`.
fn answers_with_tasks(context: &RequestContext<RoleServer>) -> bool {
    let modern = context
        .meta
        .protocol_version()
        .is_some_and(|v| !v.has_initialize());
    modern
        && context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks())
}

/// A spawned call's result, or a tool error if its task panicked.
fn finished(done: Result<CallToolResult, tokio::task::JoinError>) -> CallToolResult {
    done.unwrap_or_else(|e| tool_error(format!("runbox failed while running the call: {e}")))
}
