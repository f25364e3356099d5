//! `wget`: downloads through the device `/net/fetch` (docs/network.md), with wget's usual
//! flags, messages and exit statuses. It replaces bashkit's own `wget`, which needs a
//! client of its own that a sandbox without sockets cannot have.
//!
//! ```text
//! wget [-qS] [-O FILE | -O -] [--header='Name: value']... [--post-data=DATA]
//!      [--method=METHOD] [-P DIR] URL...
//! ```
//!
//! A URL's body goes to the file its path names (`index.html` when it names none; `.1`,
//! `.2`, … appended when that file is there), to `-O FILE`, or to stdout with `-O -`.
//! Messages go to stderr. Exit status 4 when the host refused or could not make the
//! request, 8 for a status of 400 or more, 3 when a file cannot be written, 2 for a bad
//! command line, 1 otherwise.

use std::path::{Path, PathBuf};

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult};

use crate::args::{self, Problem};
use crate::net::{self, Failure, Request, Target};

const USER_AGENT: &str = "Wget/1.21.4";

const USAGE: &str = "Usage: wget [OPTION]... [URL]...\n";

const HELP: &str = "\
Usage: wget [OPTION]... [URL]...
Requests go through runbox's /net/fetch: the host makes them, within its network policy.
  -O,  --output-document=FILE  write the documents to FILE (- for stdout)
  -P,  --directory-prefix=DIR  save files in DIR
  -nc, --no-clobber            skip a download whose file is there
  -q,  --quiet                 no messages
  -nv, --no-verbose            one line a download
  -S,  --server-response       print the answer's headers
  -o,  --output-file=FILE      write the messages to FILE (-a: append)
  -U,  --user-agent=AGENT      the User-Agent header
       --header=STRING         a header to send ('Name: value')
       --post-data=STRING      POST STRING (--post-file=FILE: the file)
       --method=METHOD         the request's method (--body-data, --body-file: its body)
       --user=USER --password=PASS  basic authentication
       --referer=URL           the Referer header
       --max-redirect=NUM      0: do not follow redirects
       --content-on-error      save the body of an HTTP error too
       --save-headers          save the headers before the body
       --spider                only check that the URL is there
  -i,  --input-file=FILE       the URLs in FILE
Exit status: 0 done, 1 a generic error, 2 a bad command line, 3 a file could not be
written, 4 the request was refused or failed, 8 the server answered an error.
";

/// The `wget` builtin, over the network directory `dir` (`/net` in the component).
pub struct WgetCommand {
    dir: PathBuf,
}

impl WgetCommand {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        WgetCommand { dir: dir.into() }
    }
}

#[async_trait]
impl Builtin for WgetCommand {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let (stdout, stderr, status) = run(&self.dir, &ctx).await;
        Ok(ExecResult {
            stdout: stdout.into(),
            stderr: stderr.into(),
            exit_code: status,
            ..ExecResult::default()
        })
    }
}

/// The command line.
#[derive(Debug, Default)]
struct Options {
    output_document: Option<String>,
    /// `-o FILE` (false) or `-a FILE` (true): where the messages go.
    log_file: Option<(String, bool)>,
    quiet: bool,
    no_verbose: bool,
    server_response: bool,
    headers: Vec<String>,
    post_data: Option<String>,
    post_file: Option<String>,
    method: Option<String>,
    user_agent: Option<String>,
    user: Option<String>,
    password: Option<String>,
    prefix: Option<String>,
    max_redirect: Option<String>,
    input_file: Option<String>,
    referer: Option<String>,
    content_on_error: bool,
    no_clobber: bool,
    spider: bool,
    save_headers: bool,
    urls: Vec<String>,
    help: bool,
    version: bool,
}

/// Long options that take a value (those only accepted are in [`IGNORED_WITH_VALUE`]).
const WITH_VALUE: &[&str] = &[
    "output-document",
    "output-file",
    "append-output",
    "header",
    "post-data",
    "post-file",
    "body-data",
    "body-file",
    "method",
    "user-agent",
    "user",
    "password",
    "http-user",
    "http-password",
    "directory-prefix",
    "max-redirect",
    "input-file",
    "referer",
];

