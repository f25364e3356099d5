//! Network egress by policy (docs/network.md): the operator's `--net-config` names what
//! programs may reach; the host makes every request, through the device `/net/fetch`.
//! The sandbox never gets a socket, a secret's value or an unchecked address.
//!
//! - [`config`]: the policy file.
//! - [`policy`]: destinations and addresses checked.
//! - [`secrets`]: placeholders in, values on the wire only, scrubbed out of answers.
//! - [`wire`]: the device's request and answer.
//! - [`fetch`]: one request, its redirects and its capped answer; [`refusal`]: why none.
//! - [`packages`]: `pip install` of pure-Python wheels by the host's own pip.

pub mod config;
mod fetch;
pub mod packages;
pub mod policy;
mod refusal;
pub mod secrets;
mod wire;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub use crate::tls::crypto_ready;
pub use config::{NetConfig, NetConfigError};

use crate::budget::memory::MemoryBudget;
use crate::metrics::Exposition;
use crate::upstream::answer::{Answer, Failure};
use fetch::Allowance;
use refusal::Refusal;
use secrets::LoadedSecret;

/// Where every run sees the network's directory (empty without a policy).
pub const NET_MOUNT: &str = "/net";
/// The device's file name in `/net`.
pub const DEVICE_NAME: &str = "fetch";

/// Why the network cannot be served as configured.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error(transparent)]
    Config(#[from] NetConfigError),
    #[error(transparent)]
    Secret(#[from] secrets::SecretError),
    #[error("the network policy's TLS settings: {0}")]
    Tls(String),
    #[error("cannot write the /net directory: {0}")]
    Dir(#[from] std::io::Error),
}

/// The server's way out: its policy, secrets, TLS roots, the `/net` directory shown to
/// every run, and what was asked of it (for /metrics).
pub struct Net {
    config: NetConfig,
    secrets: Vec<LoadedSecret>,
    tls: Arc<rustls::ClientConfig>,
    installer: Option<packages::Installer>,
    /// Holds the `/net` directory; removed with the server.
    _root: tempfile::TempDir,
    dir: Arc<PathBuf>,
    requests: Mutex<BTreeMap<(String, String), u64>>,
}

impl std::fmt::Debug for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Net")
            .field("policy", &self.config.path)
            .field("secrets", &self.secrets)
            .finish_non_exhaustive()
    }
}

impl Net {
    /// The network of `config`, its secrets read from runbox's environment; wheels
    /// installed at run time are kept under `cache_dir`.
    pub fn start(config: NetConfig, cache_dir: &std::path::Path) -> Result<Arc<Net>, NetError> {
        let secrets = secrets::load(&config, |name| std::env::var(name).ok())?;
        let tls = fetch::tls_config(&config).map_err(NetError::Tls)?;
        let root = tempfile::Builder::new().prefix("runbox-net-").tempdir()?;
        let dir = root.path().join("net");
        std::fs::create_dir(&dir)?;
        // The device: an empty file whose opens the sandbox's filesystem turns into requests.
        std::fs::write(dir.join(DEVICE_NAME), b"")?;
        let installer = config.packages.clone().map(|p| {
            let hidden = config.secrets.iter().map(|s| s.env.clone()).collect();
            packages::Installer::new(p, cache_dir.join("net-wheels"), hidden)
        });
        let net = Net {
            config,
            secrets,
            tls: Arc::new(tls),
            installer,
            _root: root,
            dir: Arc::new(dir),
            requests: Mutex::new(BTreeMap::new()),
        };
        std::fs::write(net.dir.join("README.md"), net.readme())?;
        // For runtimes whose environment was fixed in a snapshot (python reads it at each
        // run's start): the same variables as every run's environment has.
        if !net.secrets.is_empty() {
            let env: serde_json::Map<String, serde_json::Value> = net
                .environment()
                .into_iter()
                .map(|(k, v)| (k, serde_json::Value::String(v)))
                .collect();
            std::fs::write(
                net.dir.join("environment.json"),
                serde_json::Value::Object(env).to_string(),
            )?;
        }
        Ok(Arc::new(net))
    }

