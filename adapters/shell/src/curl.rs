//! `curl`: HTTP requests through the device `/net/fetch` (docs/network.md), with curl's
//! usual flags, output and exit statuses. It replaces bashkit's own `curl`, which needs a
//! client of its own (its `http_client` feature) that a sandbox without sockets cannot have.
//!
//! ```text
//! curl [-sSfLiIvGJkO] [-X METHOD] [-H 'Name: value']... [-d DATA | --data-raw DATA |
//!      --data-binary DATA | --data-urlencode DATA | --json DATA | -F NAME=VALUE]...
//!      [-o FILE] [-w FORMAT] [-A AGENT] [-u USER:PASSWORD] [-D FILE] [-T FILE] URL...
//! ```
//!
//! The host makes the request; a request it refuses (the network policy, a per-run cap)
//! or could not make fails the way curl fails when it cannot connect: `curl: (7) MESSAGE`
//! on stderr and exit status 7 (28 when it timed out). `-f` makes a status of 400 or more
//! exit 22; a bad command line exits 2 and a file that cannot be written 23.

use std::path::{Path, PathBuf};
use std::time::Instant;

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult};

use crate::args::{self, Problem};
use crate::net::{self, Failure, Request, Response, Target};

/// The `User-Agent` curl sends by default: some services answer `curl/…` with plain text.
const USER_AGENT: &str = "curl/8.7.1";

const TRY_HELP: &str = "curl: try 'curl --help' for more information\n";

const HELP: &str = "\
Usage: curl [options...] <url>...
Requests go through runbox's /net/fetch: the host makes them, within its network policy.
 -X, --request METHOD         the request's method
 -H, --header 'NAME: VALUE'   a header to send ('NAME:' sends none, @FILE reads them)
 -d, --data DATA              send DATA (POST, form-encoded; @FILE, @- for stdin)
     --data-raw DATA          send DATA as it is (@ is not special)
     --data-binary DATA       send DATA; @FILE sends the file's bytes as they are
     --data-urlencode DATA    send DATA URL-encoded (NAME=VALUE, @FILE, NAME@FILE)
     --json DATA              send JSON (sets Content-Type and Accept to application/json)
 -F, --form NAME=VALUE        multipart form data (NAME=@FILE uploads a file)
 -G, --get                    put the data in the URL's query and GET it
 -T, --upload-file FILE       PUT the file
 -o, --output FILE            write the body to FILE (- for stdout)
 -O, --remote-name            write the body to the file the URL names
 -J, --remote-header-name     with -O: the name the Content-Disposition header gives
     --output-dir DIR         where -o and -O write
     --create-dirs            make -o's directories
 -D, --dump-header FILE       write the headers to FILE (- for stdout)
 -i, --include                print the status line and headers before the body
 -I, --head                   HEAD: print the status line and headers
 -L, --location               follow redirects
 -f, --fail                   exit 22 on a status of 400 or more, printing no body
     --fail-with-body         exit 22 on a status of 400 or more, printing the body
 -s, --silent                 no error messages
 -S, --show-error             error messages even with -s
 -v, --verbose                the request and the answer's headers on stderr
 -w, --write-out FORMAT       print FORMAT after the transfer (%{http_code}, \\n, ...)
 -A, --user-agent AGENT       the User-Agent header
 -u, --user USER:PASSWORD     basic authentication
 -e, --referer URL            the Referer header
 -b, --cookie NAME=VALUE      the Cookie header
 -r, --range RANGE            the Range header (bytes=RANGE)
     --oauth2-bearer TOKEN    the Authorization header (Bearer TOKEN)
Exit status: 0 done, 2 bad usage, 7 the request was refused or failed, 22 an HTTP error
with -f, 23 a file could not be written, 26 a file could not be read, 28 a timeout.
";

/// The `curl` builtin, over the network directory `dir` (`/net` in the component).
pub struct CurlCommand {
    dir: PathBuf,
}

impl CurlCommand {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        CurlCommand { dir: dir.into() }
    }
}

#[async_trait]
impl Builtin for CurlCommand {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let outcome = run(&self.dir, &ctx).await;
        Ok(ExecResult {
            stdout: outcome.stdout.into(),
            stderr: outcome.stderr.into(),
            exit_code: outcome.status,
            ..ExecResult::default()
        })
    }
}

/// What a command printed, and its exit status.
#[derive(Debug, Default)]
pub struct Outcome {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub status: i32,
}

/// A piece of the request's data, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Data {
    /// `-d`: `@FILE` read without its line ends.
    Ascii(String),
    /// `--data-raw`.
    Raw(String),
    /// `--data-binary`: `@FILE` read as it is.
    Binary(String),
    /// `--data-urlencode`.
    UrlEncode(String),
    /// `--json`: like `--data-binary`, joined to the previous piece without `&`.
    Json(String),
}

/// Where one URL's body goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Output {
    File(String),
    Remote,
}

