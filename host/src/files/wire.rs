//! How files travel in MCP messages: an input file's `content` as `utf-8` text or
//! `base64`, and output bytes as base64 blobs.

use base64::Engine as _;

use crate::files::FileError;

/// How an input file's `content` is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Base64,
}

impl Encoding {
    /// The encoding named `name` (`utf-8`, or `base64`); the message names both.
    /// `text` is Runno's name for `utf-8`, which prompts written for it send.
    pub fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "utf-8" | "utf8" | "text" => Some(Encoding::Utf8),
            "base64" => Some(Encoding::Base64),
            _ => None,
        }
    }
}

/// The bytes of an input file's `content` in `encoding` (`utf-8` when absent).
pub fn decode(path: &str, content: String, encoding: Option<&str>) -> Result<Vec<u8>, FileError> {
    let encoding = match encoding {
        None => Encoding::Utf8,
        Some(name) => Encoding::parse(name).ok_or_else(|| FileError::BadEncoding {
            path: path.to_string(),
            encoding: name.to_string(),
        })?,
    };
    match encoding {
        Encoding::Utf8 => Ok(content.into_bytes()),
        Encoding::Base64 => decode_base64(&content).map_err(|detail| FileError::BadBase64 {
            path: path.to_string(),
            detail,
        }),
    }
}

/// Standard base64, with or without padding; whitespace (line breaks) is ignored.
fn decode_base64(content: &str) -> Result<Vec<u8>, String> {
    let compact: String = content
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    engine.decode(compact).map_err(|e| e.to_string())
}

/// Standard base64 with padding, for returned files.
pub fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
