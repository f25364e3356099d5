//! The checks every request and every address passes before the host connects: the
//! destination against `[[allow]]`, then each resolved address against the blocks that
//! are not public unless the matching rule lists them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::config::{Allow, NetConfig};

/// A request's destination, as the host will connect to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub scheme: String,
    /// Lower-case name, or an address's text (IPv6 without brackets).
    pub host: String,
    pub port: u16,
}

impl Destination {
    pub fn of(url: &reqwest::Url) -> Result<Destination, String> {
        let scheme = url.scheme().to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(format!(
                "`{scheme}:` URLs are not served: only http and https"
            ));
        }
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.trim_end_matches('.').to_ascii_lowercase(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err("the URL has no host".into()),
        };
        let port = url.port_or_known_default().ok_or("the URL has no port")?;
        Ok(Destination { scheme, host, port })
    }

    /// The address written in the URL in place of a name, if it is one.
    pub fn literal_address(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }
}

impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}://[{}]:{}", self.scheme, self.host, self.port)
        } else {
            write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
        }
    }
}

/// The rule allowing `method` to `dest`, or why none does (naming the policy).
pub fn allowed<'c>(
    config: &'c NetConfig,
    dest: &Destination,
    method: &str,
) -> Result<&'c Allow, String> {
    let by_host: Vec<&Allow> = config
        .allow
        .iter()
        .filter(|a| a.host.matches(&dest.host))
        .collect();
    let policy = config.path.display();
    if by_host.is_empty() {
        return Err(format!(
            "{} is not in the network policy ({policy}); reachable: {}",
            dest.host,
            config.summary()
        ));
    }
    let fits = |a: &&&Allow| a.schemes.contains(&dest.scheme) && a.ports.contains(&dest.port);
    let Some(rule) = by_host.iter().find(fits) else {
        return Err(format!(
            "{dest} is not allowed by the network policy ({policy}): {} is allowed as {}",
            dest.host,
            config.summary()
        ));
    };
    if !rule.methods.is_empty() && !rule.methods.iter().any(|m| m == method) {
        return Err(format!(
            "{method} to {dest} is not allowed by the network policy ({policy}): only {}",
            rule.methods.join(", ")
        ));
    }
    Ok(rule)
}

/// Why `ip` may not be connected to under `rule`, if it may not: an address that is not
/// public must be listed by the rule (its `addresses`, or the rule's host itself).
pub fn address_refused(config: &NetConfig, rule: &Allow, host: &str, ip: IpAddr) -> Option<String> {
    let ip = canonical(ip);
    let kind = special_kind(ip)?;
    let named = rule.addresses.iter().any(|net| net.contains(&ip))
        || matches!(&rule.host, super::config::HostPattern::Address(net) if net.contains(&ip));
    if named {
        return None;
    }
    // The address itself is not told: it would map the operator's network for the program.
    Some(format!(
        "{host} resolves to a {kind} address, which the network policy ({}) does not name \
         (the operator lists such addresses in that [[allow]]'s `addresses`)",
        config.path.display()
    ))
}

/// An IPv4 address carried in IPv6 (`::ffff:10.0.0.1`) is checked as the IPv4 it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// What kind of address that is not public `ip` is, if it is one.
pub fn special_kind(ip: IpAddr) -> Option<&'static str> {
    match canonical(ip) {
        IpAddr::V4(v4) => v4_kind(v4),
        IpAddr::V6(v6) => v6_kind(v6),
    }
}

fn v4_kind(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    Some(if ip.is_loopback() {
        "loopback"
    } else if ip.is_unspecified() || o[0] == 0 {
        "unspecified"
    } else if o == [169, 254, 169, 254] {
        "cloud metadata"
    } else if ip.is_link_local() {
        "link-local"
    } else if ip.is_private() {
        "private"
    } else if o[0] == 100 && (64..128).contains(&o[1]) {
        "shared (carrier-grade NAT)"
    } else if ip.is_multicast() || ip.is_broadcast() || o[0] >= 240 {
        "multicast or reserved"
    } else if o[0] == 192 && o[1] == 0 && o[2] == 0 {
        "IETF protocol"
    } else if (o[0] == 192 && o[1] == 0 && o[2] == 2)
        || (o[0] == 198 && o[1] == 51 && o[2] == 100)
        || (o[0] == 203 && o[1] == 0 && o[2] == 113)
        || (o[0] == 198 && (o[1] == 18 || o[1] == 19))
    {
        "documentation or benchmarking"
    } else {
        return None;
    })
}

