//! The process's TLS provider, shared by every HTTPS client runbox makes (the network's
//! requests, code mode's HTTP upstreams).

/// The process's TLS cryptography: ring, not aws-lc-rs (it builds with cc alone). rustls
/// marks ring's provider deprecated for lacking post-quantum key exchange, which nothing
/// here needs yet.
#[allow(deprecated)]
pub fn crypto_provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

/// Makes ring the process's TLS provider, once: reqwest (built without a provider of its
/// own) refuses to build a client before one is installed.
pub fn crypto_ready() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Installed already (by an embedder): that one serves.
        let _ = crypto_provider().install_default();
    });
}
