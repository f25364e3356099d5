//! Gives the component an 8 MiB stack instead of Rust's default 1 MiB for WebAssembly:
//! bashkit's parser and interpreter recurse on the native stack (nested commands,
//! functions calling functions), and an overflow there is a trap that ends the instance.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg-cdylib=-zstack-size=8388608");
    }
}
