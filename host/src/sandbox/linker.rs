//! The linkers stores are instantiated with, one per WIT world (wit/runbox.wit):
//!
//! - [`plugin_linker`]: the imports of `world plugin` (and of `session-plugin` and
//!   `command-plugin`, which import the same): the WASI 0.2 interfaces a sandboxed program
//!   needs plus the host's `process`, `config` and `commands`.
//! - [`tool_linker`]: `world tool`, the same WASI interfaces plus the `exit` hook of a
//!   componentized preview1 program; for declared tools and for programs a plugin
//!   produced. No `process`: a tool cannot spawn, so spawning is one level deep.
//!
//! No sockets, no http anywhere: a component that imports them fails to instantiate.

use wasmtime::component::{HasSelf, Linker};
use wasmtime::Engine;
use wasmtime_wasi::cli::{WasiCli, WasiCliView as _};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView as _};
use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView as _};
use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, random};
use wasmtime_wasi::random::WasiRandom;
use wasmtime_wasi::{I32Exit, WasiView};

use super::filesystem::WasiQuotaFsView;
use super::replay_clock::WasiReplayClocksView;
use super::sandbox::StoreState;
use crate::componentize::{EXIT_FIELD, EXIT_MODULE};

/// What a plugin component may import: WASI, `process`, `config` and `commands`.
pub fn plugin_linker(engine: &Engine) -> wasmtime::Result<Linker<StoreState>> {
    let mut linker = Linker::new(engine);
    add_wasi(&mut linker)?;
    crate::wit::CommandPlugin::add_to_linker::<StoreState, HasSelf<StoreState>>(
        &mut linker,
        |s| s,
    )?;
    Ok(linker)
}

/// What a tool or a produced program may import: WASI and the `exit` hook.
pub fn tool_linker(engine: &Engine) -> wasmtime::Result<Linker<StoreState>> {
    let mut linker = Linker::new(engine);
    add_wasi(&mut linker)?;
    // A preview1 program's proc_exit, rerouted here by `componentize`.
    linker
        .instance(EXIT_MODULE)?
        .func_wrap(EXIT_FIELD, |_, (code,): (i32,)| -> wasmtime::Result<()> {
            Err(I32Exit(code).into())
        })?;
    Ok(linker)
}

/// `wasmtime_wasi::p2::add_to_linker_async` without `wasi:sockets`, and with the scratch
/// cap on `wasi:filesystem/types`.
fn add_wasi<T: WasiView + WasiQuotaFsView + WasiReplayClocksView>(
    l: &mut Linker<T>,
) -> wasmtime::Result<()> {
    use wasmtime_wasi_io::bindings::wasi::io;
    struct HasIo;
    impl wasmtime::component::HasData for HasIo {
        type Data<'a> = &'a mut wasmtime::component::ResourceTable;
    }
    io::error::add_to_linker::<T, HasIo>(l, |t| t.ctx().table)?;
    io::poll::add_to_linker::<T, HasIo>(l, |t| t.ctx().table)?;
    io::streams::add_to_linker::<T, HasIo>(l, |t| t.ctx().table)?;

    clocks::wall_clock::add_to_linker::<T, WasiClocks>(l, T::clocks)?;
    // Sleeps end at once while a session's calls are run again.
    super::replay_clock::add_to_linker(l)?;
    // `types` with the run's scratch cap; `preopens` as is.
    super::filesystem::add_to_linker(l)?;
    filesystem::preopens::add_to_linker::<T, WasiFilesystem>(l, T::filesystem)?;
    random::random::add_to_linker::<T, WasiRandom>(l, |t| t.ctx().ctx.random())?;
    random::insecure::add_to_linker::<T, WasiRandom>(l, |t| t.ctx().ctx.random())?;
    random::insecure_seed::add_to_linker::<T, WasiRandom>(l, |t| t.ctx().ctx.random())?;
    cli::exit::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::environment::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::stdin::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::stdout::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::stderr::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_input::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_output::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_stdin::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_stdout::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_stderr::add_to_linker::<T, WasiCli>(l, T::cli)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::component::Component;

    /// A component importing `runbox:plugin/process.spawn`.
    const SPAWNER: &str = r#"(component
        (import "runbox:plugin/process@0.2.0" (instance
            (type $cmd (record (field "program" string) (field "args" (list string))
                (field "env" (list (tuple string string))) (field "stdin" (option (list u8)))))
            (export "command" (type $c (eq $cmd)))
            (type $err (variant (case "not-found" string) (case "invalid-program" string)))
            (export "spawn-error" (type $e (eq $err)))
            (type $f (func (param "command" $c) (result (result s32 (error $e)))))
            (export "spawn" (func (type $f))))))"#;

    #[test]
    fn only_plugins_may_import_process() {
        let engine = wasmtime::Engine::default();
        let spawner = Component::new(&engine, wat::parse_str(SPAWNER).unwrap()).unwrap();
        plugin_linker(&engine)
            .unwrap()
            .instantiate_pre(&spawner)
            .expect("a plugin imports process");
        let e = tool_linker(&engine)
            .unwrap()
            .instantiate_pre(&spawner)
            .err()
            .expect("a tool or produced program must not get `process`");
        assert!(format!("{e:#}").contains("runbox:plugin/process"), "{e:#}");
    }
}
