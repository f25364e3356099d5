//! A plugin's component instantiated in a store of its own, and the calls the host makes
//! on it: `describe`, `run`, and a `session`'s `run`.

use std::sync::Arc;

use wasmtime::component::ResourceAny;
use wasmtime::Store;

use super::warm_pages::WarmPages;
use crate::plugin::LoadedPlugin;
use crate::sandbox::at_rest_tool;
use crate::sandbox::store::{new_store, ProgramIo};
use crate::sandbox::Sandbox;
use crate::sandbox::StoreState;
use crate::state::{LiveState, SessionImage, StateAccess, StateError, Taking};
use crate::wit::exports::runbox::plugin::{command, runtime, session};

/// What the host asks of a plugin in one call.
pub enum PluginCall {
    Describe,
    Run(runtime::RunRequest),
}

/// What the plugin answered.
pub enum PluginReturn {
    Info(runtime::Info),
    Exit(Result<i32, String>),
}

/// One instance of a plugin's component.
pub struct PluginInstance {
    store: Store<StoreState>,
    instance: wasmtime::component::Instance,
    runtime: runtime::Guest,
    /// Opened by [`PluginInstance::with_session`].
    session: Option<OpenSession>,
    /// The doors into its state, and what it was right after its session opened.
    state: Option<(Arc<StateAccess>, LiveState)>,
}

struct OpenSession {
    exports: session::Guest,
    handle: ResourceAny,
}

impl PluginInstance {
    /// A fresh instance of `plugin` in `sandbox`.
    pub async fn new(plugin: &LoadedPlugin, sandbox: &Arc<Sandbox>) -> wasmtime::Result<Self> {
        let io = ProgramIo {
            argv: vec![plugin.spec.name.clone()],
            ..ProgramIo::default()
        };
        let mut store = new_store(sandbox, io, sandbox.engine.engine())?;
        let instance = plugin.component.instantiate_async(&mut store).await?;
        let runtime = plugin.runtime_exports.load(&mut store, &instance)?;
        Ok(PluginInstance {
            store,
            instance,
            runtime,
            session: None,
            state: None,
        })
    }

    /// A fresh instance of `plugin` with its session opened (which may start its
    /// interpreter). The plugin must keep sessions ([`keeps_sessions`]).
    pub async fn with_session(
        plugin: &LoadedPlugin,
        sandbox: &Arc<Sandbox>,
    ) -> wasmtime::Result<Self> {
        let mut instance = PluginInstance::new(plugin, sandbox).await?;
        let indices = plugin
            .session_exports
            .as_ref()
            .ok_or_else(|| wasmtime::format_err!("the plugin exports no session"))?;
        let exports = indices.load(&mut instance.store, &instance.instance)?;
        let handle = exports
            .session()
            .call_constructor(&mut instance.store)
            .await?;
        instance.session = Some(OpenSession { exports, handle });
        if let Some(state) = &plugin.state {
            let resources = instance.store.data_mut().live_resources();
            match state
                .startup(&mut instance.store, &instance.instance, resources)
                .await
            {
                Ok(startup) => instance.state = Some((state.clone(), startup)),
                Err(e) => {
                    tracing::warn!(plugin = %plugin.spec.name, "no snapshots of this session: {e}")
                }
            }
        }
        Ok(instance)
    }

    /// The session's state, taken out of this instance and the resident programs it
    /// keeps (at rest: no call under way), as `taking` says.
    pub async fn capture(&mut self, taking: Taking) -> Result<SessionImage, StateError> {
        let (state, live) = self.state.as_mut().ok_or(StateError::NoDoors)?;
        let resources = self.store.data_mut().live_resources();
        let plugin = state
            .capture(&mut self.store, &self.instance, live, resources, taking)
            .await
            .map_err(|e| e.of("its plugin"))?;
        let mut residents = Vec::new();
        for resident in self.store.data_mut().residents() {
            let tool = at_rest_tool(resident).ok_or(StateError::NotAtRest)?;
            residents.push(
                tool.capture(taking)
                    .await
                    .map_err(|e| e.of("its interpreter"))?,
            );
        }
        Ok(SessionImage { plugin, residents })
    }

