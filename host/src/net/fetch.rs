//! The host's side of one request: checked against the policy, resolved and checked
//! again address by address, sent with the secrets put in, redirects followed one
//! checked hop at a time, the answer read up to its cap and the secrets scrubbed out.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use super::config::{resolved_here, NetConfig};
use super::policy::{address_refused, allowed, Destination};
use super::refusal::Refusal;
use super::secrets::{
    header_text, misplaced, put_in, put_in_header, put_in_url, replace, scrub, scrub_text,
    trim_partial_values, LoadedSecret,
};
use super::wire::{NetAnswer, NetRequest};
use crate::budget::memory::{MemoryBudget, Reservation};
use crate::upstream::answer::Failure;

/// Headers that do not follow a redirect to another host.
const CREDENTIALS: [&str; 3] = ["authorization", "cookie", "proxy-authorization"];

/// What one request may still receive: the run's bytes left, and its memory.
pub struct Allowance<'a> {
    pub bytes_left: u64,
    pub memory: &'a MemoryBudget,
}

/// An answer and the bytes of body it received (for the run's byte cap).
pub struct Fetched {
    pub answer: NetAnswer,
    pub received: u64,
    pub _charge: Option<Reservation>,
}

/// Makes one request of a program (its redirects included).
pub async fn fetch(
    config: &NetConfig,
    secrets: &[LoadedSecret],
    tls: &Arc<rustls::ClientConfig>,
    request: NetRequest,
    allowance: Allowance<'_>,
) -> Result<Fetched, Refusal> {
    let NetRequest {
        mut url,
        mut method,
        mut headers,
        mut body,
        follow_redirects,
    } = request;
    without_trailing_dot(&mut url);
    let first = Destination::of(&url).map_err(|m| Refusal::new(Failure::NotAllowed, m))?;
    let mut redirects = 0u32;
    let mut received = 0u64;
    loop {
        let dest = Destination::of(&url)
            .map_err(|m| Refusal::new(Failure::NotAllowed, scrub_text(secrets, &m)))?;
        let rule = allowed(config, &dest, method.as_str())
            .map_err(|m| Refusal::new(Failure::NotAllowed, m))?;
        // Credentials follow a redirect only to the same origin (scheme, host and port).
        if dest != first {
            headers.retain(|(n, _)| !CREDENTIALS.contains(&n.to_ascii_lowercase().as_str()));
        }
        check_placeholders(config, secrets, &dest, &url, &headers, &body)?;
        let addrs = addresses(config, rule, &dest).await?;
        let hop = Hop {
            dest: &dest,
            addrs: &addrs,
            method: &method,
            url: &url,
            headers: &headers,
            body: &body,
            follow: follow_redirects && redirects < config.limits.redirects,
        };
        let left = Allowance {
            bytes_left: allowance.bytes_left.saturating_sub(received),
            memory: allowance.memory,
        };
        let answer = send_once(config, secrets, tls, hop, &left).await?;
        received += answer.received;
        let location = answer
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("location"))
            .map(|(_, v)| v.clone());
        let status = answer.answer.status;
        match location {
            Some(location) if is_redirect(status) && follow_redirects => {
                if redirects >= config.limits.redirects {
                    return Err(Refusal::new(
                        Failure::Limit,
                        format!(
                            "more than {} redirects (the network policy's [limits] redirects)",
                            config.limits.redirects
                        ),
                    ));
                }
                redirects += 1;
                url = url.join(&location).map_err(|e| {
                    Refusal::new(
                        Failure::Unavailable,
                        format!("the redirect to `{location}` is not a URL: {e}"),
                    )
                })?;
                without_trailing_dot(&mut url);
                if status == 303 || (matches!(status, 301 | 302) && method == http::Method::POST) {
                    method = http::Method::GET;
                    body.clear();
                    headers.retain(|(n, _)| !n.eq_ignore_ascii_case("content-type"));
                }
            }
            _ => {
                let mut fetched = answer.answer;
                fetched.redirected = redirects > 0;
                return Ok(Fetched {
                    received,
                    answer: fetched,
                    _charge: answer.charge,
                });
            }
        }
    }
}

/// `api.example.com.` is `api.example.com`: the name the policy checked is the one the
/// client is pinned for.
fn without_trailing_dot(url: &mut url::Url) {
    if let Some(url::Host::Domain(d)) = url.host() {
        if d.ends_with('.') {
            let trimmed = d.trim_end_matches('.').to_string();
            let _ = url.set_host(Some(&trimmed));
        }
    }
}

fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// Refuses a request carrying a secret's placeholder to a host the secret may not go to,
/// or in the URL's user-info (which the client turns into Basic credentials of its own,
/// out of the scrubbing's sight).
fn check_placeholders(
    config: &NetConfig,
    secrets: &[LoadedSecret],
    dest: &Destination,
    url: &url::Url,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<(), Refusal> {
    let userinfo = format!("{}:{}", url.username(), url.password().unwrap_or(""));
    if !misplaced(secrets, "", &[userinfo.as_bytes()]).is_empty() {
        return Err(Refusal::new(
            Failure::NotAllowed,
            "a secret's placeholder cannot be in a URL's user-info: send it in a header \
             (Authorization: Basic, or curl -u, or requests' auth=)",
        ));
    }
    let header_text: Vec<u8> = headers
        .iter()
        .flat_map(|(n, v)| [n.as_bytes(), b":", &header_text(v.as_bytes()), b"\n"].concat())
        .collect();
    let wrong = misplaced(
        secrets,
        &dest.host,
        &[url.as_str().as_bytes(), &header_text, body],
    );
    if wrong.is_empty() {
        return Ok(());
    }
    Err(Refusal::new(
        Failure::NotAllowed,
        format!(
            "the request to {} carries the placeholder of secret {}, which the network policy ({}) lets go only to its own hosts",
            dest.host,
            wrong.join(", "),
            config.path.display()
        ),
    ))
}

/// The addresses `dest` may be reached at: from `[resolve]`, the URL itself, or DNS, each
/// checked against the rule; refused if any is refused (a name whose answers mix a public
/// address with an internal one is not trusted with either).
async fn addresses(
    config: &NetConfig,
    rule: &super::config::Allow,
    dest: &Destination,
) -> Result<Vec<SocketAddr>, Refusal> {
    let addrs: Vec<SocketAddr> = if let Some(ip) = dest.literal_address() {
        vec![SocketAddr::new(ip, dest.port)]
    } else if let Some(fixed) = resolved_here(config, &dest.host, dest.port) {
        fixed
    } else {
        tokio::net::lookup_host((dest.host.as_str(), dest.port))
            .await
            .map_err(|e| {
                Refusal::new(
                    Failure::Unavailable,
                    format!("cannot resolve {}: {e}", dest.host),
                )
            })?
            .collect()
    };
    if addrs.is_empty() {
        return Err(Refusal::new(
            Failure::Unavailable,
            format!("{} has no address", dest.host),
        ));
    }
    for a in &addrs {
        let ip: IpAddr = a.ip();
        if let Some(why) = address_refused(config, rule, &dest.host, ip) {
            return Err(Refusal::new(Failure::NotAllowed, why));
        }
    }
    Ok(addrs)
}

struct OneAnswer {
    answer: NetAnswer,
    headers: Vec<(String, String)>,
    received: u64,
    charge: Option<Reservation>,
}

/// One hop of a request, checked.
struct Hop<'a> {
    dest: &'a Destination,
    addrs: &'a [SocketAddr],
    method: &'a http::Method,
    url: &'a url::Url,
    headers: &'a [(String, String)],
    body: &'a [u8],
    /// A redirect answer will be followed: its body is not read.
    follow: bool,
}

/// Headers the host sets itself on a request carrying a secret: an encoded or partial
/// answer could carry the value past the scrubbing.
const ENCODINGS: [&str; 2] = ["accept-encoding", "range"];

