//! sha256 checks.

use std::io::{self, Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::error::ArtifactError;
use crate::manifest::ArtifactSpec;

/// The pinned hash of `spec`, in lower case (the form used for cache file names).
pub(crate) fn expected(spec: &ArtifactSpec) -> String {
    spec.sha256.to_ascii_lowercase()
}

/// Hex sha256 of everything `reader` yields.
pub(crate) fn sha256_reader(mut reader: impl Read) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Hex sha256 of the file at `path`.
pub(crate) fn sha256_file(path: &Path) -> io::Result<String> {
    sha256_reader(std::fs::File::open(path)?)
}

/// Fails with [`ArtifactError::Sha256Mismatch`] unless `actual` is the hash `spec` pins.
pub(crate) fn check(spec: &ArtifactSpec, actual: &str) -> Result<(), ArtifactError> {
    let expected = expected(spec);
    if actual.eq_ignore_ascii_case(&expected) {
        Ok(())
    } else {
        Err(ArtifactError::Sha256Mismatch {
            artifact: spec.describe(),
            expected,
            actual: actual.to_string(),
        })
    }
}

/// A writer that hashes everything written through it.
pub(crate) struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
}

impl<W: Write> HashingWriter<W> {
    pub(crate) fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hasher: Sha256::new(),
        }
    }

    /// The inner writer and the hex sha256 of what was written.
    pub(crate) fn finish(self) -> (W, String) {
        (self.inner, hex::encode(self.hasher.finalize()))
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
