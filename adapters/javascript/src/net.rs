//! The network of a run with a policy (docs/network.md), as `fetch` (src/fetch.js) reaches
//! it: the host-mediated device `/net/fetch`, which works like code mode's `/tools/call`.
//! One request opens the device for reading and writing, writes one JSON request and reads
//! one JSON answer to the end of the file. Bodies travel as base64 ([`encode_base64`],
//! [`decode_base64`]).
//!
//! Every function takes the directory, `/net` in the component ([`DIR`]), so that the
//! native tests can point it at a temporary one.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Read, Write};
use std::path::Path;

/// Where the host shows the network to a run: with a policy it holds the device, without
/// one it is empty.
pub const DIR: &str = "/net";
/// The device (in [`DIR`]).
pub const DEVICE: &str = "fetch";

/// One request through the device in `dir`: `request` (one JSON request) in, the answer's
/// text out. `None` when there is no device (runbox was started without a network
/// policy); an exchange that fails is an `unavailable` answer of its own.
pub fn fetch(dir: &Path, request: &[u8]) -> Option<String> {
    let path = dir.join(DEVICE);
    let mut device = match OpenOptions::new().read(true).write(true).open(&path) {
        Ok(device) => device,
        // `/net` is read-only: opening a file it lacks for writing fails as not permitted.
        Err(e) if e.kind() == ErrorKind::NotFound || !path.exists() => return None,
        Err(e) => {
            return Some(error_answer(&format!(
                "cannot open {}: {e}",
                path.display()
            )))
        }
    };
    let mut answer = Vec::new();
    let exchanged = device
        .write_all(request)
        .and_then(|()| device.read_to_end(&mut answer));
    Some(match exchanged {
        Err(e) => error_answer(&format!(
            "the request through {} failed: {e}",
            path.display()
        )),
        Ok(0) => error_answer(&format!(
            "the request through {} gave no answer",
            path.display()
        )),
        Ok(_) => String::from_utf8_lossy(&answer).into_owned(),
    })
}

fn error_answer(message: &str) -> String {
    runbox_adapter_support::tools::error_answer("unavailable", message)
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `bytes` in base64 (the standard alphabet, padded).
pub fn encode_base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The bytes of base64 text (the standard or the URL-safe alphabet, padded or not, ASCII
/// whitespace ignored); `None` when it is not base64.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 2);
    let mut n: u32 = 0;
    let mut bits = 0;
    let mut padding = 0;
    for &c in text.as_bytes() {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => {
                padding += 1;
                continue;
            }
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => continue,
            _ => return None,
        };
        if padding > 0 {
            return None;
        }
        n = (n << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((n >> bits) as u8);
            n &= (1 << bits) - 1;
        }
    }
    // What is left is less than a byte: a lone sixth of one (one character past a
    // multiple of four) is no base64.
    (bits != 6 && padding <= 2).then_some(out)
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
