//! Scale-out (docs/scale-out.md): replicas of `runbox mcp --http` behind HAProxy, configured by
//! `deploy/haproxy/generate`, as `tests/mcp_client/scale_out.py` starts them.
//!
//! `cargo bench --bench scale_out` starts three replicas of the real binary (default
//! `--max-concurrent` 8 each), then, for 1, 2 and 3 of them behind a fresh HAProxy, keeps
//! 24 sleep-bound python calls in flight (`time.sleep(0.5)`: the run slots, not the two
//! cores, bound them) for `CALLS` calls (default 240) after a warm-up, and reports calls/s
//! and latency. Then the balancer's own cost: a quick quickjs call, one in flight,
//! `ROUNDS` times (default 200) straight to a replica and through HAProxy to that same
//! replica, alternated. It prints markdown tables (bench/RESULTS.md's "Scale-out").
//!
//! Calls are stateless 2026-07-28 `tools/call` POSTs (the headers and `_meta` of
//! tests/mcp_client/tasks.py's `Http.request`, without the tasks extension so that a call
//! is always answered with its result) over keep-alive HTTP/1.1 connections, one per
//! caller, written by hand below: rmcp's streamable HTTP client needs reqwest, which is not
//! in the dependency tree. Every answer is checked to be a completed run printing `1`.
//! Every child (replicas, HAProxy) is killed when the bench ends, panics included.

mod common;

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{median, ms, percentile};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const VERSION: &str = "2026-07-28";
/// Calls in flight through the balancer.
const IN_FLIGHT: usize = 24;
/// Each replica's run slots (`--max-concurrent`'s default).
const SLOTS: usize = 8;
const SLEEP_PY: &str = "import time; time.sleep(0.5); print(1)";
const QUICK_JS: &str = "console.log(1)";
const IDS: [&str; 3] = ["r0", "r1", "r2"];

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let calls = env_usize("CALLS", 240);
    let rounds = env_usize("ROUNDS", 200);
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let work = tempfile::Builder::new()
        .prefix("runbox-bench-scale-out-")
        .tempdir()
        .expect("a temporary directory");
    // Children are started from this (the main) thread: their parent-death signal is tied
    // to the thread that started them.
    let mut children = Children::default();
    let replicas: Vec<Replica> = IDS
        .iter()
        .map(|id| Replica::start(id, work.path(), &mut children))
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");

    println!("# runbox scale-out\n");
    println!(
        "{IN_FLIGHT} stateless python calls in flight (`{SLEEP_PY}`) through HAProxy, {calls} \
         per row after a warm-up of {IN_FLIGHT}; replicas with --max-concurrent {SLOTS}; \
         times in ms.\n"
    );
    println!(
        "| replicas | run slots | calls/s | vs 1 replica | median | p95 | calls per replica |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let mut first = None;
    for n in 1..=replicas.len() {
        let balancer = Balancer::start(&repo, work.path(), &replicas[..n], &mut children);
        let row = rt.block_on(sleep_bound(&balancer, &replicas[..n], calls));
        let per_second = row.calls as f64 / row.elapsed.as_secs_f64();
        let base = *first.get_or_insert(per_second);
        println!(
            "| {n} | {} | {per_second:.1} | {:.2}× | {:.0} | {:.0} | {} |",
            n * SLOTS,
            per_second / base,
            row.median,
            row.p95,
            row.spread
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(" / ")
        );
        children.stop(balancer.pid);
    }

    let balancer = Balancer::start(&repo, work.path(), &replicas[..1], &mut children);
    let overhead = rt.block_on(overhead(&balancer, &replicas[0], rounds));
    children.stop(balancer.pid);
    println!(
        "\nThe balancer's cost: `{QUICK_JS}` in quickjs, one call in flight, {rounds} calls \
         each way, alternated, over keep-alive connections; times in ms.\n"
    );
    println!("| path | median | p95 |");
    println!("| --- | --- | --- |");
    println!(
        "| straight to replica r0 | {:.2} | {:.2} |",
        overhead.direct.0, overhead.direct.1
    );
    println!(
        "| through HAProxy to r0 alone | {:.2} | {:.2} |",
        overhead.balanced.0, overhead.balanced.1
    );
    println!(
        "| through HAProxy − straight | {:+.2} | {:+.2} |",
        overhead.balanced.0 - overhead.direct.0,
        overhead.balanced.1 - overhead.direct.1
    );
    println!(
        "\nThe median of the {rounds} per-pair differences (through HAProxy − straight, the \
         two calls of a pair back to back): {:+.2} ms.",
        overhead.per_pair
    );
    drop(children);
}

