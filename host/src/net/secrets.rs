//! Secrets programs use without seeing them: a placeholder in the sandbox, the value put
//! in only on the wire to the secret's own hosts, and taken out of what comes back.

use super::config::{HostPattern, NetConfig};

/// One secret with its value, read from runbox's environment at start.
pub struct LoadedSecret {
    pub name: String,
    pub placeholder: String,
    value: Vec<u8>,
    hosts: Vec<HostPattern>,
}

impl std::fmt::Debug for LoadedSecret {
    // The value is never printed, not even in a debug log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedSecret")
            .field("name", &self.name)
            .field("hosts", &self.hosts)
            .finish_non_exhaustive()
    }
}

/// Why a secret cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("the network policy's secret `{name}` reads the environment variable `{env}`, which is not set (or not UTF-8)")]
    Unset { name: String, env: String },
    #[error("the network policy's secret `{name}` is empty (environment variable `{env}`)")]
    Empty { name: String, env: String },
}

/// What a program finds in place of secret `name`.
pub fn placeholder(name: &str) -> String {
    format!("__RUNBOX_SECRET_{name}__")
}

/// The secrets of `config`, their values read from `env`.
pub fn load(
    config: &NetConfig,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<LoadedSecret>, SecretError> {
    config
        .secrets
        .iter()
        .map(|s| {
            let value = env(&s.env).ok_or_else(|| SecretError::Unset {
                name: s.name.clone(),
                env: s.env.clone(),
            })?;
            if value.is_empty() {
                return Err(SecretError::Empty {
                    name: s.name.clone(),
                    env: s.env.clone(),
                });
            }
            Ok(LoadedSecret {
                name: s.name.clone(),
                placeholder: placeholder(&s.name),
                value: value.into_bytes(),
                hosts: s.hosts.clone(),
            })
        })
        .collect()
}

impl LoadedSecret {
    pub fn may_go_to(&self, host: &str) -> bool {
        self.hosts.iter().any(|h| h.matches(host))
    }

    pub fn value_len(&self) -> usize {
        self.value.len()
    }
}

/// The secrets whose placeholders appear in `parts` but which may not be sent to
/// `host`: a request carrying any of them is refused.
pub fn misplaced<'s>(secrets: &'s [LoadedSecret], host: &str, parts: &[&[u8]]) -> Vec<&'s str> {
    secrets
        .iter()
        .filter(|s| !s.may_go_to(host))
        .filter(|s| parts.iter().any(|p| contains(p, s.placeholder.as_bytes())))
        .map(|s| s.name.as_str())
        .collect()
}

/// `bytes` with the placeholders of the secrets that may go to `host` replaced by their
/// values.
pub fn put_in(secrets: &[LoadedSecret], host: &str, bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for s in secrets.iter().filter(|s| s.may_go_to(host)) {
        out = replace(&out, s.placeholder.as_bytes(), &s.value);
    }
    out
}

/// A header's value as the secrets see it: Basic credentials (`Basic BASE64`, which
/// `curl -u` and `requests`' `auth=` make) decoded, so that a placeholder inside them is
/// found.
pub fn header_text(value: &[u8]) -> Vec<u8> {
    match basic_credentials(value) {
        Some(decoded) => decoded,
        None => value.to_vec(),
    }
}

/// [`put_in`] for a header's value, inside Basic credentials too.
pub fn put_in_header(secrets: &[LoadedSecret], host: &str, value: &[u8]) -> Vec<u8> {
    use base64::Engine as _;
    match basic_credentials(value) {
        Some(decoded) => {
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(put_in(secrets, host, &decoded));
            format!("Basic {encoded}").into_bytes()
        }
        None => put_in(secrets, host, value),
    }
}

fn basic_credentials(value: &[u8]) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let text = std::str::from_utf8(value).ok()?.trim();
    let (scheme, rest) = text.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()
}

/// `bytes` with every secret's value replaced by its placeholder.
pub fn scrub(secrets: &[LoadedSecret], bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for s in secrets {
        out = replace(&out, &s.value, s.placeholder.as_bytes());
    }
    out
}

/// [`scrub`] for text.
pub fn scrub_text(secrets: &[LoadedSecret], text: &str) -> String {
    if secrets.is_empty() {
        return text.to_string();
    }
    String::from_utf8_lossy(&scrub(secrets, text.as_bytes())).into_owned()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && memchr::memmem::find(haystack, needle).is_some()
}

/// `haystack` with every `needle` replaced by `with` (linear in the haystack's length).
pub fn replace(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return haystack.to_vec();
    }
    let mut out = Vec::with_capacity(haystack.len());
    let mut last = 0;
    for at in memchr::memmem::find_iter(haystack, needle) {
        if at < last {
            continue;
        }
        out.extend_from_slice(&haystack[last..at]);
        out.extend_from_slice(with);
        last = at + needle.len();
    }
    out.extend_from_slice(&haystack[last..]);
    out
}