/// Options taken for compatibility whose value does not matter here.
const IGNORED_WITH_VALUE: &[&str] = &[
    "tries",
    "timeout",
    "connect-timeout",
    "read-timeout",
    "dns-timeout",
    "wait",
    "waitretry",
    "quota",
    "limit-rate",
    "execute",
    "load-cookies",
    "save-cookies",
    "ca-certificate",
    "ca-directory",
    "certificate",
    "private-key",
    "default-page",
    "progress",
    "local-encoding",
    "remote-encoding",
    "restrict-file-names",
    "bind-address",
    "secure-protocol",
    "compression",
];

/// Flags that change something here.
const FLAGS: &[&str] = &[
    "quiet",
    "verbose",
    "no-verbose",
    "server-response",
    "content-on-error",
    "no-clobber",
    "spider",
    "save-headers",
    "help",
    "version",
];

/// Flags taken for compatibility that change nothing here.
const IGNORED_FLAGS: &[&str] = &[
    "continue",
    "no-check-certificate",
    "timestamping",
    "no-cache",
    "no-cookies",
    "content-disposition",
    "trust-server-names",
    "inet4-only",
    "inet6-only",
    "show-progress",
    "no-show-progress",
    "ignore-length",
    "retry-connrefused",
    "auth-no-challenge",
    "no-directories",
    "no-host-directories",
    "force-directories",
    "no-parent",
    "debug",
    "keep-session-cookies",
    "no-dns-cache",
    "no-proxy",
    "https-only",
    "no-hsts",
    "no-config",
    "adjust-extension",
    "random-wait",
    "xattr",
];

/// Options that would fetch more than the URLs given.
const UNSUPPORTED: &[&str] = &[
    "recursive",
    "mirror",
    "page-requisites",
    "convert-links",
    "background",
];

fn short_option(c: char) -> Option<&'static str> {
    Some(match c {
        'O' => "output-document",
        'o' => "output-file",
        'a' => "append-output",
        'P' => "directory-prefix",
        'U' => "user-agent",
        'i' => "input-file",
        'q' => "quiet",
        'v' => "verbose",
        'S' => "server-response",
        'h' => "help",
        'V' => "version",
        't' => "tries",
        'T' => "timeout",
        'w' => "wait",
        'e' => "execute",
        'Q' => "quota",
        'c' => "continue",
        'N' => "timestamping",
        'd' => "debug",
        'x' => "force-directories",
        '4' => "inet4-only",
        '6' => "inet6-only",
        'r' => "recursive",
        'm' => "mirror",
        'p' => "page-requisites",
        'k' => "convert-links",
        'b' => "background",
        _ => return None,
    })
}

fn takes_value(name: &str) -> Option<bool> {
    if WITH_VALUE.contains(&name) || IGNORED_WITH_VALUE.contains(&name) {
        Some(true)
    } else if FLAGS.contains(&name) || IGNORED_FLAGS.contains(&name) || UNSUPPORTED.contains(&name)
    {
        Some(false)
    } else {
        None
    }
}

