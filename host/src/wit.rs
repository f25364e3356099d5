//! The host's side of the `runbox:plugin` WIT package (`wit/runbox.wit`): the types and
//! traits `bindgen!` generates for the `session-plugin` world, which plugins export and
//! whose `process` interface the host implements (`sandbox/process.rs`).

wasmtime::component::bindgen!({
    path: "../wit",
    world: "session-plugin",
    imports: {
        "runbox:plugin/process.spawn": async | trappable,
        "runbox:plugin/process.spawn-build": async | trappable,
        "runbox:plugin/process.[static]resident.start": async | trappable,
        "runbox:plugin/process.[method]resident.feed": async | trappable,
        default: trappable,
    },
    exports: { default: async },
    with: {
        "runbox:plugin/process.resident": crate::sandbox::resident::Resident,
    },
});