/// The children this bench started: killed and reaped when dropped (a panic included).
#[derive(Default)]
struct Children(Vec<Child>);

impl Children {
    fn spawn(&mut self, command: &mut Command) -> u32 {
        // Should the bench itself be killed, the children go too.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = command.spawn().expect("start a child process");
        let pid = child.id();
        self.0.push(child);
        pid
    }

    fn exited(&mut self, pid: u32) -> Option<std::process::ExitStatus> {
        let child = self.0.iter_mut().find(|c| c.id() == pid)?;
        child.try_wait().ok().flatten()
    }

    /// Kills child `pid` and reaps it.
    fn stop(&mut self, pid: u32) {
        if let Some(i) = self.0.iter().position(|c| c.id() == pid) {
            let mut child = self.0.remove(i);
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
        }
        for child in &mut self.0 {
            let _ = child.wait();
        }
    }
}

/// `runbox mcp --http 127.0.0.1:0 --replica-id ID`.
struct Replica {
    id: &'static str,
    /// host:port
    addr: String,
}

impl Replica {
    fn start(id: &'static str, work: &Path, children: &mut Children) -> Replica {
        let log_path = work.join(format!("{id}.log"));
        let log = File::create(&log_path).expect("a replica's log");
        let pid = children.spawn(
            Command::new(env!("CARGO_BIN_EXE_runbox"))
                .args([
                    "mcp",
                    "--quiet",
                    "--http",
                    "127.0.0.1:0",
                    "--replica-id",
                    id,
                ])
                // Only what the bench runs: less to prepare before /readyz says ready.
                .args(["--runtimes", "python,quickjs"])
                .env("RUNBOX_CACHE_DIR", common::cache_dir())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log),
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            if let Some(addr) = text
                .split("serving MCP at http://")
                .nth(1)
                .and_then(|rest| rest.split("/mcp").next())
            {
                return Replica {
                    id,
                    addr: addr.to_string(),
                };
            }
            if let Some(status) = children.exited(pid) {
                panic!("replica {id} exited ({status}) before serving:\n{text}");
            }
            assert!(
                Instant::now() < deadline,
                "replica {id} never said where it serves:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// HAProxy in the foreground with the configuration `deploy/haproxy/generate` writes for
/// some replicas.
struct Balancer {
    pid: u32,
    addr: String,
}

impl Balancer {
    fn start(repo: &Path, work: &Path, replicas: &[Replica], children: &mut Children) -> Balancer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let addr = format!("127.0.0.1:{port}");
        let admin = work.join(format!("haproxy-{port}.sock"));
        let generated = Command::new(repo.join("deploy/haproxy/generate"))
            .arg("--listen")
            .arg(&addr)
            .arg("--admin-socket")
            .arg(&admin)
            .args(replicas.iter().map(|r| format!("{}={}", r.id, r.addr)))
            .output()
            .expect("run deploy/haproxy/generate");
        assert!(
            generated.status.success(),
            "generate: {}",
            String::from_utf8_lossy(&generated.stderr)
        );
        let config = work.join(format!("haproxy-{port}.cfg"));
        std::fs::write(&config, &generated.stdout).unwrap();
        let log_path = work.join(format!("haproxy-{port}.log"));
        let log = File::create(&log_path).unwrap();
        let pid = children.spawn(
            Command::new("haproxy")
                .arg("-db")
                .arg("-f")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log),
        );
        // Every replica UP in backend `runbox` (ready: runtimes prepared, not draining).
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = children.exited(pid) {
                panic!(
                    "haproxy exited ({status}):\n{}",
                    std::fs::read_to_string(&log_path).unwrap_or_default()
                );
            }
            let states = server_states(&admin, "runbox");
            if replicas
                .iter()
                .all(|r| states.iter().any(|(s, st)| s == r.id && st == "UP"))
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "HAProxy never saw every replica UP: {states:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Balancer { pid, addr }
    }
}

/// Each server's status in `backend` (runtime API `show stat`), empty while the socket is
/// not there yet.
fn server_states(admin: &Path, backend: &str) -> Vec<(String, String)> {
    let Ok(mut socket) = StdUnixStream::connect(admin) else {
        return Vec::new();
    };
    let mut csv = String::new();
    if socket.write_all(b"show stat\n").is_err() || socket.read_to_string(&mut csv).is_err() {
        return Vec::new();
    }
    let mut header: Vec<&str> = Vec::new();
    let mut states = Vec::new();
    for line in csv.lines() {
        if let Some(h) = line.strip_prefix("# ") {
            header = h.split(',').collect();
        } else if !line.is_empty() && !header.is_empty() {
            let row: Vec<&str> = line.split(',').collect();
            let field = |name| {
                header
                    .iter()
                    .position(|h| *h == name)
                    .and_then(|i| row.get(i))
                    .copied()
                    .unwrap_or("")
            };
            if field("pxname") == backend && !matches!(field("svname"), "FRONTEND" | "BACKEND") {
                let status = field("status").split(' ').next().unwrap_or("").to_string();
                states.push((field("svname").to_string(), status));
            }
        }
    }
    states
}

/// A keep-alive HTTP/1.1 connection, with just what the bench needs: a request with a
/// body, an answer with Content-Length or chunked.
struct Http {
    addr: String,
    stream: Option<BufReader<TcpStream>>,
}

struct Answer {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

impl Http {
    fn new(addr: &str) -> Http {
        Http {
            addr: addr.to_string(),
            stream: None,
        }
    }