/// A bad command line: what wget says, with its exit status.
fn usage_error(message: &str, status: i32) -> (String, i32) {
    (
        format!("wget: {message}\n{USAGE}\nTry `wget --help' for more options.\n"),
        status,
    )
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, (String, i32)> {
        let mut options = Options::default();
        args::parse(&mut options, args)?;
        Ok(options)
    }

    fn apply(&mut self, name: &str, value: Option<String>) -> Result<(), (String, i32)> {
        let text = || value.clone().unwrap_or_default();
        match name {
            "output-document" => self.output_document = Some(text()),
            "output-file" => self.log_file = Some((text(), false)),
            "append-output" => self.log_file = Some((text(), true)),
            // `--header=` alone clears the headers given before it.
            "header" if text().is_empty() => self.headers.clear(),
            "header" => self.headers.push(text()),
            "post-data" | "body-data" => self.post_data = Some(text()),
            "post-file" | "body-file" => self.post_file = Some(text()),
            "method" => self.method = Some(text()),
            "user-agent" => self.user_agent = Some(text()),
            "user" | "http-user" => self.user = Some(text()),
            "password" | "http-password" => self.password = Some(text()),
            "directory-prefix" => self.prefix = Some(text()),
            "max-redirect" => self.max_redirect = Some(text()),
            "input-file" => self.input_file = Some(text()),
            "referer" => self.referer = Some(text()),
            "quiet" => self.quiet = true,
            "verbose" => {
                self.quiet = false;
                self.no_verbose = false;
            }
            "no-verbose" => self.no_verbose = true,
            "server-response" => self.server_response = true,
            "content-on-error" => self.content_on_error = true,
            "no-clobber" => self.no_clobber = true,
            "spider" => self.spider = true,
            "save-headers" => self.save_headers = true,
            "help" => self.help = true,
            "version" => self.version = true,
            _ if UNSUPPORTED.contains(&name) => {
                return Err((
                    format!(
                        "wget: --{name} is not supported here: wget fetches only the URLs it is given\n"
                    ),
                    1,
                ))
            }
            _ => {}
        }
        Ok(())
    }
}

impl args::Command for Options {
    type Error = (String, i32);
    const SPLITS_ONLY_VALUED: bool = false;

    fn takes_value(name: &str) -> Option<bool> {
        takes_value(name)
    }

    fn short(c: char) -> Option<&'static str> {
        short_option(c)
    }

    fn word(arg: &str) -> Option<&'static str> {
        match arg {
            "-nv" => Some("no-verbose"),
            "-nc" => Some("no-clobber"),
            "-nd" => Some("no-directories"),
            "-nH" => Some("no-host-directories"),
            "-np" => Some("no-parent"),
            _ => None,
        }
    }

    fn set(&mut self, name: &str, value: Option<String>) -> Result<(), (String, i32)> {
        self.apply(name, value)
    }

    fn operand(&mut self, arg: &str) {
        self.urls.push(arg.to_string());
    }

    fn problem(&mut self, problem: Problem) -> Result<(), (String, i32)> {
        let message = match problem {
            Problem::UnknownLong(name) => format!("unrecognized option '--{name}'"),
            Problem::UnknownShort(c) => format!("invalid option -- '{c}'"),
            Problem::LongWithoutValue(name) => format!("option '--{name}' requires an argument"),
            Problem::ShortWithoutValue(c) => format!("option requires an argument -- '{c}'"),
        };
        Err(usage_error(&message, 2))
    }
}

/// wget's exit status of a run whose downloads ended with `a` and `b`: an error beats
/// success, and of two errors the lower status wins, but 1 (generic) loses to the others.
fn worse(a: i32, b: i32) -> i32 {
    match (a, b) {
        (0, other) | (other, 0) => other,
        (1, other) | (other, 1) => other,
        (a, b) => a.min(b),
    }
}

/// wget's exit status for a request the host did not make or complete.
fn failure_code(failure: &Failure) -> i32 {
    match failure.kind.as_str() {
        "bad_request" => 1,
        // not_allowed, unavailable, limit, timeout and no network at all.
        _ => 4,
    }
}

/// What one run prints and writes, as it goes.
struct Run<'a, 'c> {
    ctx: &'a BuiltinContext<'c>,
    options: &'a Options,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// The messages (stderr, or `-o`'s file).
    log: String,
    /// Whether `-O FILE` has been written once (the next documents are appended).
    document_started: bool,
}

impl Run<'_, '_> {
    /// A message of the default (verbose) output.
    fn verbose(&mut self, text: &str) {
        if !self.options.quiet && !self.options.no_verbose {
            self.log.push_str(text);
        }
    }

