//! A device of the host's (code mode's `/tools/call`, the network's `/net/fetch`), as a
//! guest reaches it: the file opened for reading and writing, one request written, the
//! answer read to its end. And base64, in which the network's bodies travel.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Read, Write};
use std::path::Path;

/// What one exchange with a device gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Exchanged {
    /// The answer's bytes.
    Answer(Vec<u8>),
    /// There is no device: the server was not started with what serves it.
    Missing,
    /// The exchange failed, and why.
    Failed(String),
}

/// One exchange with the device at `path`.
pub fn exchange(path: &Path, request: &[u8]) -> Exchanged {
    let mut device = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(device) => device,
        // The device's directory is read-only: opening a file it lacks for writing fails
        // as not permitted rather than as missing.
        Err(e) if e.kind() == ErrorKind::NotFound || !path.exists() => return Exchanged::Missing,
        Err(e) => return Exchanged::Failed(format!("cannot open {}: {e}", path.display())),
    };
    let mut answer = Vec::new();
    let exchanged = device
        .write_all(request)
        .and_then(|()| device.read_to_end(&mut answer));
    match exchanged {
        Err(e) => Exchanged::Failed(format!(
            "the request through {} failed: {e}",
            path.display()
        )),
        Ok(0) => Exchanged::Failed(format!(
            "the request through {} gave no answer",
            path.display()
        )),
        Ok(_) => Exchanged::Answer(answer),
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `bytes` in base64 (the standard alphabet, padded).
pub fn encode_base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
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