/// The command line.
#[derive(Debug, Default)]
struct Options {
    method: Option<String>,
    headers: Vec<String>,
    data: Vec<Data>,
    /// `-F` values, with whether they are `--form-string` (no `@` or `<`).
    form: Vec<(String, bool)>,
    get: bool,
    head: bool,
    upload: Option<String>,
    outputs: Vec<Output>,
    remote_name_all: bool,
    remote_header_name: bool,
    output_dir: Option<String>,
    create_dirs: bool,
    dump_header: Option<String>,
    silent: bool,
    show_error: bool,
    fail: bool,
    fail_with_body: bool,
    fail_early: bool,
    location: bool,
    include: bool,
    verbose: bool,
    write_out: Option<String>,
    user_agent: Option<String>,
    user: Option<String>,
    referer: Option<String>,
    bearer: Option<String>,
    cookies: Vec<String>,
    range: Option<String>,
    urls: Vec<String>,
    help: bool,
    version: bool,
}

/// Long options that take a value (those only accepted, whose value changes nothing here,
/// are in [`IGNORED_WITH_VALUE`]).
const WITH_VALUE: &[&str] = &[
    "request",
    "header",
    "data",
    "data-ascii",
    "data-raw",
    "data-binary",
    "data-urlencode",
    "json",
    "form",
    "form-string",
    "upload-file",
    "output",
    "output-dir",
    "dump-header",
    "write-out",
    "user-agent",
    "user",
    "referer",
    "oauth2-bearer",
    "cookie",
    "range",
    "url",
];

/// Options taken for compatibility whose value does not matter here: the host connects,
/// times out and verifies TLS by its policy.
const IGNORED_WITH_VALUE: &[&str] = &[
    "max-time",
    "connect-timeout",
    "retry",
    "retry-delay",
    "retry-max-time",
    "max-redirs",
    "proxy",
    "noproxy",
    "proxy-user",
    "cookie-jar",
    "limit-rate",
    "speed-limit",
    "speed-time",
    "max-filesize",
    "keepalive-time",
    "expect100-timeout",
    "resolve",
    "connect-to",
    "cacert",
    "capath",
    "cert",
    "key",
    "ciphers",
    "interface",
    "dns-servers",
    "trace",
    "trace-ascii",
    "stderr",
];

/// Flags that change something here.
const FLAGS: &[&str] = &[
    "get",
    "head",
    "remote-name",
    "remote-name-all",
    "remote-header-name",
    "create-dirs",
    "silent",
    "show-error",
    "fail",
    "fail-with-body",
    "fail-early",
    "location",
    "location-trusted",
    "include",
    "verbose",
    "help",
    "version",
];

/// Flags taken for compatibility that change nothing here.
const IGNORED_FLAGS: &[&str] = &[
    "insecure",
    "globoff",
    "compressed",
    "no-progress-meter",
    "progress-bar",
    "no-buffer",
    "http1.0",
    "http1.1",
    "http2",
    "http2-prior-knowledge",
    "http3",
    "ipv4",
    "ipv6",
    "tlsv1",
    "tlsv1.0",
    "tlsv1.1",
    "tlsv1.2",
    "tlsv1.3",
    "ssl",
    "ssl-reqd",
    "ssl-no-revoke",
    "proxy-insecure",
    "retry-connrefused",
    "retry-all-errors",
    "raw",
    "path-as-is",
    "no-keepalive",
    "tcp-nodelay",
    "disable",
    "remote-time",
    "no-sessionid",
    "styled-output",
    "no-styled-output",
    "parallel",
    "suppress-connect-headers",
    "xattr",
    "no-alpn",
    "no-npn",
];

/// The long option a short one stands for.
fn short_option(c: char) -> Option<&'static str> {
    Some(match c {
        'X' => "request",
        'H' => "header",
        'd' => "data",
        'F' => "form",
        'G' => "get",
        'I' => "head",
        'T' => "upload-file",
        'o' => "output",
        'O' => "remote-name",
        'J' => "remote-header-name",
        'D' => "dump-header",
        's' => "silent",
        'S' => "show-error",
        'f' => "fail",
        'L' => "location",
        'i' => "include",
        'v' => "verbose",
        'w' => "write-out",
        'A' => "user-agent",
        'u' => "user",
        'e' => "referer",
        'b' => "cookie",
        'r' => "range",
        'h' => "help",
        'V' => "version",
        'm' => "max-time",
        'x' => "proxy",
        'U' => "proxy-user",
        'c' => "cookie-jar",
        'Y' => "speed-limit",
        'y' => "speed-time",
        'E' => "cert",
        'k' => "insecure",
        'g' => "globoff",
        'N' => "no-buffer",
        '#' => "progress-bar",
        'q' => "disable",
        'Z' => "parallel",
        'R' => "remote-time",
        '0' => "http1.0",
        '1' => "tlsv1",
        '4' => "ipv4",
        '6' => "ipv6",
        _ => return None,
    })
}

fn takes_value(name: &str) -> Option<bool> {
    if WITH_VALUE.contains(&name) || IGNORED_WITH_VALUE.contains(&name) {
        Some(true)
    } else if FLAGS.contains(&name) || IGNORED_FLAGS.contains(&name) {
        Some(false)
    } else {
        None
    }
}

