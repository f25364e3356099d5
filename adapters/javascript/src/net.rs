//! The network of a run with a policy (docs/network.md), as `fetch` (src/fetch.js) reaches
//! it: the host-mediated device `/net/fetch`, which works like code mode's `/tools/call`.
//! One request opens the device for reading and writing, writes one JSON request and reads
//! one JSON answer to the end of the file. Bodies travel as base64 ([`encode_base64`],
//! [`decode_base64`]).
//!
//! Every function takes the directory, `/net` in the component ([`DIR`]), so that the
//! native tests can point it at a temporary one.

use std::path::Path;

pub use runbox_adapter_support::device::{decode_base64, encode_base64};
use runbox_adapter_support::device::{exchange, Exchanged};
use runbox_adapter_support::tools::error_answer;

/// Where the host shows the network to a run: with a policy it holds the device, without
/// one it is empty.
pub const DIR: &str = "/net";
/// The device (in [`DIR`]).
pub const DEVICE: &str = "fetch";

/// One request through the device in `dir`: `request` (one JSON request) in, the answer's
/// text out. `None` when there is no device (runbox was started without a network
/// policy); an exchange that fails is an `unavailable` answer of its own.
pub fn fetch(dir: &Path, request: &[u8]) -> Option<String> {
    match exchange(&dir.join(DEVICE), request) {
        Exchanged::Answer(answer) => Some(String::from_utf8_lossy(&answer).into_owned()),
        Exchanged::Missing => None,
        Exchanged::Failed(why) => Some(error_answer("unavailable", &why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        let cases: &[(&[u8], &str)] = &[
            (b"", ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"\xff\xfe\x00\x80", "//4AgA=="),
        ];
        for (bytes, text) in cases {
            assert_eq!(encode_base64(bytes), *text);
            assert_eq!(decode_base64(text).as_deref(), Some(*bytes));
        }
        let all: Vec<u8> = (0..=255).cycle().take(10_000).collect();
        assert_eq!(decode_base64(&encode_base64(&all)), Some(all));
        // Unpadded, URL-safe, with line breaks.
        assert_eq!(decode_base64("Zm8").as_deref(), Some(&b"fo"[..]));
        assert_eq!(
            decode_base64("__4A\ngA").as_deref(),
            Some(&b"\xff\xfe\x00\x80"[..])
        );
        // Not base64.
        assert_eq!(decode_base64("Zm9v!"), None);
        assert_eq!(decode_base64("Z"), None);
        assert_eq!(decode_base64("Zg==Zg=="), None);
    }

    #[test]
    fn without_the_device_there_is_no_answer() {
        let dir = std::env::temp_dir().join(format!("runbox-js-net-none-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(fetch(&dir, b"{}"), None);
        // An empty device: an answer saying so.
        std::fs::write(dir.join(DEVICE), "").unwrap();
        let answer = fetch(&dir, b"{}").unwrap();
        assert!(
            answer.starts_with(r#"{"ok":false,"error":"unavailable""#),
            "{answer}"
        );
        assert!(answer.contains("gave no answer"), "{answer}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