    /// Writes `image` into this instance (fresh, its session just opened) and its
    /// residents: it goes on from where the session the image was taken of stood.
    pub async fn restore(&mut self, image: &SessionImage) -> Result<(), StateError> {
        let (state, live) = self.state.as_mut().ok_or(StateError::NoDoors)?;
        let fresh = self.store.data_mut().residents().count();
        if fresh != image.residents.len() {
            return Err(StateError::Residents {
                fresh,
                image: image.residents.len(),
            });
        }
        state
            .restore(&mut self.store, &self.instance, live, &image.plugin)
            .await?;
        for (resident, image) in self.store.data_mut().residents().zip(&image.residents) {
            let tool = at_rest_tool(resident).ok_or(StateError::NotAtRest)?;
            tool.restore(image).await?;
        }
        Ok(())
    }

    /// What each resident runs in a copy of a session once it is made (python re-seeds
    /// `random`, as after `os.fork`).
    pub async fn after_fork(&mut self) -> wasmtime::Result<()> {
        for resident in self.store.data_mut().residents() {
            let Some(program) = at_rest_tool(resident).and_then(|tool| tool.after_fork()) else {
                continue;
            };
            if let Some(code) = resident.run_turn(program).await? {
                wasmtime::bail!("the interpreter exited with {code} after the fork");
            }
        }
        Ok(())
    }

    /// Makes `call` with `runtime` (a fresh instance's one call).
    pub async fn call(&mut self, call: PluginCall) -> wasmtime::Result<PluginReturn> {
        Ok(match call {
            PluginCall::Describe => {
                PluginReturn::Info(self.runtime.call_describe(&mut self.store).await?)
            }
            PluginCall::Run(request) => {
                PluginReturn::Exit(self.runtime.call_run(&mut self.store, &request).await?)
            }
        })
    }

    /// Runs `invocation` as the plugin's command, when it has one (see `run/commands.rs`).
    pub async fn run_command(
        &mut self,
        plugin: &LoadedPlugin,
        invocation: &command::Invocation,
    ) -> wasmtime::Result<Option<Result<i32, String>>> {
        let Some(indices) = &plugin.command_exports else {
            return Ok(None);
        };
        let exports = indices.load(&mut self.store, &self.instance)?;
        Ok(Some(
            exports
                .call_run_command(&mut self.store, invocation)
                .await?,
        ))
    }

    /// Runs `request` in the plugin's session, after the calls before it (the session
    /// must be open: see [`PluginInstance::with_session`]).
    pub async fn run_in_session(
        &mut self,
        request: &runtime::RunRequest,
    ) -> wasmtime::Result<PluginReturn> {
        self.call_session(request, false).await
    }

    /// Readies a warm instance of `runtime` for its one run: its residents' memories get
    /// the pages the last such run touched mapped ahead, and tell `pages` which this
    /// run touched as they go (`warm_pages.rs`).
    pub fn warm_up(&mut self, runtime: &str, pages: &Arc<WarmPages>) {
        for resident in self.store.data_mut().residents() {
            let Some(tool) = at_rest_tool(resident) else {
                continue;
            };
            pages.populate(runtime, &tool.placements());
            let (pages, runtime) = (pages.clone(), runtime.to_string());
            tool.learn_on_drop(Box::new(move |places| pages.learn(&runtime, places)));
        }
    }

    /// Runs `request` as an ordinary run in the plugin's session, which it uses up (a
    /// pre-started run: see `prestart.rs`).
    pub async fn run_once(
        &mut self,
        request: &runtime::RunRequest,
    ) -> wasmtime::Result<PluginReturn> {
        self.call_session(request, true).await
    }

    async fn call_session(
        &mut self,
        request: &runtime::RunRequest,
        once: bool,
    ) -> wasmtime::Result<PluginReturn> {
        let open = self
            .session
            .as_ref()
            .ok_or_else(|| wasmtime::format_err!("the plugin exports no session"))?;
        let session = open.exports.session();
        let exit = if once {
            session
                .call_run_once(&mut self.store, open.handle, request)
                .await?
        } else {
            session
                .call_run(&mut self.store, open.handle, request)
                .await?
        };
        Ok(PluginReturn::Exit(exit))
    }
}

/// Whether `plugin` keeps sessions itself (exports `runbox:plugin/session`); otherwise
/// each call of a session runs in a fresh instance.
pub fn keeps_sessions(plugin: &LoadedPlugin) -> bool {
    plugin.session_exports.is_some()
}