/// `url` with the placeholders of the secrets that may go to `host` replaced by their
/// values, percent-encoded (a value's `/`, `?` or `@` cannot move the URL's parts).
pub fn put_in_url(secrets: &[LoadedSecret], host: &str, url: &str) -> String {
    let mut out = url.as_bytes().to_vec();
    for s in secrets.iter().filter(|s| s.may_go_to(host)) {
        let encoded: String =
            percent_encoding::percent_encode(&s.value, percent_encoding::NON_ALPHANUMERIC)
                .collect();
        out = replace(&out, s.placeholder.as_bytes(), encoded.as_bytes());
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Drops from the end of a cut answer the start of any secret's value: cut short, it
/// would pass [`scrub`].
pub fn trim_partial_values(secrets: &[LoadedSecret], body: &mut Vec<u8>) {
    for s in secrets {
        let longest = (1..s.value.len())
            .rev()
            .find(|&n| body.len() >= n && body.ends_with(&s.value[..n]));
        if let Some(n) = longest {
            body.truncate(body.len() - n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn secrets() -> Vec<LoadedSecret> {
        let config = NetConfig::parse(
            Path::new("/p"),
            "[secrets.TOKEN]\nenv = \"T\"\nhosts = [\"api.test\"]\n[secrets.OTHER]\nenv = \"O\"\nhosts = [\"*.other.test\"]",
        )
        .unwrap();
        load(&config, |v| Some(format!("value-of-{v}"))).unwrap()
    }

    #[test]
    fn placeholders_become_values_only_for_their_hosts() {
        let s = secrets();
        let sent = put_in(
            &s,
            "api.test",
            b"Bearer __RUNBOX_SECRET_TOKEN__ __RUNBOX_SECRET_OTHER__",
        );
        assert_eq!(sent, b"Bearer value-of-T __RUNBOX_SECRET_OTHER__");
        assert_eq!(
            misplaced(&s, "api.test", &[b"x __RUNBOX_SECRET_OTHER__"]),
            ["OTHER"]
        );
        assert!(misplaced(&s, "a.other.test", &[b"__RUNBOX_SECRET_OTHER__"]).is_empty());
        assert!(misplaced(&s, "api.test", &[b"no placeholder"]).is_empty());
    }

    #[test]
    fn placeholders_inside_basic_credentials_are_found_and_put_in() {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let s = secrets();
        let header = format!("Basic {}", b64.encode("me:__RUNBOX_SECRET_TOKEN__"));
        assert_eq!(
            misplaced(&s, "elsewhere.test", &[&header_text(header.as_bytes())]),
            ["TOKEN"]
        );
        let sent = put_in_header(&s, "api.test", header.as_bytes());
        assert_eq!(
            sent,
            format!("Basic {}", b64.encode("me:value-of-T")).into_bytes()
        );
        assert_eq!(put_in_header(&s, "api.test", b"Bearer x"), b"Bearer x");
    }

    #[test]
    fn a_value_in_a_url_is_percent_encoded_and_a_cut_value_is_dropped() {
        let config = NetConfig::parse(
            Path::new("/p"),
            "[secrets.T]\nenv = \"T\"\nhosts = [\"a.test\"]",
        )
        .unwrap();
        let s = load(&config, |_| Some("x/y@z?".into())).unwrap();
        assert_eq!(
            put_in_url(&s, "a.test", "http://a.test/?k=__RUNBOX_SECRET_T__"),
            "http://a.test/?k=x%2Fy%40z%3F"
        );
        let mut body = b"echo x/y@".to_vec();
        trim_partial_values(&s, &mut body);
        assert_eq!(body, b"echo ");
        assert_eq!(replace(b"aaaa", b"aa", b"b"), b"bb");
    }

    #[test]
    fn values_are_scrubbed_from_answers() {
        let s = secrets();
        assert_eq!(
            scrub(&s, b"echo: value-of-T, value-of-O!"),
            b"echo: __RUNBOX_SECRET_TOKEN__, __RUNBOX_SECRET_OTHER__!"
        );
        assert!(!format!("{:?}", s[0]).contains("value-of"));
    }

    #[test]
    fn a_missing_or_empty_value_is_an_error_at_start() {
        let config =
            NetConfig::parse(Path::new("/p"), "[secrets.A]\nenv = \"A\"\nhosts = [\"a\"]").unwrap();
        assert!(load(&config, |_| None)
            .unwrap_err()
            .to_string()
            .contains("not set"));
        assert!(load(&config, |_| Some(String::new()))
            .unwrap_err()
            .to_string()
            .contains("empty"));
    }
}
