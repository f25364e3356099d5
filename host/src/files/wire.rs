//! How files travel in MCP messages: an input file's `content` as `utf-8` text or
//! `base64`, and output bytes as base64 blobs.

use base64::Engine as _;

use super::input::FileError;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::input::{check_inputs, InputFile};
    use crate::files::own::OwnFiles;

    fn inputs(files: &[(&str, &str, Option<&str>)]) -> Result<Vec<InputFile>, FileError> {
        let decoded = files
            .iter()
            .map(|(p, c, e)| Ok((p.to_string(), decode(p, c.to_string(), *e)?)))
            .collect::<Result<Vec<_>, FileError>>()?;
        check_inputs(
            decoded,
            &OwnFiles::new(["main.py".to_string(), ".cache/".to_string()]),
        )
    }

    #[test]
    fn inputs_are_decoded_and_checked() {
        let ok = inputs(&[
            ("a.txt", "hi", None),
            ("/b/c.bin", "AAEC/w==", Some("base64")),
            ("d.bin", "AAEC/w", Some("base64")),
        ])
        .unwrap();
        assert_eq!(ok[0].contents, b"hi");
        assert_eq!(ok[1].path, "b/c.bin");
        assert_eq!(ok[1].contents, [0, 1, 2, 255]);
        assert_eq!(ok[2].contents, [0, 1, 2, 255]);

        let err = |files: &[(&str, &str, Option<&str>)]| inputs(files).unwrap_err().to_string();
        assert!(err(&[("../x", "", None)]).contains("file `../x`"));
        assert!(err(&[("x", "", Some("latin-1"))]).contains("encoding `latin-1`"));
        assert!(err(&[("x", "%%%", Some("base64"))]).contains("not valid base64"));
        assert!(err(&[("x", "", None), ("/x", "", None)]).contains("given twice"));
        assert!(err(&[("a", "", None), ("a/b", "", None)]).contains("cannot be inside"));
        assert!(err(&[("main.py", "", None)]).contains("its own use"));
        assert!(err(&[(".cache/x", "", None)]).contains("its own use"));
    }
}