    /// A message that `-nv` prints too.
    fn brief(&mut self, text: &str) {
        if !self.options.quiet {
            self.log.push_str(text);
        }
    }
}

/// `wget ARGS...` in the shell of `ctx`, through the device in `dir`: (stdout, stderr,
/// exit status).
pub async fn run(dir: &Path, ctx: &BuiltinContext<'_>) -> (Vec<u8>, Vec<u8>, i32) {
    let mut options = match Options::parse(ctx.args) {
        Ok(options) => options,
        Err((message, status)) => return (Vec::new(), message.into_bytes(), status),
    };
    if options.help {
        return (HELP.as_bytes().to_vec(), Vec::new(), 0);
    }
    if options.version {
        let text = format!("GNU {USER_AGENT} (runbox: requests go through /net/fetch)\n");
        return (text.into_bytes(), Vec::new(), 0);
    }
    if let Some(name) = options.input_file.clone() {
        match net::read_input(ctx, &name).await {
            Ok(bytes) => options.urls.extend(
                String::from_utf8_lossy(&bytes)
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .map(str::to_string),
            ),
            Err(e) => {
                return (
                    Vec::new(),
                    format!("{name}: {e}\nNo URLs found in {name}.\n").into_bytes(),
                    1,
                )
            }
        }
    }
    if options.urls.is_empty() {
        let (message, status) = usage_error("missing URL", 1);
        return (Vec::new(), message.into_bytes(), status);
    }
    let body = match (&options.post_data, &options.post_file) {
        (Some(data), _) => Some(data.as_bytes().to_vec()),
        (None, Some(name)) => match net::read_input(ctx, name).await {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                return (Vec::new(), format!("wget: {name}: {e}\n").into_bytes(), 3);
            }
        },
        (None, None) => None,
    };
    let mut run = Run {
        ctx,
        options: &options,
        stdout: Vec::new(),
        stderr: Vec::new(),
        log: String::new(),
        document_started: false,
    };
    let mut status = 0;
    for url in &options.urls {
        let done = download(dir, &mut run, url, body.as_deref()).await;
        status = worse(status, done);
    }
    let log = std::mem::take(&mut run.log);
    match &options.log_file {
        Some((name, append)) => {
            let path = net::resolve(ctx.cwd, name);
            if let Err(e) =
                net::write_file(ctx.fs.as_ref(), &path, log.as_bytes(), *append, false).await
            {
                run.stderr
                    .extend_from_slice(format!("wget: {name}: {e}\n").as_bytes());
                status = worse(status, 3);
            }
        }
        None => run.stderr.extend_from_slice(log.as_bytes()),
    }
    (run.stdout, run.stderr, status)
}