/// A bad command line: what curl says (exit status 2).
fn usage_error(message: &str) -> String {
    format!("curl: {message}\n{TRY_HELP}")
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut options = Options::default();
        args::parse(&mut options, args)?;
        Ok(options)
    }

    /// The option `name` (a long name) with its value, if it takes one.
    fn apply(&mut self, name: &str, value: Option<String>) {
        let text = || value.clone().unwrap_or_default();
        match name {
            "request" => self.method = Some(text()),
            "header" => self.headers.push(text()),
            "data" | "data-ascii" => self.data.push(Data::Ascii(text())),
            "data-raw" => self.data.push(Data::Raw(text())),
            "data-binary" => self.data.push(Data::Binary(text())),
            "data-urlencode" => self.data.push(Data::UrlEncode(text())),
            "json" => self.data.push(Data::Json(text())),
            "form" => self.form.push((text(), false)),
            "form-string" => self.form.push((text(), true)),
            "upload-file" => self.upload = Some(text()),
            "output" => self.outputs.push(Output::File(text())),
            "output-dir" => self.output_dir = Some(text()),
            "dump-header" => self.dump_header = Some(text()),
            "write-out" => self.write_out = Some(text()),
            "user-agent" => self.user_agent = Some(text()),
            "user" => self.user = Some(text()),
            "referer" => self.referer = Some(text()),
            "oauth2-bearer" => self.bearer = Some(text()),
            "cookie" => self.cookies.push(text()),
            "range" => self.range = Some(text()),
            "url" => self.urls.push(text()),
            "remote-name" => self.outputs.push(Output::Remote),
            _ => self.flag(name, true),
        }
    }

    fn unset(&mut self, name: &str) {
        self.flag(name, false);
    }

    fn flag(&mut self, name: &str, on: bool) {
        match name {
            "get" => self.get = on,
            "head" => self.head = on,
            "remote-name-all" => self.remote_name_all = on,
            "remote-header-name" => self.remote_header_name = on,
            "create-dirs" => self.create_dirs = on,
            "silent" => self.silent = on,
            "show-error" => self.show_error = on,
            "fail" => self.fail = on,
            "fail-with-body" => self.fail_with_body = on,
            "fail-early" => self.fail_early = on,
            "location" | "location-trusted" => self.location = on,
            "include" => self.include = on,
            "verbose" => self.verbose = on,
            "help" => self.help = on,
            "version" => self.version = on,
            _ => {}
        }
    }

    /// Whether error messages are printed.
    fn errors_shown(&self) -> bool {
        !self.silent || self.show_error
    }
}

impl args::Command for Options {
    type Error = String;
    const SPLITS_ONLY_VALUED: bool = true;

    fn takes_value(name: &str) -> Option<bool> {
        takes_value(name)
    }

    fn short(c: char) -> Option<&'static str> {
        short_option(c)
    }

    fn set(&mut self, name: &str, value: Option<String>) -> Result<(), String> {
        self.apply(name, value);
        Ok(())
    }

    fn operand(&mut self, arg: &str) {
        self.urls.push(arg.to_string());
    }

    fn problem(&mut self, problem: Problem) -> Result<(), String> {
        Err(usage_error(&match problem {
            // `--no-FLAG` turns a flag off.
            Problem::UnknownLong(name) => match name.strip_prefix("no-") {
                Some(flag) if FLAGS.contains(&flag) || IGNORED_FLAGS.contains(&flag) => {
                    self.unset(flag);
                    return Ok(());
                }
                _ => format!("option --{name}: is unknown"),
            },
            Problem::UnknownShort(c) => format!("option -{c}: is unknown"),
            Problem::LongWithoutValue(name) => format!("option --{name}: requires parameter"),
            Problem::ShortWithoutValue(c) => format!("option -{c}: requires parameter"),
        }))
    }
}

/// A failed transfer: curl's exit status and message.
struct Error {
    code: i32,
    message: String,
}

impl Error {
    fn new(code: i32, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
        }
    }
}

/// curl's exit status for a request the host did not make or complete.
fn failure_code(failure: &Failure) -> i32 {
    match failure.kind.as_str() {
        "timeout" => 28,
        "bad_request" => 3,
        // not_allowed, unavailable, limit, and no network at all: it could not connect.
        _ => 7,
    }
}

/// `curl ARGS...` in the shell of `ctx`, through the device in `dir`.
pub async fn run(dir: &Path, ctx: &BuiltinContext<'_>) -> Outcome {
    let mut out = Outcome::default();
    let options = match Options::parse(ctx.args) {
        Ok(options) => options,
        Err(message) => {
            out.stderr = message.into_bytes();
            out.status = 2;
            return out;
        }
    };
    if options.help {
        out.stdout = HELP.as_bytes().to_vec();
        return out;
    }
    if options.version {
        out.stdout = format!(
            "{} (runbox: requests go through /net/fetch)\nProtocols: http https\n",
            USER_AGENT.replace('/', " ")
        )
        .into_bytes();
        return out;
    }
    if options.urls.is_empty() {
        out.stderr = usage_error("no URL specified").into_bytes();
        out.status = 2;
        return out;
    }
    if !options.form.is_empty() && !options.data.is_empty() {
        out.stderr = usage_error(
            "You can only select one HTTP request method! You asked for both POST \
             (-d, --data) and multipart formpost (-F, --form).",
        )
        .into_bytes();
        out.status = 2;
        return out;
    }
    let body = match Body::read(ctx, &options).await {
        Ok(body) => body,
        Err(e) => {
            if options.errors_shown() {
                out.stderr = format!("curl: ({}) {}\n", e.code, e.message).into_bytes();
            }
            out.status = e.code;
            return out;
        }
    };
    let write_out = match &options.write_out {
        Some(format) => match format.strip_prefix('@') {
            Some(name) => match net::read_input(ctx, name).await {
                Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
                Err(e) => {
                    out.stderr = format!("curl: (26) {name}: {e}\n").into_bytes();
                    out.status = 26;
                    return out;
                }
            },
            None => Some(format.clone()),
        },
        None => None,
    };
    for (index, url) in options.urls.iter().enumerate() {
        let status = transfer(
            dir,
            ctx,
            &options,
            &body,
            write_out.as_deref(),
            index,
            url,
            &mut out,
        )
        .await;
        if status != 0 {
            out.status = status;
            if options.fail_early {
                break;
            }
        }
    }
    out
}