    /// What programs may reach, in one line (list_runtimes, the run_code description).
    pub fn summary(&self) -> String {
        let mut line = format!(
            "The network is reachable only through runbox's policy: {}.",
            self.config.summary()
        );
        if !self.secrets.is_empty() {
            let names: Vec<&str> = self.secrets.iter().map(|s| s.name.as_str()).collect();
            line.push_str(&format!(
                " Secrets (a placeholder in the environment variable of each name, put in by the host on the wire): {}.",
                names.join(", ")
            ));
        }
        line
    }

    /// The variables every run gets: each secret's placeholder under its name.
    pub fn environment(&self) -> Vec<(String, String)> {
        self.secrets
            .iter()
            .map(|s| (s.name.clone(), s.placeholder.clone()))
            .collect()
    }

    /// The directory to show at `/net`.
    pub fn dir(&self) -> Arc<PathBuf> {
        self.dir.clone()
    }

    fn readme(&self) -> String {
        let l = &self.config.limits;
        let mut text = format!(
            "# The network\n\nPrograms here reach the network only through runbox's host, which checks every \
             request against the operator's policy. Reachable: {}.\n\n\
             Use the language's usual HTTP calls (python urllib.request and requests, JavaScript fetch, the \
             shell's curl and wget), or write one JSON request to /net/fetch and read the answer:\n\n\
             {{\"method\": \"GET\", \"url\": \"https://…\", \"headers\": [[\"Accept\", \"application/json\"]], \"body\": \"…\"}}\n\n\
             Per run: at most {} requests and {} bytes of answers; one answer is cut at {} bytes; \
             a request times out after {} ms.\n",
            self.config.summary(),
            l.requests,
            l.bytes,
            l.answer_bytes,
            l.timeout.as_millis()
        );
        if !self.secrets.is_empty() {
            text.push_str(
                "\n## Secrets\n\nWrite a secret's placeholder where its value belongs (a header, the URL, the \
                 body); the host puts the value in only on requests to the secret's hosts, and takes it out of \
                 answers. The placeholder is also in the environment variable of the secret's name.\n\n",
            );
            for s in &self.secrets {
                let hosts: Vec<String> = self
                    .config
                    .secrets
                    .iter()
                    .filter(|c| c.name == s.name)
                    .flat_map(|c| c.hosts.iter().map(ToString::to_string))
                    .collect();
                text.push_str(&format!(
                    "- `{}`: `{}` (sent only to {})\n",
                    s.name,
                    s.placeholder,
                    hosts.join(", ")
                ));
            }
        }
        text
    }

    fn count(&self, host: &str, status: &str) {
        let mut requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        *requests
            .entry((host.to_string(), status.to_string()))
            .or_default() += 1;
    }

    /// Writes `runbox_net_requests_total{host,status}`.
    pub fn write_metrics(&self, out: &mut Exposition) {
        let requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        out.family(
            "runbox_net_requests_total",
            "counter",
            "Requests programs made through /net/fetch, by host and status (an HTTP status, or why none came).",
        );
        for ((host, status), n) in requests.iter() {
            out.sample(
                "runbox_net_requests_total",
                &[("host", host), ("status", status)],
                *n as f64,
            );
        }
    }
}

/// One run's use of the network: requests made and bytes received (a session's sandbox
/// starts counting again at each call), and open device descriptors.
pub struct NetCalls {
    pub net: Arc<Net>,
    made: AtomicU32,
    received: AtomicU64,
    open_devices: AtomicUsize,
}

impl NetCalls {
    pub fn new(net: Arc<Net>) -> Arc<NetCalls> {
        Arc::new(NetCalls {
            net,
            made: AtomicU32::new(0),
            received: AtomicU64::new(0),
            open_devices: AtomicUsize::new(0),
        })
    }

    pub fn begin_call(&self) {
        self.made.store(0, Ordering::SeqCst);
        self.received.store(0, Ordering::SeqCst);
    }