fn v6_kind(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    Some(if ip.is_loopback() {
        "loopback"
    } else if ip.is_unspecified() {
        "unspecified"
    } else if s[0] & 0xfe00 == 0xfc00 {
        "private (unique local)"
    } else if s[0] & 0xffc0 == 0xfec0 {
        "site-local"
    } else if s[..6] == [0; 6] || (s[..4] == [0; 4] && s[4] == 0xffff) || s[..4] == [0x100, 0, 0, 0]
    {
        // IPv4-compatible (::a.b.c.d), IPv4-translated and discard-only blocks.
        "IPv4-embedding or discard"
    } else if s[0] & 0xffc0 == 0xfe80 {
        "link-local"
    } else if ip.is_multicast() {
        "multicast or reserved"
    } else if s[0] == 0x64 && s[1] == 0xff9b {
        // NAT64 reaches IPv4 through a translator: as unknown as the IPv4 behind it.
        "NAT64"
    } else if s[0] == 0x2002 || (s[0] == 0x2001 && s[1] == 0) {
        "6to4 or Teredo tunnel"
    } else if s[0] == 0x2001 && s[1] == 0xdb8 {
        "documentation"
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn config(text: &str) -> NetConfig {
        NetConfig::parse(Path::new("/p/net.toml"), text).unwrap()
    }

    fn dest(url: &str) -> Destination {
        Destination::of(&url.parse().unwrap()).unwrap()
    }

    #[test]
    fn only_named_destinations_schemes_ports_and_methods_pass() {
        let c = config(
            "[[allow]]\nhost = \"api.example.com\"\nports = [443]\nmethods = [\"GET\"]\nschemes = [\"https\"]",
        );
        assert!(allowed(&c, &dest("https://API.example.com./x"), "GET").is_ok());
        let refused = |url: &str, method: &str| allowed(&c, &dest(url), method).unwrap_err();
        assert!(
            refused("https://evil.com/", "GET").contains("not in the network policy (/p/net.toml)")
        );
        assert!(refused("http://api.example.com/", "GET").contains("not allowed"));
        assert!(refused("https://api.example.com:8443/", "GET").contains("not allowed"));
        assert!(refused("https://api.example.com/", "POST").contains("only GET"));
        assert!(Destination::of(&"ftp://api.example.com/".parse().unwrap()).is_err());
    }

    #[test]
    fn addresses_that_are_not_public_need_naming() {
        let c = config(
            "[[allow]]\nhost = \"a.test\"\n[[allow]]\nhost = \"b.test\"\naddresses = [\"127.0.0.0/8\"]\n[[allow]]\nhost = \"10.1.2.3\"",
        );
        let check = |i: usize, host: &str, ip: &str| {
            address_refused(&c, &c.allow[i], host, ip.parse().unwrap())
        };
        for ip in [
            "127.0.0.1",
            "10.0.0.1",
            "172.16.3.4",
            "192.168.1.1",
            "169.254.169.254",
            "169.254.1.1",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "::7f00:1",
            "::ffff:0:7f00:1",
            "fec0::1",
            "100::1",
        ] {
            assert!(check(0, "a.test", ip).is_some(), "{ip} passed");
        }
        assert!(check(0, "a.test", "169.254.169.254")
            .unwrap()
            .contains("cloud metadata"));
        assert!(check(0, "a.test", "93.184.216.34").is_none());
        assert!(check(0, "a.test", "2606:2800:220:1::1").is_none());
        assert!(check(1, "b.test", "127.0.0.2").is_none());
        assert!(check(1, "b.test", "10.0.0.1").is_some());
        assert!(check(2, "10.1.2.3", "10.1.2.3").is_none());
    }
}
