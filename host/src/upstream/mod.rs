//! Code mode (docs/tools.md): the upstream MCP servers an operator names in
//! `--tools-config`, whose allowed tools programs in the sandbox call through the device
//! `/tools/call`. runbox is their client; the sandbox sees only the catalog and the
//! answers, never a command line, URL or credential.
//!
//! - [`config`]: the operator's file.
//! - [`connection`]: one server, connected, listed, restarted.
//! - [`catalog`]: what programs and models are told (`/tools/*`, a line per tool).
//! - [`gateway`]: the checks and caps between a program's request and a server.
//! - [`oversize`], [`http_client`]: an answer past the cap fails its call alone.
//! - [`answer`]: the device's answers; [`device`]: what serves a device.

pub mod answer;
pub mod catalog;
pub mod config;
mod connection;
pub mod device;
pub mod gateway;
mod http_client;
mod oversize;

pub use gateway::{Gateway, GatewaySettings, ToolCalls};
