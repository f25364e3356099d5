//! The one linker every store of a run is instantiated with: the WASI 0.2 interfaces a
//! sandboxed program needs, the host's `process` and `config` for plugins, and the
//! `exit` hook for componentized preview1 tools. No sockets, no http: a component that
//! imports them fails to instantiate.

use wasmtime::component::{HasSelf, Linker};
use wasmtime::Engine;
use wasmtime_wasi::cli::{WasiCli, WasiCliView as _};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView as _};
use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView as _};
use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, random};
use wasmtime_wasi::random::WasiRandom;
use wasmtime_wasi::{I32Exit, WasiView};

use super::quota_fs::WasiQuotaFsView;
use super::store::StoreState;
use crate::componentize::{EXIT_FIELD, EXIT_MODULE};

pub fn sandbox_linker(engine: &Engine) -> wasmtime::Result<Linker<StoreState>> {
    let mut linker = Linker::new(engine);
    add_wasi(&mut linker)?;
    super::bindings::Plugin::add_to_linker::<StoreState, HasSelf<StoreState>>(&mut linker, |s| s)?;
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
fn add_wasi<T: WasiView + WasiQuotaFsView>(l: &mut Linker<T>) -> wasmtime::Result<()> {
    use wasmtime_wasi_io::bindings::wasi::io;
    struct HasIo;
    impl wasmtime::component::HasData for HasIo {
        type Data<'a> = &'a mut wasmtime::component::ResourceTable;
    }
    io::error::add_to_linker::<T, HasIo>(l, |t| t.ctx().table)?;
    io::poll::add_to_linker::<T, HasIo>(l, |t| t.ctx().table)?;
    io::streams::add_to_linker::<T, HasIo>(l, |t| t.ctx().table)?;

    clocks::wall_clock::add_to_linker::<T, WasiClocks>(l, T::clocks)?;
    clocks::monotonic_clock::add_to_linker::<T, WasiClocks>(l, T::clocks)?;
    // `types` with the run's scratch cap; `preopens` as is.
    super::quota_fs::add_to_linker(l)?;
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
