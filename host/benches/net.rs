//! Network egress by policy (docs/network.md): what one HTTP request costs a program in
//! the sandbox, beside the same request made by the host itself.
//!
//! `cargo bench --bench net [-- ROUNDS]` (default 15 rounds). A loopback server on this
//! thread's side answers `hello` to every request, one connection per request (as the
//! host makes them). Rows:
//!
//! - the host: reqwest (hyper and rustls, as `net/fetch.rs` uses it) with no connection
//!   kept between requests: the floor;
//! - python (`urllib.request.urlopen`), javascript (`fetch`) and the shell (`curl`), each
//!   making `CALLS` requests in one run, less the same run without them, divided by
//!   `CALLS`: the cost of one request through the device and the policy's checks.
//!
//! Prints a markdown table (bench/RESULTS.md's "Network requests").

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Instant;

use common::{median, ms, per_call};
use runbox::net::{Net, NetConfig};
use runbox::service::RunboxOptions;

/// Requests per timed run.
const CALLS: usize = 50;

fn main() {
    let rounds = common::rounds(15);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(bench(rounds));
}

/// A server answering `hello` on 127.0.0.1, each connection closed after its answer.
fn serve() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            );
        }
    });
    port
}

async fn bench(rounds: usize) {
    let port = serve();
    let url = format!("http://bench.test:{port}/");
    let direct = direct_requests(&format!("http://127.0.0.1:{port}/"), rounds).await;

    let dir = tempfile::tempdir().expect("temp dir");
    let policy = dir.path().join("net.toml");
    let text = format!(
        "[[allow]]\nhost = \"bench.test\"\nports = [{port}]\naddresses = [\"127.0.0.1\"]\n\
         [limits]\nrequests = 100000\n[resolve]\n\"bench.test\" = [\"127.0.0.1\"]\n"
    );
    let config = NetConfig::parse(&policy, &text).expect("policy");
    let net = Net::start(config, dir.path()).expect("net");
    let options = RunboxOptions {
        net: Some(net),
        ..RunboxOptions::default()
    };
    let runbox = common::load_builtin(&["python", "javascript", "shell"], options);

    let py = |body: &str| {
        format!("import urllib.request\nfor i in range({CALLS}):\n    {body}\nprint('done')")
    };
    let python = per_call(
        &runbox,
        "python",
        (
            &py(&format!("urllib.request.urlopen({url:?}).read()")),
            &py("pass"),
        ),
        CALLS,
        rounds,
    )
    .await;
    let js = |body: &str| {
        format!("for (let i = 0; i < {CALLS}; i++) {{ {body} }}\nconsole.log('done');")
    };
    let javascript = per_call(
        &runbox,
        "javascript",
        (
            &js(&format!("await (await fetch({url:?})).text();")),
            &js(""),
        ),
        CALLS,
        rounds,
    )
    .await;
    let sh = |body: &str| format!("for i in $(seq {CALLS}); do {body}; done; echo done");
    let shell = per_call(
        &runbox,
        "shell",
        (
            &sh(&format!("curl -s {url} > /dev/null")),
            &sh("true > /dev/null"),
        ),
        CALLS,
        rounds,
    )
    .await;

    println!("## Network requests\n");
    println!("A loopback server answering `hello`, one connection per request; {CALLS} requests per run, {rounds} runs; ms per request (median).\n");
    println!("| request | ms per request | added over the host's own |");
    println!("| --- | --- | --- |");
    println!("| the host (reqwest, no kept connection) | {direct:.3} | |");
    for (name, t) in [
        ("python `urllib.request.urlopen(…)`", python),
        ("javascript `fetch(…)`", javascript),
        ("shell `curl -s …`", shell),
    ] {
        println!("| {name} | {t:.3} | {:.3} |", t - direct);
    }
}

/// The median time of one GET made by the host's own client, a new connection each.
async fn direct_requests(url: &str, rounds: usize) -> f64 {
    runbox::net::crypto_ready();
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .build()
        .expect("client");
    let get = || async {
        let body = client
            .get(url)
            .send()
            .await
            .expect("get")
            .bytes()
            .await
            .expect("body");
        assert_eq!(&body[..], b"hello");
    };
    for _ in 0..10 {
        get().await;
    }
    let mut times = Vec::new();
    for _ in 0..rounds * CALLS {
        let started = Instant::now();
        get().await;
        times.push(started.elapsed());
    }
    ms(median(&mut times))
}
