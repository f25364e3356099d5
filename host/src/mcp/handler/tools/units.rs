//! Numbers as people write them, in descriptions and results.

/// A number of seconds as people write it: `10`, `0.5`.
pub fn secs(s: f64) -> String {
    format!("{s}")
}

/// A size as people write it: `512 MiB`, `64 KiB`, `1000 bytes`.
pub fn bytes(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(bytes(512 << 20), "512 MiB");
        assert_eq!(bytes(64 << 10), "64 KiB");
        assert_eq!(bytes(1000), "1000 bytes");
    }
}