/// What the data options make: the request's body (or the data for `-G`'s query) and
/// its content type.
struct Body {
    bytes: Option<Vec<u8>>,
    content_type: Option<String>,
    json: bool,
}

impl Body {
    async fn read(ctx: &BuiltinContext<'_>, options: &Options) -> Result<Body, Error> {
        let read = |name: String| async move {
            net::read_input(ctx, &name).await.map_err(|e| {
                Error::new(
                    26,
                    format!("Failed to open/read local data from file/application: {name}: {e}"),
                )
            })
        };
        if let Some(name) = &options.upload {
            return Ok(Body {
                bytes: Some(read(name.clone()).await?),
                content_type: None,
                json: false,
            });
        }
        if !options.form.is_empty() {
            let mut parts = Vec::new();
            for (spec, literal) in &options.form {
                parts.push(FormPart::read(spec, *literal, ctx).await?);
            }
            let (boundary, bytes) = multipart(&parts);
            return Ok(Body {
                bytes: Some(bytes),
                content_type: Some(format!("multipart/form-data; boundary={boundary}")),
                json: false,
            });
        }
        if options.data.is_empty() {
            return Ok(Body {
                bytes: None,
                content_type: None,
                json: false,
            });
        }
        let mut bytes = Vec::new();
        let mut json = false;
        for (i, piece) in options.data.iter().enumerate() {
            let chunk = match piece {
                Data::Ascii(value) => match value.strip_prefix('@') {
                    Some(name) => {
                        let mut file = read(name.to_string()).await?;
                        file.retain(|b| *b != b'\r' && *b != b'\n');
                        file
                    }
                    None => value.as_bytes().to_vec(),
                },
                Data::Raw(value) => value.as_bytes().to_vec(),
                Data::Binary(value) | Data::Json(value) => match value.strip_prefix('@') {
                    Some(name) => read(name.to_string()).await?,
                    None => value.as_bytes().to_vec(),
                },
                Data::UrlEncode(value) => {
                    // `content`, `=content`, `name=content`, `@file`, `name@file`: the
                    // first `=` or `@` decides.
                    match value.find(['=', '@']) {
                        Some(at) if value.as_bytes()[at] == b'=' => {
                            let (name, content) = (&value[..at], &value[at + 1..]);
                            let encoded = net::percent_encode(content.as_bytes());
                            if name.is_empty() {
                                encoded.into_bytes()
                            } else {
                                format!("{name}={encoded}").into_bytes()
                            }
                        }
                        Some(at) => {
                            let (name, file) = (&value[..at], &value[at + 1..]);
                            let encoded = net::percent_encode(&read(file.to_string()).await?);
                            if name.is_empty() {
                                encoded.into_bytes()
                            } else {
                                format!("{name}={encoded}").into_bytes()
                            }
                        }
                        None => net::percent_encode(value.as_bytes()).into_bytes(),
                    }
                }
            };
            let is_json = matches!(piece, Data::Json(_));
            json |= is_json;
            if i > 0 && !is_json {
                bytes.push(b'&');
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Body {
            bytes: Some(bytes),
            content_type: Some(if json {
                "application/json".into()
            } else {
                "application/x-www-form-urlencoded".into()
            }),
            json,
        })
    }
}

/// One part of a multipart form (`-F`).
struct FormPart {
    name: String,
    filename: Option<String>,
    content_type: Option<String>,
    content: Vec<u8>,
}

impl FormPart {
    async fn read(spec: &str, literal: bool, ctx: &BuiltinContext<'_>) -> Result<FormPart, Error> {
        let (name, value) = spec.split_once('=').unwrap_or((spec, ""));
        let mut part = FormPart {
            name: name.to_string(),
            filename: None,
            content_type: None,
            content: value.as_bytes().to_vec(),
        };
        if literal {
            return Ok(part);
        }
        let (file, upload) = match (value.strip_prefix('@'), value.strip_prefix('<')) {
            (Some(file), _) => (file, true),
            (None, Some(file)) => (file, false),
            (None, None) => {
                // `NAME=VALUE;type=TYPE`
                if let Some((text, kind)) = value.rsplit_once(";type=") {
                    part.content = text.as_bytes().to_vec();
                    part.content_type = Some(kind.to_string());
                }
                return Ok(part);
            }
        };
        // `@FILE;type=TYPE;filename=NAME`
        let mut pieces = file.split(';');
        let path = pieces.next().unwrap_or_default();
        for piece in pieces {
            match piece.split_once('=') {
                Some(("type", kind)) => part.content_type = Some(kind.to_string()),
                Some(("filename", name)) => part.filename = Some(name.trim_matches('"').into()),
                _ => {}
            }
        }
        part.content = net::read_input(ctx, path).await.map_err(|e| {
            Error::new(
                26,
                format!("Failed to open/read local data from file/application: {path}: {e}"),
            )
        })?;
        if upload {
            let base = path.rsplit('/').next().unwrap_or(path);
            part.filename.get_or_insert_with(|| base.to_string());
            part.content_type
                .get_or_insert_with(|| guess_type(base).to_string());
        }
        Ok(part)
    }
}

/// The content type curl gives a file it uploads, by its extension.
fn guess_type(name: &str) -> &'static str {
    let extension = name
        .rsplit_once('.')
        .map_or("", |(_, e)| e)
        .to_ascii_lowercase();
    match extension.as_str() {
        "txt" => "text/plain",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "json" => "application/json",
        "xml" => "application/xml",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

/// The boundary and body of a multipart form of `parts`.
fn multipart(parts: &[FormPart]) -> (String, Vec<u8>) {
    // A boundary from a hash of the contents, longer until none of them holds it.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.name.bytes().chain(part.content.iter().copied()) {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    let mut boundary = format!("------------------------{hash:016x}");
    while parts.iter().any(|p| {
        p.content
            .windows(boundary.len())
            .any(|w| w == boundary.as_bytes())
    }) {
        hash = hash.wrapping_mul(0x0100_0000_01b3).wrapping_add(1);
        boundary.push_str(&format!("{:04x}", hash & 0xffff));
    }
    let mut body = Vec::new();
    for part in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        let mut disposition = format!("Content-Disposition: form-data; name=\"{}\"", part.name);
        if let Some(filename) = &part.filename {
            disposition.push_str(&format!("; filename=\"{filename}\""));
        }
        body.extend_from_slice(disposition.as_bytes());
        body.extend_from_slice(b"\r\n");
        if let Some(kind) = &part.content_type {
            body.extend_from_slice(format!("Content-Type: {kind}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(&part.content);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (boundary, body)
}

/// The request's headers: curl's own (User-Agent, Accept, authentication, the body's
/// type), those of `-H` replacing them by name; `Name:` sends none of that name.
async fn headers(
    ctx: &BuiltinContext<'_>,
    options: &Options,
    body: &Body,
    credentials: Option<&str>,
) -> Result<Vec<(String, String)>, Error> {
    let mut own: Vec<(String, String)> = Vec::new();
    match options.user_agent.as_deref() {
        Some("") => {}
        Some(agent) => own.push(("User-Agent".into(), agent.into())),
        None => own.push(("User-Agent".into(), USER_AGENT.into())),
    }
    let accept = if body.json { "application/json" } else { "*/*" };
    own.push(("Accept".into(), accept.into()));
    if let Some(user) = options.user.as_deref().or(credentials) {
        own.push(("Authorization".into(), net::basic_auth(user)));
    } else if let Some(token) = &options.bearer {
        own.push(("Authorization".into(), format!("Bearer {token}")));
    }
    if let Some(referer) = &options.referer {
        own.push(("Referer".into(), referer.clone()));
    }
    let cookies: Vec<&str> = options
        .cookies
        .iter()
        .filter(|c| c.contains('='))
        .map(String::as_str)
        .collect();
    if !cookies.is_empty() {
        own.push(("Cookie".into(), cookies.join("; ")));
    }
    if let Some(range) = &options.range {
        own.push(("Range".into(), format!("bytes={range}")));
    }
    if !options.get {
        if let Some(kind) = &body.content_type {
            own.push(("Content-Type".into(), kind.clone()));
        }
    }
    // `-H @FILE`: a header a line.
    let mut lines = Vec::new();
    for header in &options.headers {
        match header.strip_prefix('@') {
            Some(name) => {
                let file = net::read_input(ctx, name)
                    .await
                    .map_err(|e| Error::new(26, format!("Failed to open {name}: {e}")))?;
                let text = String::from_utf8_lossy(&file).into_owned();
                lines.extend(
                    text.lines()
                        .map(|l| l.trim_end_matches('\r').to_string())
                        .filter(|l| !l.trim().is_empty()),
                );
            }
            None => lines.push(header.clone()),
        }
    }
    let mut given = Vec::new();
    let mut named = Vec::new();
    for line in &lines {
        if let Some((name, value)) = line.split_once(':') {
            let (name, value) = (name.trim(), value.trim());
            named.push(name.to_ascii_lowercase());
            if !value.is_empty() {
                given.push((name.to_string(), value.to_string()));
            }
        } else if let Some(name) = line.trim().strip_suffix(';') {
            named.push(name.to_ascii_lowercase());
            given.push((name.to_string(), String::new()));
        }
    }
    own.retain(|(name, _)| !named.contains(&name.to_ascii_lowercase()));
    own.extend(given);
    Ok(own)
}

/// Writes `bytes` to `target`, into `out` for the standard streams.
async fn deliver(
    ctx: &BuiltinContext<'_>,
    target: &Target,
    bytes: &[u8],
    make_dirs: bool,
    out: &mut Outcome,
) -> Result<(), String> {
    match target {
        Target::Stdout => out.stdout.extend_from_slice(bytes),
        Target::Stderr => out.stderr.extend_from_slice(bytes),
        Target::Null => {}
        Target::File(path) => {
            net::write_file(ctx.fs.as_ref(), path, bytes, false, make_dirs).await?;
        }
    }
    Ok(())
}

/// The name of the file `-J` takes from a `Content-Disposition` header.
fn disposition_name(response: &Response) -> Option<String> {
    let header = response.header("content-disposition")?;
    let start = header.find("filename=")? + "filename=".len();
    let value = header[start..].split(';').next()?.trim().trim_matches('"');
    let name = value.rsplit(['/', '\\']).next()?;
    (!name.is_empty()).then(|| name.to_string())
}

/// One URL's transfer: the request, its output, `-w`; its exit status.
#[allow(clippy::too_many_arguments)]
async fn transfer(
    dir: &Path,
    ctx: &BuiltinContext<'_>,
    options: &Options,
    body: &Body,
    write_out: Option<&str>,
    index: usize,
    given: &str,
    out: &mut Outcome,
) -> i32 {
    let started = Instant::now();
    let mut info = Info {
        input_url: given.to_string(),
        ..Info::default()
    };
    let result = exchange(dir, ctx, options, body, index, given, out, &mut info).await;
    info.exit_code = match &result {
        Ok(()) => 0,
        Err(e) => e.code,
    };
    info.seconds = started.elapsed().as_secs_f64();
    if let Err(e) = &result {
        info.error = e.message.clone();
        let always = e.message == net::NO_NETWORK;
        if options.errors_shown() || always {
            out.stderr
                .extend_from_slice(format!("curl: ({}) {}\n", e.code, e.message).as_bytes());
        }
    }
    if let Some(format) = write_out {
        let (stdout, stderr) = format_write_out(format, &info);
        out.stdout.extend_from_slice(&stdout);
        out.stderr.extend_from_slice(&stderr);
    }
    info.exit_code
}

/// What `-w` can print about a transfer.
#[derive(Default)]
struct Info {
    input_url: String,
    url: String,
    method: String,
    response: Option<Response>,
    exit_code: i32,
    error: String,
    seconds: f64,
    filename: String,
    upload_size: usize,
    header_size: usize,
    location: bool,
}

/// The request for the URL `given` and what its answer makes.
#[allow(clippy::too_many_arguments)]
async fn exchange(
    dir: &Path,
    ctx: &BuiltinContext<'_>,
    options: &Options,
    body: &Body,
    index: usize,
    given: &str,
    out: &mut Outcome,
    info: &mut Info,
) -> Result<(), Error> {
    let url = net::normalize_url(given);
    let scheme = net::scheme(&url);
    if scheme != "http" && scheme != "https" {
        return Err(Error::new(
            1,
            format!("Protocol \"{scheme}\" not supported"),
        ));
    }
    let (credentials, mut url) = net::split_credentials(&url);
    let mut request_body = body.bytes.clone();
    if options.get {
        if let Some(data) = request_body.take().filter(|d| !d.is_empty()) {
            url = net::with_query(&url, &String::from_utf8_lossy(&data));
        }
    }
    if let Some(upload) = &options.upload {
        if url.ends_with('/') {
            url.push_str(upload.rsplit('/').next().unwrap_or(upload));
        }
    }
    let method = match &options.method {
        Some(method) => method.to_ascii_uppercase(),
        None if options.head => "HEAD".into(),
        None if options.get => "GET".into(),
        None if options.upload.is_some() => "PUT".into(),
        None if request_body.is_some() => "POST".into(),
        None => "GET".into(),
    };
    info.url = url.clone();
    info.method = method.clone();
    info.location = options.location;
    info.upload_size = request_body.as_ref().map_or(0, Vec::len);

    // Where the body goes, decided before the request, as curl does.
    let output = options
        .outputs
        .get(index)
        .cloned()
        .or_else(|| (options.remote_name_all).then_some(Output::Remote));
    let target = match &output {
        None => Target::Stdout,
        Some(Output::File(name)) => {
            info.filename = name.clone();
            net::target_of(ctx.cwd, &in_output_dir(options, name), true)
        }
        Some(Output::Remote) => {
            let Some(name) = net::remote_name(&url) else {
                return Err(Error::new(23, "Remote file name has no length"));
            };
            info.filename = name.to_string();
            net::target_of(ctx.cwd, &in_output_dir(options, name), false)
        }
    };

    let headers = headers(ctx, options, body, credentials.as_deref()).await?;
    let request = Request {
        method,
        url,
        headers,
        body: request_body,
        follow_redirects: options.location,
    };
    if options.verbose {
        let mut text = format!(
            "* Request through /net/fetch (runbox's host makes it)\n> {} {} HTTP/1.1\n> Host: {}\n",
            request.method,
            net::target(&request.url),
            net::host(&request.url)
        );
        for (name, value) in &request.headers {
            text.push_str(&format!("> {name}: {value}\n"));
        }
        text.push_str(">\n");
        out.stderr.extend_from_slice(text.as_bytes());
    }
    let response = net::fetch(dir, &request)
        .map_err(|failure| Error::new(failure_code(&failure), failure.message))?;
    let head = net::header_block(&response, "\r\n");
    info.header_size = head.len();
    if options.verbose {
        let mut text = String::new();
        for line in head.split("\r\n").take_while(|l| !l.is_empty()) {
            text.push_str(&format!("< {line}\n"));
        }
        text.push_str("<\n");
        out.stderr.extend_from_slice(text.as_bytes());
    }
    if response.truncated {
        out.stderr
            .extend_from_slice(net::cut_notice(&request.url, response.body.len()).as_bytes());
    }
    let result = finish(
        ctx,
        options,
        &response,
        &head,
        output.as_ref(),
        target,
        &mut info.filename,
        out,
    )
    .await;
    info.response = Some(response);
    result
}

/// Writes the answer `response` (its headers `head`) where the options say.
#[allow(clippy::too_many_arguments)]
async fn finish(
    ctx: &BuiltinContext<'_>,
    options: &Options,
    response: &Response,
    head: &str,
    output: Option<&Output>,
    mut target: Target,
    filename: &mut String,
    out: &mut Outcome,
) -> Result<(), Error> {
    let status = response.status;
    let failed = (options.fail || options.fail_with_body) && status >= 400;
    if failed && !options.fail_with_body {
        return Err(Error::new(
            22,
            format!("The requested URL returned error: {status}"),
        ));
    }
    if options.remote_header_name && output == Some(&Output::Remote) {
        if let Some(name) = disposition_name(response) {
            target = net::target_of(ctx.cwd, &in_output_dir(options, &name), false);
            *filename = name;
        }
    }
    if let Some(name) = &options.dump_header {
        let dump = net::target_of(ctx.cwd, name, true);
        deliver(ctx, &dump, head.as_bytes(), options.create_dirs, out)
            .await
            .map_err(|e| Error::new(23, format!("Failed writing header to {name}: {e}")))?;
    }
    let mut content = Vec::new();
    if options.include || options.head {
        content.extend_from_slice(head.as_bytes());
    }
    if !options.head {
        content.extend_from_slice(&response.body);
    }
    deliver(ctx, &target, &content, options.create_dirs, out)
        .await
        .map_err(|e| {
            Error::new(
                23,
                format!("Failure writing output to destination: {filename}: {e}"),
            )
        })?;
    if failed {
        return Err(Error::new(
            22,
            format!("The requested URL returned error: {status}"),
        ));
    }
    Ok(())
}

/// `name` (of `-o` or `-O`) in `--output-dir`'s directory.
fn in_output_dir(options: &Options, name: &str) -> String {
    match &options.output_dir {
        Some(dir) if !name.starts_with('/') && name != "-" => {
            format!("{}/{name}", dir.trim_end_matches('/'))
        }
        _ => name.to_string(),
    }
}

/// `-w FORMAT` for a transfer: what goes to stdout and to stderr (`%{stderr}` switches).
fn format_write_out(format: &str, info: &Info) -> (Vec<u8>, Vec<u8>) {
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let mut to_stderr = false;
    let mut rest = format;
    while let Some(c) = rest.chars().next() {
        let sink = if to_stderr { &mut stderr } else { &mut stdout };
        if c == '\\' && rest.len() > 1 {
            let next = rest[1..].chars().next().unwrap_or('\\');
            match next {
                'n' => sink.push(b'\n'),
                'r' => sink.push(b'\r'),
                't' => sink.push(b'\t'),
                other => {
                    sink.push(b'\\');
                    sink.extend_from_slice(other.to_string().as_bytes());
                }
            }
            rest = &rest[1 + next.len_utf8()..];
        } else if let Some(after) = rest.strip_prefix("%%") {
            sink.push(b'%');
            rest = after;
        } else if let Some((name, after)) = rest
            .strip_prefix("%header{")
            .and_then(|r| r.split_once('}'))
        {
            if let Some(value) = info.response.as_ref().and_then(|r| r.header(name)) {
                sink.extend_from_slice(value.as_bytes());
            }
            rest = after;
        } else if let Some((name, after)) = rest.strip_prefix("%{").and_then(|r| r.split_once('}'))
        {
            match name {
                "stderr" => to_stderr = true,
                "stdout" => to_stderr = false,
                _ => match variable(name, info) {
                    Some(value) => sink.extend_from_slice(value.as_bytes()),
                    None => stderr.extend_from_slice(
                        format!("curl: unknown --write-out variable: '{name}'\n").as_bytes(),
                    ),
                },
            }
            rest = after;
        } else {
            sink.extend_from_slice(c.to_string().as_bytes());
            rest = &rest[c.len_utf8()..];
        }
    }
    (stdout, stderr)
}

/// The value of the `-w` variable `name`.
fn variable(name: &str, info: &Info) -> Option<String> {
    let response = info.response.as_ref();
    let status = response.map_or(0, |r| r.status);
    Some(match name {
        "http_code" | "response_code" => format!("{status:03}"),
        "url_effective" => match response {
            Some(r) if !r.url.is_empty() => r.url.clone(),
            _ => info.url.clone(),
        },
        "url" => info.input_url.clone(),
        "method" => info.method.clone(),
        "scheme" => net::scheme(&info.url).to_ascii_uppercase(),
        "content_type" => response
            .and_then(|r| r.header("content-type"))
            .unwrap_or_default()
            .to_string(),
        "size_download" => response.map_or(0, |r| r.body.len()).to_string(),
        "size_header" => info.header_size.to_string(),
        "size_upload" | "size_request" => info.upload_size.to_string(),
        "num_headers" => response.map_or(0, |r| r.headers.len()).to_string(),
        "exitcode" => info.exit_code.to_string(),
        "errormsg" => info.error.clone(),
        "filename_effective" => info.filename.clone(),
        "time_total" | "time_starttransfer" => format!("{:.6}", info.seconds),
        "redirect_url" => match response {
            Some(r) if !info.location && (300..400).contains(&r.status) => r
                .header("location")
                .map(|location| absolute(&info.url, location))
                .unwrap_or_default(),
            _ => String::new(),
        },
        "header_json" => {
            let mut object = serde_json::Map::new();
            for (name, value) in response.map(|r| r.headers.as_slice()).unwrap_or_default() {
                let entry = object
                    .entry(name.to_ascii_lowercase())
                    .or_insert_with(|| serde_json::Value::Array(Vec::new()));
                if let serde_json::Value::Array(values) = entry {
                    values.push(serde_json::Value::String(value.clone()));
                }
            }
            serde_json::Value::Object(object).to_string()
        }
        _ => return None,
    })
}

/// `location` (from a `Location` header) as an absolute URL, against `base`.
fn absolute(base: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_string();
    }
    let scheme = net::scheme(base);
    let host = net::host(base);
    if let Some(rest) = location.strip_prefix("//") {
        return format!("{scheme}://{rest}");
    }
    if location.starts_with('/') {
        return format!("{scheme}://{host}{location}");
    }
    let path = net::target(base);
    let path = path.split('?').next().unwrap_or("/");
    let directory = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    format!("{scheme}://{host}{directory}{location}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Options::parse(&args)
    }

    #[test]
    fn short_flags_combine_and_take_values() {
        let o = parse(&["-sSLfo", "out", "-XPOST", "-H", "A: b", "-dx=1", "http://h"]).unwrap();
        assert!(o.silent && o.show_error && o.location && o.fail);
        assert_eq!(o.outputs, vec![Output::File("out".into())]);
        assert_eq!(o.method.as_deref(), Some("POST"));
        assert_eq!(o.headers, vec!["A: b".to_string()]);
        assert_eq!(o.data, vec![Data::Ascii("x=1".into())]);
        assert_eq!(o.urls, vec!["http://h".to_string()]);
        let o = parse(&["--request=PUT", "--silent", "--", "-not-an-option"]).unwrap();
        assert_eq!(o.method.as_deref(), Some("PUT"));
        assert_eq!(o.urls, vec!["-not-an-option".to_string()]);
        let o = parse(&["-O", "-k", "--no-silent", "-m", "5", "u"]).unwrap();
        assert_eq!(o.outputs, vec![Output::Remote]);
        assert!(!o.silent);
    }

    #[test]
    fn a_bad_command_line_says_so() {
        assert_eq!(
            parse(&["--frobnicate", "u"]).unwrap_err(),
            "curl: option --frobnicate: is unknown\ncurl: try 'curl --help' for more information\n"
        );
        assert_eq!(
            parse(&["-sz", "u"]).unwrap_err(),
            "curl: option -z: is unknown\ncurl: try 'curl --help' for more information\n"
        );
        assert_eq!(
            parse(&["u", "-o"]).unwrap_err(),
            "curl: option -o: requires parameter\ncurl: try 'curl --help' for more information\n"
        );
        assert!(parse(&["--silent=yes"]).is_err());
    }

    #[test]
    fn write_out_formats_variables_and_escapes() {
        let info = Info {
            input_url: "h/x".into(),
            url: "http://h/x".into(),
            method: "GET".into(),
            response: Some(Response {
                status: 301,
                reason: "Moved".into(),
                url: "http://h/x".into(),
                headers: vec![
                    ("Content-Type".into(), "text/plain".into()),
                    ("Location".into(), "y/z".into()),
                ],
                body: b"abc".to_vec(),
                ..Response::default()
            }),
            ..Info::default()
        };
        let (stdout, stderr) = format_write_out(
            "%{http_code} %{size_download} %{content_type} %header{location} %{redirect_url}\\n100%% \\x%{stderr}%{method}%{nope}",
            &info,
        );
        assert_eq!(
            String::from_utf8(stdout).unwrap(),
            "301 3 text/plain y/z http://h/y/z\n100% \\x"
        );
        assert_eq!(
            String::from_utf8(stderr).unwrap(),
            "GETcurl: unknown --write-out variable: 'nope'\n"
        );
        let failed = Info::default();
        assert_eq!(format_write_out("%{http_code}", &failed).0, b"000");
    }

    #[test]
    fn multipart_bodies_have_a_boundary_their_parts_lack() {
        let parts = [
            FormPart {
                name: "a".into(),
                filename: None,
                content_type: None,
                content: b"1".to_vec(),
            },
            FormPart {
                name: "f".into(),
                filename: Some("x.json".into()),
                content_type: Some("application/json".into()),
                content: b"{}".to_vec(),
            },
        ];
        let (boundary, body) = multipart(&parts);
        assert_eq!(
            String::from_utf8(body).unwrap(),
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n\
                 --{boundary}\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x.json\"\r\n\
                 Content-Type: application/json\r\n\r\n{{}}\r\n--{boundary}--\r\n"
            )
        );
    }

    #[test]
    fn locations_become_absolute() {
        assert_eq!(absolute("http://h/a/b?q", "c"), "http://h/a/c");
        assert_eq!(absolute("https://h/a/b", "/c"), "https://h/c");
        assert_eq!(absolute("https://h/a", "//g/c"), "https://g/c");
        assert_eq!(absolute("https://h/a", "http://x/"), "http://x/");
    }
}