/// One URL: its request, its messages, its file; its exit status.
async fn download(dir: &Path, run: &mut Run<'_, '_>, given: &str, body: Option<&[u8]>) -> i32 {
    let options = run.options;
    let ctx = run.ctx;
    let url = net::normalize_url(given);
    let scheme = net::scheme(&url);
    if scheme != "http" && scheme != "https" {
        run.brief(&format!("{given}: Unsupported scheme '{scheme}'.\n"));
        return 1;
    }
    let (credentials, url) = net::split_credentials(&url);

    // Where the document goes.
    let target = if options.spider {
        Target::Null
    } else if let Some(name) = &options.output_document {
        net::target_of(ctx.cwd, name, true)
    } else {
        let name = net::remote_name(&url).unwrap_or("index.html");
        let name = match &options.prefix {
            Some(prefix) => format!("{}/{name}", prefix.trim_end_matches('/')),
            None => name.to_string(),
        };
        let path = net::resolve(ctx.cwd, &name);
        if net::exists(ctx.fs.as_ref(), &path).await {
            if options.no_clobber {
                run.brief(&format!("File '{name}' already there; not retrieving.\n"));
                return 0;
            }
            // wget keeps the file that is there: NAME.1, NAME.2, ...
            let mut n = 1;
            loop {
                let candidate = PathBuf::from(format!("{}.{n}", path.display()));
                if !net::exists(ctx.fs.as_ref(), &candidate).await {
                    break Target::File(candidate);
                }
                n += 1;
            }
        } else {
            Target::File(path)
        }
    };
    let shown_name = match &target {
        Target::Stdout => "STDOUT".to_string(),
        Target::Stderr => "STDERR".to_string(),
        Target::Null => "/dev/null".to_string(),
        Target::File(path) => {
            // As the user named it: relative to the working directory when it is below it.
            let cwd = ctx.cwd.to_string_lossy();
            let full = path.to_string_lossy().into_owned();
            full.strip_prefix(&format!("{}/", cwd.trim_end_matches('/')))
                .map_or(full.clone(), str::to_string)
        }
    };

    let method = match &options.method {
        Some(method) => method.to_ascii_uppercase(),
        None if body.is_some() => "POST".into(),
        None if options.spider => "HEAD".into(),
        None => "GET".into(),
    };
    let mut headers: Vec<(String, String)> = vec![
        (
            "User-Agent".into(),
            options
                .user_agent
                .clone()
                .unwrap_or_else(|| USER_AGENT.into()),
        ),
        ("Accept".into(), "*/*".into()),
    ];
    let user = match (&options.user, &options.password) {
        (Some(user), password) => Some(format!("{user}:{}", password.as_deref().unwrap_or(""))),
        (None, _) => credentials,
    };
    if let Some(user) = user {
        headers.push(("Authorization".into(), net::basic_auth(&user)));
    }
    if let Some(referer) = &options.referer {
        headers.push(("Referer".into(), referer.clone()));
    }
    if body.is_some() {
        headers.push((
            "Content-Type".into(),
            "application/x-www-form-urlencoded".into(),
        ));
    }
    let given_headers: Vec<(String, String)> = options
        .headers
        .iter()
        .filter_map(|h| h.split_once(':'))
        .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
        .collect();
    headers.retain(|(name, _)| {
        !given_headers
            .iter()
            .any(|(given, _)| given.eq_ignore_ascii_case(name))
    });
    headers.extend(given_headers);
    let request = Request {
        method,
        url: url.clone(),
        headers,
        body: body.map(<[u8]>::to_vec),
        follow_redirects: options.max_redirect.as_deref().map(str::trim) != Some("0"),
    };

    run.verbose(&format!("--  {url}\n"));
    let response = match net::fetch(dir, &request) {
        Ok(response) => response,
        Err(failure) => {
            let message = format!("wget: {}\n", failure.message);
            if failure.message == net::NO_NETWORK && (options.quiet || options.log_file.is_some()) {
                run.stderr.extend_from_slice(message.as_bytes());
            } else {
                run.brief(&message);
            }
            return failure_code(&failure);
        }
    };
    if response.redirected && !response.url.is_empty() && response.url != url {
        run.verbose(&format!(
            "Location: {} [following]\n--  {}\n",
            response.url, response.url
        ));
    }
    let status_text = format!("{} {}", response.status, response.reason);
    let status_text = status_text.trim_end();
    if options.server_response {
        let mut text = String::new();
        if !options.quiet && !options.no_verbose {
            text.push_str("HTTP request sent, awaiting response... \n");
        }
        text.push_str(&format!("  {}\n", response.status_line()));
        for (name, value) in &response.headers {
            text.push_str(&format!("  {name}: {value}\n"));
        }
        // -S prints the headers even with -q.
        if options.quiet {
            run.stderr.extend_from_slice(text.as_bytes());
        } else {
            run.log.push_str(&text);
        }
    } else {
        run.verbose(&format!(
            "HTTP request sent, awaiting response... {status_text}\n"
        ));
    }
    if response.truncated {
        run.stderr
            .extend_from_slice(net::cut_notice(&url, response.body.len()).as_bytes());
    }
    let size = response.body.len();
    if (300..400).contains(&response.status) && !request.follow_redirects {
        if let Some(location) = response.header("location") {
            run.verbose(&format!("Location: {location}\n"));
        }
        run.brief("0 redirections exceeded.\n");
        return 8;
    }
    let error = response.status >= 400;
    if error {
        if options.no_verbose && !options.quiet {
            run.log.push_str(&format!("{url}:\n"));
        }
        run.brief(&format!("ERROR {status_text}.\n"));
        if options.spider {
            run.verbose("Remote file does not exist -- broken link!!!\n");
        }
        if !options.content_on_error {
            return 8;
        }
    }
    if options.spider {
        run.verbose("Remote file exists.\n\n");
        return 0;
    }
    let kind = response
        .header("content-type")
        .map(|t| format!(" [{t}]"))
        .unwrap_or_default();
    run.verbose(&format!(
        "Length: {size}{kind}\nSaving to: '{shown_name}'\n\n"
    ));
    let mut content = Vec::new();
    if options.save_headers {
        content.extend_from_slice(net::header_block(&response, "\r\n").as_bytes());
    }
    content.extend_from_slice(&response.body);
    let written = match &target {
        Target::Stdout => {
            run.stdout.extend_from_slice(&content);
            Ok(())
        }
        Target::Stderr => {
            run.stderr.extend_from_slice(&content);
            Ok(())
        }
        Target::Null => Ok(()),
        Target::File(path) => {
            // `-O FILE` holds every document; the first replaces what was there.
            let append = options.output_document.is_some() && run.document_started;
            let make_dirs = options.output_document.is_none() && options.prefix.is_some();
            net::write_file(ctx.fs.as_ref(), path, &content, append, make_dirs).await
        }
    };
    if let Err(e) = written {
        run.brief(&format!("Cannot write to '{shown_name}' ({e}).\n"));
        return 3;
    }
    run.document_started = true;
    if matches!(target, Target::Stdout) {
        run.verbose(&format!("written to stdout [{size}/{size}]\n\n"));
    } else {
        run.verbose(&format!("'{shown_name}' saved [{size}/{size}]\n\n"));
    }
    if options.no_verbose && !options.quiet && !error {
        run.log.push_str(&format!(
            "URL:{} [{size}/{size}] -> \"{shown_name}\" [1]\n",
            if response.url.is_empty() {
                &url
            } else {
                &response.url
            }
        ));
    }
    if error {
        8
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, (String, i32)> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Options::parse(&args)
    }

    #[test]
    fn options_parse_as_wget_takes_them() {
        let o = parse(&["-qO-", "--header=A: b", "--header", "C: d", "-nv", "u"]).unwrap();
        assert!(o.quiet && o.no_verbose);
        assert_eq!(o.output_document.as_deref(), Some("-"));
        assert_eq!(o.headers, vec!["A: b".to_string(), "C: d".to_string()]);
        assert_eq!(o.urls, vec!["u".to_string()]);
        let o = parse(&[
            "--post-data=x=1",
            "--method",
            "put",
            "-O",
            "f",
            "--tries=3",
            "u",
        ])
        .unwrap();
        assert_eq!(o.post_data.as_deref(), Some("x=1"));
        assert_eq!(o.method.as_deref(), Some("put"));
        assert_eq!(o.output_document.as_deref(), Some("f"));
        assert_eq!(parse(&["--bogus", "u"]).unwrap_err().1, 2);
        assert_eq!(parse(&["-Z", "u"]).unwrap_err().1, 2);
        assert_eq!(parse(&["u", "-O"]).unwrap_err().1, 2);
        assert_eq!(parse(&["-r", "u"]).unwrap_err().1, 1);
    }

    #[test]
    fn the_lower_error_status_wins_over_the_generic_one() {
        assert_eq!(worse(0, 8), 8);
        assert_eq!(worse(8, 4), 4);
        assert_eq!(worse(1, 8), 8);
        assert_eq!(worse(4, 1), 4);
        assert_eq!(worse(0, 1), 1);
    }
}
