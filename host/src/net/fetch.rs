//! The host's side of one request: checked against the policy, resolved and checked
//! again address by address, sent with the secrets put in, redirects followed one
//! checked hop at a time, the answer read up to its cap and the secrets scrubbed out.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use super::config::{resolved_here, NetConfig};
use super::policy::{address_refused, allowed, Destination};
use super::secrets::{
    header_text, misplaced, put_in, put_in_header, scrub, scrub_text, LoadedSecret,
};
use super::wire::{NetAnswer, NetRequest};
use crate::budget::memory::{MemoryBudget, Reservation};
use crate::upstream::answer::Failure;

/// Why a request did not give an answer: its kind (the answer's `error`) and message.
#[derive(Debug)]
pub struct Refusal {
    pub kind: Failure,
    pub message: String,
}

impl Refusal {
    pub fn new(kind: Failure, message: impl Into<String>) -> Refusal {
        Refusal {
            kind,
            message: message.into(),
        }
    }
}

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
    let mut url = request.url.clone();
    let mut method = request.method.clone();
    let mut headers = request.headers.clone();
    let mut body = request.body.clone();
    let first_host = Destination::of(&url)
        .map_err(|m| Refusal::new(Failure::NotAllowed, m))?
        .host;
    let mut redirects = 0u32;
    loop {
        let dest = Destination::of(&url)
            .map_err(|m| Refusal::new(Failure::NotAllowed, scrub_text(secrets, &m)))?;
        let rule = allowed(config, &dest, method.as_str())
            .map_err(|m| Refusal::new(Failure::NotAllowed, m))?;
        if dest.host != first_host {
            headers.retain(|(n, _)| !CREDENTIALS.contains(&n.to_ascii_lowercase().as_str()));
        }
        let header_text: Vec<u8> = headers
            .iter()
            .flat_map(|(n, v)| [n.as_bytes(), b":", &header_text(v.as_bytes()), b"\n"].concat())
            .collect();
        let wrong = misplaced(
            secrets,
            &dest.host,
            &[url.as_str().as_bytes(), &header_text, &body],
        );
        if !wrong.is_empty() {
            return Err(Refusal::new(
                Failure::NotAllowed,
                format!(
                    "the request to {} carries the placeholder of secret {}, which the network policy ({}) lets go only to its own hosts",
                    dest.host,
                    wrong.join(", "),
                    config.path.display()
                ),
            ));
        }
        let addrs = addresses(config, rule, &dest).await?;
        let answer = send_once(
            config, secrets, tls, &dest, &addrs, &method, &url, &headers, &body, &allowance,
        )
        .await?;
        let location = answer
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("location"))
            .map(|(_, v)| v.clone());
        let is_redirect = matches!(answer.answer.status, 301 | 302 | 303 | 307 | 308);
        match location {
            Some(location) if is_redirect && request.follow_redirects => {
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
                let status = answer.answer.status;
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
                    received: answer.received,
                    answer: fetched,
                    _charge: answer.charge,
                });
            }
        }
    }
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

/// One hop: a client pinned to the checked addresses (any other name fails to resolve).
#[allow(clippy::too_many_arguments)]
async fn send_once(
    config: &NetConfig,
    secrets: &[LoadedSecret],
    tls: &Arc<rustls::ClientConfig>,
    dest: &Destination,
    addrs: &[SocketAddr],
    method: &http::Method,
    url: &url::Url,
    headers: &[(String, String)],
    body: &[u8],
    allowance: &Allowance<'_>,
) -> Result<OneAnswer, Refusal> {
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
    crypto_ready();
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(Arc::new(NoDns))
        .resolve_to_addrs(&dest.host, addrs)
        .tls_backend_preconfigured((**tls).clone())
        .timeout(config.limits.timeout)
        .pool_max_idle_per_host(0)
        .build()
        .map_err(unavailable)?;
    let sent_url =
        String::from_utf8_lossy(&put_in(secrets, &dest.host, url.as_str().as_bytes())).into_owned();
    let mut builder = client.request(method.clone(), &sent_url);
    // Values sent in another form than the program wrote them (Basic credentials carry a
    // secret base64-encoded): scrubbed from the answer back to the program's form.
    let mut sent_forms: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for (name, value) in headers {
        let sent = put_in_header(secrets, &dest.host, value.as_bytes());
        if sent != value.as_bytes() {
            sent_forms.push((sent.clone(), value.as_bytes().to_vec()));
        }
        builder = builder.header(name.as_str(), sent);
    }
    let scrub = |bytes: &[u8]| {
        let mut out = scrub(secrets, bytes);
        for (sent, written) in &sent_forms {
            out = super::secrets::replace(&out, sent, written);
            // The credentials alone too (`Basic ` dropped by an echo).
            if let (Some(s), Some(w)) = (
                sent.strip_prefix(b"Basic "),
                written.strip_prefix(b"Basic "),
            ) {
                out = super::secrets::replace(&out, s, w);
            }
        }
        out
    };
    if !body.is_empty() {
        builder = builder.body(put_in(secrets, &dest.host, body));
    }
    let mut response = builder.send().await.map_err(unavailable)?;
    let status = response.status().as_u16();
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
    let cap = config.limits.answer_bytes.min(allowance.bytes_left);
    let mut received: Vec<u8> = Vec::new();
    let mut charge: Option<Reservation> = None;
    let mut truncated = false;
    while let Some(chunk) = response.chunk().await.map_err(unavailable)? {
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

/// The process's TLS cryptography: ring, not aws-lc-rs (it builds with cc alone). rustls
/// marks ring's provider deprecated for lacking post-quantum key exchange, which nothing
/// here needs yet.
#[allow(deprecated)]
fn crypto_provider() -> rustls::crypto::CryptoProvider {
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
    let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(crypto_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tls)
}