    async fn request(&mut self, method: &str, path: &str, headers: &str, body: &[u8]) -> Answer {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\n{headers}Content-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        )
        .into_bytes();
        head.extend_from_slice(body);
        // A reused connection the peer closed while idle fails before any answer: then
        // once more on a new one.
        for attempt in 0..2 {
            let reused = self.stream.is_some();
            if !reused {
                let tcp = TcpStream::connect(&self.addr).await.expect("connect");
                tcp.set_nodelay(true).unwrap();
                self.stream = Some(BufReader::new(tcp));
            }
            let stream = self.stream.as_mut().unwrap();
            match Self::exchange(stream, &head).await {
                Ok((answer, keep)) => {
                    if !keep {
                        self.stream = None;
                    }
                    return answer;
                }
                Err(e) => {
                    self.stream = None;
                    if !reused || attempt == 1 {
                        panic!("{method} {path} to {}: {e}", self.addr);
                    }
                }
            }
        }
        unreachable!()
    }

    async fn exchange(
        stream: &mut BufReader<TcpStream>,
        request: &[u8],
    ) -> std::io::Result<(Answer, bool)> {
        stream.get_mut().write_all(request).await?;
        let mut line = String::new();
        if stream.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("status line {line:?}")))?;
        let (mut length, mut chunked, mut keep, mut content_type) =
            (None, false, true, String::new());
        loop {
            line.clear();
            stream.read_line(&mut line).await?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap_or((header, ""));
            let (name, value) = (name.to_ascii_lowercase(), value.trim());
            match name.as_str() {
                "content-length" => length = value.parse::<usize>().ok(),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "connection" => keep = !value.eq_ignore_ascii_case("close"),
                "content-type" => content_type = value.to_string(),
                _ => {}
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                stream.read_line(&mut line).await?;
                let size = usize::from_str_radix(line.trim().split(';').next().unwrap(), 16)
                    .map_err(|_| std::io::Error::other(format!("chunk size {line:?}")))?;
                let mut chunk = vec![0; size + 2];
                stream.read_exact(&mut chunk).await?;
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else if let Some(length) = length {
            body.resize(length, 0);
            stream.read_exact(&mut body).await?;
        } else {
            stream.read_to_end(&mut body).await?;
            keep = false;
        }
        Ok((
            Answer {
                status,
                content_type,
                body,
            },
            keep,
        ))
    }

    /// One stateless 2026-07-28 `run_code`, checked to be a completed run printing `1`.
    async fn run(&mut self, runtime: &str, code: &str) {
        let message = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {
                "name": "run_code",
                "arguments": {"runtime": runtime, "code": code, "timeout_seconds": 60},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": VERSION,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "scale-out-bench", "version": "0"},
                },
            },
        });
        let headers = format!(
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: {VERSION}\r\nMcp-Method: tools/call\r\nMcp-Name: run_code\r\n"
        );
        let answer = self
            .request("POST", "/mcp", &headers, message.to_string().as_bytes())
            .await;
        let text = String::from_utf8_lossy(&answer.body);
        assert_eq!(answer.status, 200, "{text}");
        let reply: Value = if answer.content_type.starts_with("text/event-stream") {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|e| e["id"] == 1)
                .unwrap_or_else(|| panic!("no answer among the events: {text}"))
        } else {
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
        };
        let content = &reply["result"]["structuredContent"];
        assert!(
            content["status"] == "completed" && content["stdout"] == "1\n",
            "{reply}"
        );
    }
}

