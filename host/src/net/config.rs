//! The network policy file (`--net-config`, docs/network.md): what programs may reach,
//! the secrets they may use there, and the per-run caps.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ipnet::IpNet;
use serde::Deserialize;

/// Why a policy file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum NetConfigError {
    #[error("cannot read the network policy {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the network policy {path} is not valid: {message}")]
    Invalid { path: PathBuf, message: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    allow: Vec<RawAllow>,
    #[serde(default)]
    secrets: BTreeMap<String, RawSecret>,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    resolve: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    tls: RawTls,
    packages: Option<RawPackages>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPackages {
    allow: Vec<String>,
    index_url: Option<String>,
    #[serde(default)]
    find_links: Vec<String>,
    pip: Option<Vec<String>>,
    max_bytes: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAllow {
    host: String,
    ports: Option<Vec<u16>>,
    methods: Option<Vec<String>>,
    schemes: Option<Vec<String>>,
    #[serde(default)]
    addresses: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSecret {
    env: String,
    hosts: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    requests: Option<u32>,
    bytes: Option<u64>,
    answer_bytes: Option<u64>,
    timeout_ms: Option<u64>,
    redirects: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTls {
    #[serde(default)]
    ca_files: Vec<PathBuf>,
}

/// A host as the policy names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// One name, lower-case, without a trailing dot.
    Name(String),
    /// `*.example.com`: any name ending in `.example.com` (not `example.com` itself).
    Below(String),
    /// An address (or a block of them) written in place of a name.
    Address(IpNet),
}

impl HostPattern {
    pub fn parse(text: &str) -> Result<HostPattern, String> {
        let t = text.trim().trim_end_matches('.').to_ascii_lowercase();
        let t = t.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = t.parse::<IpAddr>() {
            return Ok(HostPattern::Address(IpNet::from(ip)));
        }
        if let Ok(net) = t.parse::<IpNet>() {
            return Ok(HostPattern::Address(net));
        }
        let (below, name) = match t.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, t),
        };
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
            return Err(format!(
                "`{text}` is not a host name, a pattern (*.example.com) or an address"
            ));
        }
        Ok(if below {
            HostPattern::Below(name.to_string())
        } else {
            HostPattern::Name(name.to_string())
        })
    }

    /// Whether this names `host` (a lower-case name or an address's text).
    pub fn matches(&self, host: &str) -> bool {
        match self {
            HostPattern::Name(n) => n == host,
            HostPattern::Below(n) => host.len() > n.len() + 1 && host.ends_with(&format!(".{n}")),
            HostPattern::Address(net) => host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .is_ok_and(|ip| net.contains(&ip)),
        }
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostPattern::Name(n) => write!(f, "{n}"),
            HostPattern::Below(n) => write!(f, "*.{n}"),
            HostPattern::Address(net) if net.prefix_len() == net.max_prefix_len() => {
                write!(f, "{}", net.addr())
            }
            HostPattern::Address(net) => write!(f, "{net}"),
        }
    }
}

/// One `[[allow]]`: a destination programs may reach.
#[derive(Debug, Clone)]
pub struct Allow {
    pub host: HostPattern,
    pub ports: Vec<u16>,
    /// Upper-case; empty: every method.
    pub methods: Vec<String>,
    pub schemes: Vec<String>,
    /// Addresses that are not public which this destination may resolve to.
    pub addresses: Vec<IpNet>,
}

/// One `[secrets.NAME]`.
#[derive(Debug, Clone)]
pub struct Secret {
    pub name: String,
    /// The variable of runbox's environment it is read from (at start).
    pub env: String,
    pub hosts: Vec<HostPattern>,
}

/// Per-run caps (`[limits]`).
#[derive(Debug, Clone)]
pub struct NetLimits {
    pub requests: u32,
    pub bytes: u64,
    pub answer_bytes: u64,
    pub timeout: Duration,
    pub redirects: u32,
}

impl Default for NetLimits {
    fn default() -> Self {
        NetLimits {
            requests: 50,
            bytes: 16 << 20,
            answer_bytes: 8 << 20,
            timeout: Duration::from_secs(30),
            redirects: 5,
        }
    }
}

/// A policy file, checked.
#[derive(Debug, Clone)]
pub struct NetConfig {
    pub path: PathBuf,
    pub allow: Vec<Allow>,
    pub secrets: Vec<Secret>,
    pub limits: NetLimits,
    /// Names answered from here instead of DNS.
    pub resolve: BTreeMap<String, Vec<IpAddr>>,
    pub ca_files: Vec<PathBuf>,
    /// Packages at run time (`[packages]`), when the policy allows some.
    pub packages: Option<super::packages::PackagesConfig>,
}

