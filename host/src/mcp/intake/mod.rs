//! What a message must pass before it is parsed: its size, its shape (how many JSON values,
//! how deep; `message_scan.rs`), and room in the server's memory budget for the values
//! parsing it will allocate. Both transports screen every message here, so a message
//! that would cost gigabytes as a `serde_json::Value` tree is refused while it is still
//! bytes.

pub mod message_scan;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::mcp::intake::message_scan::{scan, MessageLimits, ScanError};
use crate::service::{MemoryBudget, Reservation};

/// The largest JSON-RPC message runbox reads, over stdio (one line) or HTTP (one body).
/// Anything up to this size is parsed (once it passes the scan), so an oversized `code`
/// gets a clear tool error instead of silence.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// JSON-RPC's "invalid request" code, for messages refused before parsing.
const INVALID_REQUEST: i32 = -32600;
/// JSON-RPC's "internal error" code, for a server too busy to parse a message now.
const SERVER_BUSY: i32 = -32603;

/// Why a message was refused before it was parsed.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error(
        "the message is {bytes} bytes; runbox reads at most {} MiB per JSON-RPC message",
        MAX_MESSAGE_BYTES >> 20
    )]
    TooLarge { bytes: usize },
    #[error(transparent)]
    Shape(#[from] ScanError),
    #[error(
        "runbox is busy: parsing this message needs {needed} bytes of the server's memory \
         budget, which is in use; try again shortly"
    )]
    Busy { needed: usize },
}

/// The screen every message passes.
#[derive(Clone)]
pub struct Intake {
    limits: MessageLimits,
    budget: MemoryBudget,
}

impl Intake {
    /// Screens against the default limits, charging parses to `budget` (the server's).
    pub fn new(budget: MemoryBudget) -> Intake {
        Intake {
            limits: MessageLimits::default(),
            budget,
        }
    }

    /// Checks `bytes` (one whole message) and reserves what parsing it costs; the
    /// reservation is held while the parsed message is handed on.
    pub fn screen(&self, bytes: &[u8]) -> Result<Reservation, Refusal> {
        if bytes.len() > MAX_MESSAGE_BYTES {
            return Err(Refusal::TooLarge { bytes: bytes.len() });
        }
        let summary = scan(bytes, &self.limits)?;
        let needed = summary.parse_cost();
        self.budget.reserve(needed).ok_or(Refusal::Busy { needed })
    }
}

impl Refusal {
    /// The JSON-RPC error answering the refused `message`, with its `id` when that can be
    /// read without building the message's values (serde skips the rest without
    /// allocating; a message too deep for that gets `id: null`).
    pub fn answer(&self, message: &[u8]) -> Value {
        #[derive(Deserialize)]
        struct Head {
            #[serde(default)]
            id: Option<Value>,
        }
        let id = match self {
            Refusal::TooLarge { .. } => None,
            _ => serde_json::from_slice::<Head>(message)
                .ok()
                .and_then(|h| h.id)
                .filter(|id| id.is_string() || id.is_number()),
        };
        let code = match self {
            Refusal::Busy { .. } => SERVER_BUSY,
            _ => INVALID_REQUEST,
        };
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": self.to_string()}})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_messages_are_refused_with_their_id() {
        let intake = Intake::new(MemoryBudget::new(1 << 30));
        let zeros = vec!["0"; 200_000].join(",");
        let message = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"run_code","arguments":{{"code":"x","files":[{zeros}]}}}}}}"#
        );
        let refusal = intake.screen(message.as_bytes()).unwrap_err();
        assert!(matches!(refusal, Refusal::Shape(_)), "{refusal}");
        let answer = refusal.answer(message.as_bytes());
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["error"]["code"], INVALID_REQUEST);
        assert!(answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("100000"));
    }

    #[test]
    fn parsing_is_charged_to_the_budget() {
        let budget = MemoryBudget::new(4096);
        let intake = Intake::new(budget.clone());
        let small = br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#;
        let held = intake.screen(small).unwrap();
        assert!(budget.used() > 0);
        drop(held);
        assert_eq!(budget.used(), 0);
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":"b","method":"x","params":{{"s":"{}"}}}}"#,
            "y".repeat(8192)
        );
        let refusal = intake.screen(big.as_bytes()).unwrap_err();
        assert!(matches!(refusal, Refusal::Busy { .. }));
        assert_eq!(refusal.answer(big.as_bytes())["id"], "b");
    }
}