/// One hop: a client pinned to the checked addresses (any other name fails to resolve).
async fn send_once(
    config: &NetConfig,
    secrets: &[LoadedSecret],
    tls: &Arc<rustls::ClientConfig>,
    hop: Hop<'_>,
    allowance: &Allowance<'_>,
) -> Result<OneAnswer, Refusal> {
    let dest = hop.dest;
    let unavailable = |e: reqwest::Error| {
        if e.is_timeout() {
            let message = format!(
                "{dest} did not answer within {} ms (the network policy's [limits] timeout_ms)",
                config.limits.timeout.as_millis()
            );
            return Refusal::new(Failure::Timeout, message);
        }
        let message = format!("{}: {}", dest, error_chain(&e.without_url()));
        Refusal::new(Failure::Unavailable, scrub_text(secrets, &message))
    };
    crate::tls::crypto_ready();
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(Arc::new(NoDns))
        .resolve_to_addrs(&dest.host, hop.addrs)
        .tls_backend_preconfigured((**tls).clone())
        .timeout(config.limits.timeout)
        .pool_max_idle_per_host(0)
        .build()
        .map_err(unavailable)?;
    let sent_url = put_in_url(secrets, &dest.host, hop.url.as_str());
    // What a secret's value holds must not move the request elsewhere.
    let same_place = url::Url::parse(&sent_url)
        .ok()
        .and_then(|u| Destination::of(&u).ok())
        .is_some_and(|d| d == *dest);
    if !same_place {
        return Err(Refusal::new(
            Failure::NotAllowed,
            format!("a secret put into the URL would change where the request goes ({dest})"),
        ));
    }
    let mut carries_secret = sent_url != hop.url.as_str();
    // Values sent in another form than the program wrote them (Basic credentials carry a
    // secret base64-encoded): scrubbed from the answer back to the program's form.
    let mut sent_forms: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut sent_headers = Vec::with_capacity(hop.headers.len());
    for (name, value) in hop.headers {
        let sent = put_in_header(secrets, &dest.host, value.as_bytes());
        if sent != value.as_bytes() {
            carries_secret = true;
            sent_forms.push((sent.clone(), value.as_bytes().to_vec()));
        }
        sent_headers.push((name.as_str(), sent));
    }
    let sent_body = put_in(secrets, &dest.host, hop.body);
    carries_secret |= sent_body != hop.body;
    let mut builder = client.request(hop.method.clone(), &sent_url);
    for (name, value) in sent_headers {
        if carries_secret && ENCODINGS.contains(&name.to_ascii_lowercase().as_str()) {
            continue;
        }
        builder = builder.header(name, value);
    }
    if carries_secret {
        builder = builder.header("accept-encoding", "identity");
    }
    if !sent_body.is_empty() {
        builder = builder.body(sent_body);
    }
    let scrub = |bytes: &[u8]| {
        let mut out = scrub(secrets, bytes);
        for (sent, written) in &sent_forms {
            out = replace(&out, sent, written);
            // The credentials alone too (`Basic ` dropped by an echo).
            if let (Some(s), Some(w)) = (
                sent.strip_prefix(b"Basic "),
                written.strip_prefix(b"Basic "),
            ) {
                out = replace(&out, s, w);
            }
        }
        out
    };
    let mut response = builder.send().await.map_err(unavailable)?;
    let status = response.status().as_u16();
    let encoded = response
        .headers()
        .get(http::header::CONTENT_ENCODING)
        .is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"));
    if carries_secret && encoded {
        return Err(Refusal::new(
            Failure::Unavailable,
            format!("{dest} answered a request carrying a secret with an encoded body, which the host cannot scrub"),
        ));
    }
    let answer_headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .map(|(n, v)| {
            let v = scrub(v.as_bytes());
            (
                n.as_str().to_string(),
                String::from_utf8_lossy(&v).into_owned(),
            )
        })
        .collect();
    let followed = hop.follow
        && is_redirect(status)
        && answer_headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("location"));
    let cap = if followed {
        0
    } else {
        config.limits.answer_bytes.min(allowance.bytes_left)
    };
    let mut received: Vec<u8> = Vec::new();
    let mut charge: Option<Reservation> = None;
    let mut truncated = false;
    // A redirect about to be followed: its body is not read.
    while let Some(chunk) = if followed {
        None
    } else {
        response.chunk().await.map_err(unavailable)?
    } {
        let room = cap.saturating_sub(received.len() as u64) as usize;
        let take = chunk.len().min(room);
        let charged = match &mut charge {
            Some(c) => c.grow(take),
            None => match allowance.memory.reserve(take) {
                Some(c) => {
                    charge = Some(c);
                    true
                }
                None => false,
            },
        };
        if !charged {
            return Err(Refusal::new(
                Failure::Limit,
                format!("the answer from {dest} does not fit in the run's memory limit"),
            ));
        }
        received.extend_from_slice(&chunk[..take]);
        if take < chunk.len() {
            truncated = true;
            break;
        }
    }
    drop(response);
    let got = received.len() as u64;
    if truncated {
        // A value cut short would pass the scrubbing: its start goes too.
        trim_partial_values(secrets, &mut received);
    }
    let body = scrub(&received);
    let shown_url = scrub_text(secrets, &sent_url);
    Ok(OneAnswer {
        answer: NetAnswer {
            status,
            url: shown_url,
            redirected: false,
            headers: answer_headers.clone(),
            body,
            truncated,
        },
        headers: answer_headers,
        received: got,
        charge,
    })
}

/// Every lookup fails: a hop's client knows only the addresses it was pinned to.
struct NoDns;

impl reqwest::dns::Resolve for NoDns {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let name = name.as_str().to_string();
        Box::pin(
            async move { Err(format!("{name} was not checked against the network policy").into()) },
        )
    }
}

/// An error with its causes, as one line (hyper's and rustls's reasons are inside).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// The TLS settings of every request: the system's roots plus the policy's CA files.
pub fn tls_config(config: &NetConfig) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for cert in native.certs {
        let _ = roots.add(cert);
    }
    for path in &config.ca_files {
        use rustls_pki_types::pem::PemObject;
        let certs: Vec<_> = rustls_pki_types::CertificateDer::pem_file_iter(path)
            .map_err(|e| format!("cannot read the CA file {}: {e}", path.display()))?
            .collect::<Result<_, _>>()
            .map_err(|e| {
                format!(
                    "the CA file {} is not PEM certificates: {e}",
                    path.display()
                )
            })?;
        if certs.is_empty() {
            return Err(format!(
                "the CA file {} holds no certificate",
                path.display()
            ));
        }
        for cert in certs {
            roots
                .add(cert)
                .map_err(|e| format!("the CA file {}: {e}", path.display()))?;
        }
    }
    let mut tls =
        rustls::ClientConfig::builder_with_provider(Arc::new(crate::tls::crypto_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tls)
}