/// `runbox_runs_total` of a replica, every label set summed.
async fn runs_total(replica: &Replica) -> u64 {
    let answer = Http::new(&replica.addr)
        .request("GET", "/metrics", "", b"")
        .await;
    String::from_utf8_lossy(&answer.body)
        .lines()
        .filter(|l| l.starts_with("runbox_runs_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

struct Row {
    calls: usize,
    elapsed: Duration,
    median: f64,
    p95: f64,
    /// Calls each replica ran.
    spread: Vec<u64>,
}

/// `calls` sleep-bound calls, `IN_FLIGHT` at a time, through the balancer.
async fn sleep_bound(balancer: &Balancer, replicas: &[Replica], calls: usize) -> Row {
    // Warm-up: every caller's connection open and every replica's python used.
    let mut callers: Vec<Http> = (0..IN_FLIGHT).map(|_| Http::new(&balancer.addr)).collect();
    let warm = callers.iter_mut().map(|c| c.run("python", SLEEP_PY));
    futures::future::join_all(warm).await;

    let mut before = Vec::new();
    for r in replicas {
        before.push(runs_total(r).await);
    }
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = callers
        .into_iter()
        .map(|mut caller| {
            let next = next.clone();
            tokio::spawn(async move {
                let mut times = Vec::new();
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    let t = Instant::now();
                    caller.run("python", SLEEP_PY).await;
                    times.push(t.elapsed());
                }
                times
            })
        })
        .collect();
    let mut times = Vec::with_capacity(calls);
    for task in tasks {
        times.extend(task.await.expect("a caller panicked"));
    }
    let elapsed = started.elapsed();
    let mut spread = Vec::new();
    for (r, b) in replicas.iter().zip(before) {
        spread.push(runs_total(r).await - b);
    }
    Row {
        calls: times.len(),
        elapsed,
        median: ms(median(&mut times)),
        p95: ms(percentile(&mut times, 0.95)),
        spread,
    }
}

struct Overhead {
    /// (median, p95) in ms.
    direct: (f64, f64),
    balanced: (f64, f64),
    /// The median of (through the balancer − direct) over adjacent pairs, in ms.
    per_pair: f64,
}

/// A quick call straight to `replica` and through the balancer (to it alone), alternated.
async fn overhead(balancer: &Balancer, replica: &Replica, rounds: usize) -> Overhead {
    let mut direct = Http::new(&replica.addr);
    let mut balanced = Http::new(&balancer.addr);
    for _ in 0..10 {
        direct.run("quickjs", QUICK_JS).await;
        balanced.run("quickjs", QUICK_JS).await;
    }
    let (mut d, mut b) = (Vec::new(), Vec::new());
    let mut diffs = Vec::new();
    for i in 0..rounds {
        // Which goes first alternates too.
        let order: [bool; 2] = if i % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        let mut pair = [Duration::ZERO; 2];
        for through in order {
            let t = Instant::now();
            if through {
                balanced.run("quickjs", QUICK_JS).await;
            } else {
                direct.run("quickjs", QUICK_JS).await;
            }
            pair[through as usize] = t.elapsed();
        }
        d.push(pair[0]);
        b.push(pair[1]);
        diffs.push(ms(pair[1]) - ms(pair[0]));
    }
    diffs.sort_by(|x, y| x.partial_cmp(y).unwrap());
    let n = diffs.len();
    let per_pair = if n % 2 == 1 {
        diffs[n / 2]
    } else {
        (diffs[n / 2 - 1] + diffs[n / 2]) / 2.0
    };
    Overhead {
        direct: (ms(median(&mut d)), ms(percentile(&mut d, 0.95))),
        balanced: (ms(median(&mut b)), ms(percentile(&mut b, 0.95))),
        per_pair,
    }
}