    /// The answer to what the program asked (parsed once, in [`DeviceService::call`]), and
    /// its status for the metrics.
    async fn answer(
        &self,
        asked: Result<Asked, String>,
        memory: &MemoryBudget,
    ) -> Result<(Vec<u8>, String), Refusal> {
        let net = &self.net;
        let asked = asked.map_err(|m| Refusal::new(Failure::BadRequest, m))?;
        let limits = &net.config.limits;
        if self.made.fetch_add(1, Ordering::SeqCst) >= limits.requests {
            return Err(Refusal::new(
                Failure::Limit,
                format!(
                    "this run already made {} requests, the most the network policy ({}) allows one run",
                    limits.requests,
                    net.config.path.display()
                ),
            ));
        }
        let request = match asked {
            Asked::Fetch(request) => request,
            Asked::Install(reqs) => {
                let Some(installer) = &net.installer else {
                    return Err(Refusal::new(
                        Failure::NotAllowed,
                        format!(
                            "the network policy ({}) has no [packages]: nothing can be installed",
                            net.config.path.display()
                        ),
                    ));
                };
                let answer = installer.install(&reqs, &net.config.path).await?;
                return Ok((answer, "installed".into()));
            }
        };
        let received = self.received.load(Ordering::SeqCst);
        let bytes_left = limits.bytes.saturating_sub(received);
        if bytes_left == 0 {
            return Err(Refusal::new(
                Failure::Limit,
                format!(
                    "this run already received {} bytes, the most the network policy allows one run",
                    limits.bytes
                ),
            ));
        }
        let allowance = Allowance { bytes_left, memory };
        let fetched = fetch::fetch(&net.config, &net.secrets, &net.tls, request, allowance).await?;
        self.received.fetch_add(fetched.received, Ordering::SeqCst);
        // Encoding the answer holds its body scrubbed, in base64 and in JSON besides the
        // bytes received (charged already): the run pays for those too while they are made.
        let encoding = (fetched.answer.body.len() as u64).saturating_mul(3) as usize;
        let Some(_encoding) = memory.reserve(encoding) else {
            return Err(Refusal::new(
                Failure::Limit,
                format!(
                    "the answer ({} bytes) does not fit in the run's memory limit once encoded",
                    fetched.answer.body.len()
                ),
            ));
        };
        Ok((fetched.answer.to_bytes(), fetched.answer.status.to_string()))
    }
}

/// What a program asked of `/net/fetch`.
enum Asked {
    Fetch(wire::NetRequest),
    Install(Vec<String>),
}

impl Asked {
    fn parse(bytes: &[u8]) -> Result<Asked, String> {
        match wire::install(bytes) {
            Some(reqs) => reqs.map(Asked::Install),
            None => wire::parse(bytes).map(Asked::Fetch),
        }
    }
}

#[async_trait::async_trait]
impl crate::upstream::device::DeviceService for NetCalls {
    fn path(&self) -> &'static str {
        "/net/fetch"
    }

    fn file_name(&self) -> &'static str {
        DEVICE_NAME
    }

    fn max_request_bytes(&self) -> usize {
        config::MAX_REQUEST_BYTES
    }

    fn device_opened(&self, max: usize) -> bool {
        self.open_devices
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    fn device_closed(&self) {
        let _ = self
            .open_devices
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    async fn call(&self, request: &[u8], memory: &MemoryBudget) -> Answer {
        let asked = Asked::parse(request);
        // By a host the policy names, else `other`: what a program writes cannot grow
        // the metrics without end.
        let host = match &asked {
            Ok(Asked::Install(_)) => "pip".to_string(),
            Ok(Asked::Fetch(r)) => r
                .url
                .host_str()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
                .filter(|h| self.net.config.allow.iter().any(|a| a.host.matches(h)))
                .unwrap_or_else(|| "other".into()),
            Err(_) => "other".to_string(),
        };
        match self.answer(asked, memory).await {
            Ok((bytes, status)) => {
                self.net.count(&host, &status);
                tracing::debug!(host, status, "net request");
                Answer {
                    bytes,
                    status: "ok",
                }
            }
            Err(refusal) => {
                self.net.count(&host, refusal.kind.as_str());
                tracing::debug!(host, error = refusal.kind.as_str(), "net request refused");
                Answer::failed(refusal.kind, refusal.message)
            }
        }
    }

    fn timed_out(&self) {
        self.net.count("-", Failure::Timeout.as_str());
    }
}
