//! Why a request to `/net/fetch` gave no answer of its own.

use crate::upstream::answer::Failure;

/// Why a request did not give an answer: its kind (the answer's `error`) and message.
#[derive(Debug)]
pub struct Refusal {
    pub kind: Failure,
    pub message: String,
}

impl Refusal {
    pub fn new(kind: Failure, message: impl Into<String>) -> Refusal {
        Refusal {
            kind,
            message: message.into(),
        }
    }
}
