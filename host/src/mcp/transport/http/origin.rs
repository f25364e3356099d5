//! The `Origin` and `Host` checks every HTTP request passes before anything answers it.
//!
//! rmcp checks both inside its transport, but runbox answers some requests before rmcp
//! sees them (a handshake-era `resources/read`, a refused `initialize`; see `transport/http/server.rs`),
//! so the same rules run here first, for every request to the MCP path, whatever its
//! method or revision: a foreign `Origin` (a web page driving a local server) and, on
//! a loopback server, a `Host` that is not loopback (DNS rebinding) get 403.

use axum::extract::{Request, State};
use axum::http::{header, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Which origins and hosts a server accepts.
#[derive(Debug, Clone)]
pub struct OriginRules {
    origins: Vec<Allowed>,
    /// Only loopback `Host`s (a server listening on loopback).
    loopback_hosts: bool,
}

/// One allowed origin: `null`, or a scheme and host with a port (`None`: any).
#[derive(Debug, Clone, PartialEq)]
enum Allowed {
    Null,
    Origin {
        scheme: String,
        host: String,
        port: Option<u16>,
    },
}

impl OriginRules {
    /// The rules for `origins` (as `access::allowed_origins` lists them: `null` or
    /// `scheme://host[:port|:*]`); `loopback_hosts` for a server on loopback.
    pub fn new(origins: &[String], loopback_hosts: bool) -> Self {
        OriginRules {
            origins: origins.iter().filter_map(|o| parse_allowed(o)).collect(),
            loopback_hosts,
        }
    }

    /// Why a request with these headers is refused, if it is.
    pub fn refusal(&self, origin: Option<&[u8]>, host: Option<&[u8]>) -> Option<&'static str> {
        if self.loopback_hosts {
            let host = host.and_then(|h| std::str::from_utf8(h).ok());
            if !host.is_some_and(is_loopback_host) {
                return Some("Forbidden: Host header is not allowed");
            }
        }
        let origin = origin?;
        let Some((scheme, host, port)) = std::str::from_utf8(origin).ok().and_then(parse_origin)
        else {
            return (!origin.eq_ignore_ascii_case(b"null")
                || !self.origins.contains(&Allowed::Null))
            .then_some("Forbidden: Origin header is not allowed");
        };
        let port = port.or_else(|| default_port(&scheme));
        let allowed = self.origins.iter().any(|a| match a {
            Allowed::Null => false,
            Allowed::Origin {
                scheme: s,
                host: h,
                port: p,
            } => *s == scheme && *h == host && p.is_none_or(|p| Some(p) == port),
        });
        (!allowed).then_some("Forbidden: Origin header is not allowed")
    }
}

/// `scheme://host[:port]` lowered, brackets of an IPv6 host removed.
fn parse_origin(value: &str) -> Option<(String, String, Option<u16>)> {
    let uri: Uri = value.trim().parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    let host = authority
        .host()
        .trim_matches(['[', ']'])
        .to_ascii_lowercase();
    Some((scheme, host, authority.port_u16()))
}

fn parse_allowed(value: &str) -> Option<Allowed> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("null") {
        return Some(Allowed::Null);
    }
    match value.strip_suffix(":*") {
        Some(base) => {
            let (scheme, host, _) = parse_origin(base)?;
            Some(Allowed::Origin {
                scheme,
                host,
                port: None,
            })
        }
        // Without a port, the scheme's own (RFC 6454 leaves it out of an origin).
        None => {
            let (scheme, host, port) = parse_origin(value)?;
            let port = port.or_else(|| default_port(&scheme));
            Some(Allowed::Origin { scheme, host, port })
        }
    }
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// `localhost`, `127.x.y.z` or `[::1]`, with any port.
fn is_loopback_host(host: &str) -> bool {
    let Ok(authority) = host.parse::<axum::http::uri::Authority>() else {
        return false;
    };
    let name = authority
        .host()
        .trim_matches(['[', ']'])
        .to_ascii_lowercase();
    name == "localhost"
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Answers 403 to a request the rules refuse; hands on the rest.
pub async fn check(State(rules): State<OriginRules>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let origin = headers.get(header::ORIGIN).map(|v| v.as_bytes());
    let host = headers.get(header::HOST).map(|v| v.as_bytes());
    // HTTP/2 carries the host in `:authority`, which the URI keeps.
    let authority = request.uri().authority().map(|a| a.as_str().as_bytes());
    match rules.refusal(origin, host.or(authority)) {
        Some(why) => {
            tracing::warn!("refused an HTTP request: {why}");
            // The body is left unread, so hyper may close the connection after the
            // answer; saying so keeps a client from sending its next request on it.
            (StatusCode::FORBIDDEN, [(header::CONNECTION, "close")], why).into_response()
        }
        None => next.run(request).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::transport::http::access::allowed_origins;

    fn loopback() -> OriginRules {
        OriginRules::new(&allowed_origins(true, &[]), true)
    }

    #[test]
    fn loopback_pages_and_clients_without_origin_pass() {
        let rules = loopback();
        assert_eq!(rules.refusal(None, Some(b"127.0.0.1:8080")), None);
        assert_eq!(rules.refusal(None, Some(b"localhost")), None);
        assert_eq!(rules.refusal(None, Some(b"[::1]:9")), None);
        assert_eq!(
            rules.refusal(Some(b"http://localhost:3000"), Some(b"127.0.0.1:1")),
            None
        );
        assert_eq!(
            rules.refusal(Some(b"https://[::1]"), Some(b"127.0.0.1:1")),
            None
        );
    }

    #[test]
    fn foreign_origins_and_hosts_are_refused() {
        let rules = loopback();
        for origin in [
            &b"http://evil.example"[..],
            b"https://evil.example:443",
            b"http://localhost.evil.example",
            b"null",
            b"not an origin",
            b"\xff",
        ] {
            assert!(
                rules.refusal(Some(origin), Some(b"127.0.0.1:1")).is_some(),
                "{origin:?}"
            );
        }
        for host in [&b"evil.example"[..], b"10.0.0.1:80", b"", b"\xff"] {
            assert!(rules.refusal(None, Some(host)).is_some(), "{host:?}");
        }
        assert!(rules.refusal(None, None).is_some(), "no Host at all");
    }

    #[test]
    fn a_public_server_checks_origins_only() {
        let extra = ["https://app.example".to_string(), "null".to_string()];
        let rules = OriginRules::new(&allowed_origins(false, &extra), false);
        assert_eq!(rules.refusal(None, Some(b"runbox.example")), None);
        assert_eq!(
            rules.refusal(Some(b"https://app.example"), Some(b"x")),
            None
        );
        assert_eq!(
            rules.refusal(Some(b"https://app.example:443"), Some(b"x")),
            None
        );
        assert_eq!(rules.refusal(Some(b"null"), Some(b"x")), None);
        assert!(rules
            .refusal(Some(b"https://app.example:8443"), Some(b"x"))
            .is_some());
        assert!(rules
            .refusal(Some(b"http://localhost:3000"), Some(b"x"))
            .is_some());
    }
}
