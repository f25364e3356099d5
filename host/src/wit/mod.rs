//! The host's side of the `runbox:plugin` WIT package (`wit/runbox.wit`): the types and
//! traits `bindgen!` generates for the `command-plugin` world (the widest: `session-plugin`
//! and `command` besides), whose exports plugins may have and whose `process` and
//! `commands` interfaces the host implements (`sandbox/process.rs`, `sandbox/commands.rs`).

pub mod resident;

wasmtime::component::bindgen!({
    path: "../wit",
    world: "command-plugin",
    imports: {
        "runbox:plugin/process.spawn": async | trappable,
        "runbox:plugin/process.spawn-build": async | trappable,
        "runbox:plugin/process.[static]resident.start": async | trappable,
        "runbox:plugin/process.[method]resident.feed": async | trappable,
        "runbox:plugin/commands.run": async | trappable,
        default: trappable,
    },
    exports: { default: async },
    with: {
        "runbox:plugin/process.resident": crate::wit::resident::Resident,
    },
});