/// The largest request a program may write to `/net/fetch`.
pub const MAX_REQUEST_BYTES: usize = 16 << 20;

impl NetConfig {
    pub fn load(path: &Path) -> Result<NetConfig, NetConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| NetConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        NetConfig::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<NetConfig, NetConfigError> {
        let invalid = |message: String| NetConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let raw: RawConfig = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let mut allow = Vec::new();
        for (i, a) in raw.allow.into_iter().enumerate() {
            let at = |m: String| invalid(format!("[[allow]] number {}: {m}", i + 1));
            let host = HostPattern::parse(&a.host).map_err(at)?;
            let schemes = match a.schemes {
                None => vec!["http".to_string(), "https".to_string()],
                Some(s) => s.into_iter().map(|s| s.to_ascii_lowercase()).collect(),
            };
            if let Some(bad) = schemes.iter().find(|s| *s != "http" && *s != "https") {
                return Err(at(format!(
                    "scheme `{bad}`: only http and https are served"
                )));
            }
            let ports = a.ports.unwrap_or_else(|| vec![80, 443]);
            if ports.is_empty() || ports.contains(&0) {
                return Err(at("`ports` must list ports from 1 to 65535".into()));
            }
            let methods: Vec<String> = a
                .methods
                .unwrap_or_default()
                .into_iter()
                .map(|m| m.to_ascii_uppercase())
                .collect();
            if let Some(bad) = methods
                .iter()
                .find(|m| http::Method::from_bytes(m.as_bytes()).is_err())
            {
                return Err(at(format!("`{bad}` is not an HTTP method")));
            }
            let mut addresses = Vec::new();
            for text in &a.addresses {
                addresses.push(parse_net(text).map_err(at)?);
            }
            allow.push(Allow {
                host,
                ports,
                methods,
                schemes,
                addresses,
            });
        }
        let mut secrets = Vec::new();
        for (name, s) in raw.secrets {
            if !is_env_name(&name) {
                return Err(invalid(format!(
                    "secret `{name}`: a secret's name is an environment variable's (letters, digits, _)"
                )));
            }
            if s.hosts.is_empty() {
                return Err(invalid(format!(
                    "secret `{name}`: `hosts` must name the hosts it may be sent to"
                )));
            }
            let hosts = s
                .hosts
                .iter()
                .map(|h| HostPattern::parse(h))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|m| invalid(format!("secret `{name}`: {m}")))?;
            secrets.push(Secret {
                name,
                env: s.env,
                hosts,
            });
        }
        let d = NetLimits::default();
        let l = raw.limits;
        let limits = NetLimits {
            requests: l.requests.unwrap_or(d.requests),
            bytes: l.bytes.unwrap_or(d.bytes),
            answer_bytes: l.answer_bytes.unwrap_or(d.answer_bytes),
            timeout: l.timeout_ms.map_or(d.timeout, Duration::from_millis),
            redirects: l.redirects.unwrap_or(d.redirects),
        };
        if limits.timeout.is_zero() {
            return Err(invalid("[limits] timeout_ms must be above 0".into()));
        }
        let mut resolve = BTreeMap::new();
        for (name, addrs) in raw.resolve {
            let key = name.trim_end_matches('.').to_ascii_lowercase();
            let ips = addrs
                .iter()
                .map(|a| {
                    a.parse::<IpAddr>().map_err(|_| {
                        invalid(format!("[resolve] `{name}`: `{a}` is not an address"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            if ips.is_empty() {
                return Err(invalid(format!("[resolve] `{name}` lists no address")));
            }
            resolve.insert(key, ips);
        }
        let base = path.parent().unwrap_or(Path::new("."));
        let ca_files = raw
            .tls
            .ca_files
            .into_iter()
            .map(|p| if p.is_absolute() { p } else { base.join(p) })
            .collect();
        let packages = match raw.packages {
            None => None,
            Some(p) => {
                if p.allow.is_empty() {
                    return Err(invalid(
                        "[packages] `allow` must name packages (or \"*\")".into(),
                    ));
                }
                if p.pip.as_ref().is_some_and(Vec::is_empty) {
                    return Err(invalid("[packages] `pip` must name a command".into()));
                }
                Some(super::packages::PackagesConfig {
                    allow: p
                        .allow
                        .iter()
                        .map(|a| {
                            if a == "*" {
                                a.clone()
                            } else {
                                super::packages::normalise(a)
                            }
                        })
                        .collect(),
                    index_url: p.index_url,
                    find_links: p.find_links,
                    pip: p.pip.unwrap_or_else(super::packages::default_pip),
                    max_bytes: p.max_bytes.unwrap_or(64 << 20),
                })
            }
        };
        Ok(NetConfig {
            path: path.to_path_buf(),
            allow,
            secrets,
            limits,
            resolve,
            ca_files,
            packages,
        })
    }

    /// The policy in one line, for `list_runtimes` and the run_code description.
    pub fn summary(&self) -> String {
        let packages = match &self.packages {
            Some(p) if p.allow.iter().any(|a| a == "*") => {
                "; `pip install` of any pure-Python package".to_string()
            }
            Some(p) => format!("; `pip install` of {}", p.allow.join(", ")),
            None => String::new(),
        };
        format!("{}{packages}", self.destinations())
    }

    fn destinations(&self) -> String {
        if self.allow.is_empty() {
            return "no destination".into();
        }
        let each: Vec<String> = self
            .allow
            .iter()
            .map(|a| {
                let ports: Vec<String> = a.ports.iter().map(u16::to_string).collect();
                let methods = if a.methods.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", a.methods.join(", "))
                };
                format!(
                    "{}://{}:{}{methods}",
                    a.schemes.join("+"),
                    a.host,
                    ports.join("|")
                )
            })
            .collect();
        each.join(", ")
    }
}

fn parse_net(text: &str) -> Result<IpNet, String> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok(IpNet::from(ip));
    }
    text.parse::<IpNet>()
        .map_err(|_| format!("`{text}` is not an address or a CIDR block"))
}

fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The addresses to connect to for `host:port` from `[resolve]`, if it names `host`.
pub fn resolved_here(config: &NetConfig, host: &str, port: u16) -> Option<Vec<SocketAddr>> {
    config
        .resolve
        .get(host)
        .map(|ips| ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<NetConfig, NetConfigError> {
        NetConfig::parse(Path::new("/etc/runbox/net.toml"), text)
    }

    #[test]
    fn the_documented_example_parses() {
        let c = parse(
            r#"
            [[allow]]
            host = "api.example.com"
            ports = [443]
            methods = ["get", "POST"]
            [[allow]]
            host = "*.data.example.org"
            [secrets.API_TOKEN]
            env = "API_TOKEN"
            hosts = ["api.example.com"]
            [limits]
            requests = 3
            [resolve]
            "api.example.com" = ["127.0.0.2"]
            "#,
        )
        .unwrap();
        assert_eq!(c.allow.len(), 2);
        assert_eq!(c.allow[0].methods, ["GET", "POST"]);
        assert_eq!(c.allow[1].ports, [80, 443]);
        assert_eq!(c.limits.requests, 3);
        assert_eq!(
            c.secrets[0].hosts,
            [HostPattern::Name("api.example.com".into())]
        );
        assert_eq!(
            c.summary(),
            "http+https://api.example.com:443 (GET, POST), http+https://*.data.example.org:80|443"
        );
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        for (text, needle) in [
            ("[[allow]]\nhost = \"a b\"", "not a host name"),
            (
                "[[allow]]\nhost = \"a.com\"\nschemes = [\"ftp\"]",
                "only http and https",
            ),
            ("[[allow]]\nhost = \"a.com\"\nports = [0]", "ports"),
            (
                "[[allow]]\nhost = \"a.com\"\nmethods = [\"G T\"]",
                "not an HTTP method",
            ),
            ("[secrets.X]\nenv = \"X\"\nhosts = []", "hosts"),
            (
                "[secrets.\"A-B\"]\nenv = \"X\"\nhosts = [\"a\"]",
                "environment variable",
            ),
            ("[resolve]\n\"a\" = [\"nope\"]", "not an address"),
            ("[allowed]\nhost = 1", "unknown field"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn patterns_match_names_below_them_and_addresses_in_their_block() {
        let below = HostPattern::parse("*.Example.com.").unwrap();
        assert!(below.matches("a.example.com") && below.matches("x.y.example.com"));
        assert!(!below.matches("example.com") && !below.matches("badexample.com"));
        let net = HostPattern::parse("10.0.0.0/8").unwrap();
        assert!(net.matches("10.1.2.3") && !net.matches("11.0.0.1"));
        let v6 = HostPattern::parse("[::1]").unwrap();
        assert!(v6.matches("[::1]") && v6.to_string() == "::1");
    }
}
