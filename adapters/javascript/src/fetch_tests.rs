//! `fetch` run natively, its directory a temporary one: a regular file stands in for the
//! device `fetch` (the request overwrites its start, the answer is what follows), as
//! `tools_tests.rs` fakes `/tools/call`.

use std::path::PathBuf;

use crate::engine::Language;
use crate::tests::Session;

/// A temporary network directory, removed when dropped.
struct Net(PathBuf);

impl Net {
    fn new(name: &str) -> Net {
        let dir = std::env::temp_dir().join(format!("runbox-js-net-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Net(dir)
    }

    /// The device answers `answer` to a request of `request`'s length.
    fn answer(&self, request: &str, answer: &str) {
        let contents = format!("{}{answer}", " ".repeat(request.len()));
        std::fs::write(self.0.join("fetch"), contents).unwrap();
    }

    /// What the last request wrote.
    fn request(&self, len: usize) -> String {
        let contents = std::fs::read_to_string(self.0.join("fetch")).unwrap();
        contents[..len].to_string()
    }

    fn session(&self, language: Language) -> Session {
        let mut session = Session::of(language);
        session.set_net_dir(&self.0);
        session
    }

    fn run(&self, code: &str) -> (i32, String, String) {
        self.session(Language::JavaScript).run(code)
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const GET: &str = r#"{"method":"GET","url":"https://api.example.com/v1/items?page=2","headers":[],"follow_redirects":true}"#;
/// `{"items":[1,2]}` with a UTF-8 `é` after it, in base64.
const ITEMS: &str = r#"{"ok": true, "status": 200, "reason": "OK", "url": "https://api.example.com/v1/items?page=2",
 "redirected": false, "headers": [["content-type", "application/json"], ["set-cookie", "a=1"], ["set-cookie", "b=2"], ["X-Count", "2"]],
 "body_base64": "eyJpdGVtcyI6WzEsMl19", "truncated": false}"#;

#[test]
fn a_get_resolves_to_a_response() {
    let net = Net::new("get");
    net.answer(GET, ITEMS);
    let code = r#"const res = await fetch("https://api.example.com/v1/items?page=2");
console.log(res instanceof Response, res.headers instanceof Headers, res.ok, res.status, res.statusText, res.url, res.redirected, res.type);
console.log(res.headers.get("Content-Type"), res.headers.get("set-cookie"), res.headers.has("x-count"), res.headers.get("missing"));
console.log(res.bodyUsed, JSON.stringify(await res.json()), res.bodyUsed);
try { await res.text(); } catch (e) { console.log(e.name, e.message); }
"#;
    let (status, stdout, stderr) = net.run(code);
    assert_eq!((status, stderr.as_str()), (0, ""), "{stdout}");
    assert_eq!(
        stdout,
        "true true true 200 OK https://api.example.com/v1/items?page=2 false basic\n\
         application/json a=1, b=2 true null\n\
         false {\"items\":[1,2]} true\n\
         TypeError Body is unusable: Body has already been read\n"
    );
    assert_eq!(net.request(GET.len()), GET);
}

#[test]
fn a_post_sends_its_method_headers_and_body() {
    let net = Net::new("post");
    // A string body is sent as text, with the content-type it implies.
    let request = r#"{"method":"POST","url":"https://api.example.com/v1/items","headers":[["accept","application/json"],["authorization","Bearer __RUNBOX_SECRET_API_TOKEN__"],["content-type","text/plain;charset=UTF-8"]],"follow_redirects":true,"body":"{\"name\":\"é\"}"}"#;
    net.answer(
        request,
        r#"{"ok":true,"status":201,"reason":"Created","url":"https://api.example.com/v1/items","redirected":false,"headers":[],"body_base64":"","truncated":false}"#,
    );
    let code = r#"const res = await fetch("https://api.example.com/v1/items", {
  method: "post",
  headers: { Accept: "application/json", "Content-Length": "15", Authorization: "Bearer __RUNBOX_SECRET_API_TOKEN__", Host: "x" },
  body: JSON.stringify({ name: "é" }),
});
console.log(res.status, res.statusText, res.ok, JSON.stringify(await res.text()));
"#;
    let (status, stdout, stderr) = net.run(code);
    assert_eq!((status, stderr.as_str()), (0, ""), "{stdout}");
    assert_eq!(stdout, "201 Created true \"\"\n");
    assert_eq!(net.request(request.len()), request);

    // Bytes are sent as base64; headers as pairs (a Headers, or an array), kept apart.
    let request = r#"{"method":"PUT","url":"http://files.example.com/blob","headers":[["x-a","1"],["x-a","2"]],"follow_redirects":true,"body_base64":"AP+A"}"#;
    let answer = r#"{"ok":true,"status":204,"reason":"No Content","url":"http://files.example.com/blob","redirected":false,"headers":[],"truncated":false}"#;
    for body in [
        "new Uint8Array([0, 255, 128])",
        "new Uint8Array([0, 255, 128]).buffer",
        "new DataView(new Uint8Array([9, 0, 255, 128]).buffer, 1)",
        "new Uint16Array([0xff00, 0x80]).subarray(0).buffer.slice(0, 3)",
    ] {
        net.answer(request, answer);
        let code = format!(
            "const headers = new Headers([['X-A', '1']]);\nheaders.append('x-a', '2');\n\
             const res = await fetch('http://files.example.com/blob', {{ method: 'PUT', headers, body: {body} }});\n\
             console.log(res.status, (await res.arrayBuffer()).byteLength);\n"
        );
        let (status, stdout, stderr) = net.run(&code);
        assert_eq!((status, stderr.as_str()), (0, ""), "{body}: {stdout}");
        assert_eq!(stdout, "204 0\n", "{body}");
        assert_eq!(net.request(request.len()), request, "{body}");
    }
}

#[test]
fn url_search_params_are_sent_form_encoded() {
    let net = Net::new("form");
    let request = r#"{"method":"POST","url":"https://api.example.com/login","headers":[["content-type","application/x-www-form-urlencoded;charset=UTF-8"]],"follow_redirects":true,"body":"user=a+b&x=%26"}"#;
    net.answer(
        request,
        r#"{"ok":true,"status":200,"reason":"OK","url":"https://api.example.com/login","redirected":false,"headers":[],"body_base64":"b2s=","truncated":false}"#,
    );
    // The runtime has no URLSearchParams of its own: a program's (or a library's) is
    // recognized by its tag.
    let code = r#"class URLSearchParams {
  constructor(pairs) { this.pairs = pairs; }
  toString() { return this.pairs.map(([k, v]) => `${k}=${encodeURIComponent(v).replace(/%20/g, "+")}`).join("&"); }
  get [Symbol.toStringTag]() { return "URLSearchParams"; }
}
const res = await fetch("https://api.example.com/login", { method: "POST", body: new URLSearchParams([["user", "a b"], ["x", "&"]]) });
console.log(await res.text());
"#;
    let (status, stdout, stderr) = net.run(code);
    assert_eq!((status, stderr.as_str()), (0, ""), "{stdout}");
    assert_eq!(stdout, "ok\n");
    assert_eq!(net.request(request.len()), request);
}

#[test]
fn any_other_body_is_a_type_error() {
    let net = Net::new("body");
    let code = r#"for (const body of [{ a: 1 }, 42, [1, 2]]) {
  try { await fetch("https://api.example.com/", { method: "POST", body }); } catch (e) { console.log(e.name, e.message); }
}
try { await fetch("https://api.example.com/", { body: "x" }); } catch (e) { console.log(e.name, e.message); }
const p = fetch("https://api.example.com/", { method: "POST", body: Symbol.iterator });
console.log(p instanceof Promise);
await p.catch((e) => console.log(e.name));
"#;
    let (status, stdout, stderr) = net.run(code);
    assert_eq!((status, stderr.as_str()), (0, ""), "{stdout}");
    assert_eq!(
        stdout,
        "TypeError fetch: the body must be a string, an ArrayBuffer, a typed array or DataView, or URLSearchParams, not an object (Object)\n\
         TypeError fetch: the body must be a string, an ArrayBuffer, a typed array or DataView, or URLSearchParams, not number\n\
         TypeError fetch: the body must be a string, an ArrayBuffer, a typed array or DataView, or URLSearchParams, not an object (Array)\n\
         TypeError fetch: a request with the GET or HEAD method cannot have a body\n\
         true\n\
         TypeError\n"
    );
    // Nothing was sent.
    assert!(!net.0.join("fetch").exists());
}

#[test]
fn redirect_modes() {
    let net = Net::new("redirect");
    let request = r#"{"method":"GET","url":"https://a.example.com/old","headers":[],"follow_redirects":false}"#;
    let moved = r#"{"ok":true,"status":301,"reason":"Moved Permanently","url":"https://a.example.com/old","redirected":false,"headers":[["location","https://a.example.com/new"]],"body_base64":"","truncated":false}"#;
    // manual: the 3xx as it came.
    net.answer(request, moved);
    let code = "const res = await fetch('https://a.example.com/old', { redirect: 'manual' });\n\
                console.log(res.status, res.ok, res.headers.get('location'));\n";
    assert_eq!(
        net.run(code),
        (
            0,
            "301 false https://a.example.com/new\n".into(),
            String::new()
        )
    );
    assert_eq!(net.request(request.len()), request);
    // error: a 3xx rejects.
    net.answer(request, moved);
    let code = "try { await fetch('https://a.example.com/old', { redirect: 'error' }); } catch (e) { console.log(e.name, e.message); }\n";
    let (status, stdout, stderr) = net.run(code);
    assert_eq!((status, stderr.as_str()), (0, ""));
    assert_eq!(
        stdout,
        "TypeError fetch: https://a.example.com/old answered 301 (a redirect) and the request's redirect mode is 'error'\n"
    );
    assert_eq!(net.request(request.len()), request);
    // follow (the default) asks the host to follow; the answer says where it ended.
    let request = r#"{"method":"GET","url":"https://a.example.com/old","headers":[],"follow_redirects":true}"#;
    net.answer(
        request,
        r#"{"ok":true,"status":200,"reason":"OK","url":"https://a.example.com/new","redirected":true,"headers":[],"body_base64":"bmV3","truncated":false}"#,
    );
    let code = "const res = await fetch('https://a.example.com/old', { redirect: 'follow' });\n\
                console.log(res.status, res.url, res.redirected, await res.text());\n";
    assert_eq!(
        net.run(code),
        (
            0,
            "200 https://a.example.com/new true new\n".into(),
            String::new()
        )
    );
    assert_eq!(net.request(request.len()), request);
    // Anything else is no redirect mode.
    let code = "fetch('https://a.example.com/', { redirect: 'nope' }).catch((e) => console.log(e.name, e.message));\n";
    assert_eq!(
        net.run(code).1,
        "TypeError fetch: redirect must be 'follow', 'manual' or 'error', not 'nope'\n"
    );
}

#[test]
fn a_refused_request_rejects_with_the_hosts_message() {
    let net = Net::new("refused");
    let request = r#"{"method":"DELETE","url":"https://evil.example.net/","headers":[],"follow_redirects":true}"#;
    net.answer(
        request,
        r#"{"ok":false,"error":"not_allowed","message":"evil.example.net is not in the network policy"}"#,
    );
    let code =
        "try { await fetch('https://evil.example.net/', { method: 'delete' }); } catch (e) {\n\
                  console.log(e instanceof TypeError, e.message, e.cause.code);\n\
                }\n";
    let (status, stdout, stderr) = net.run(code);
    assert_eq!((status, stderr.as_str()), (0, ""), "{stdout}");
    assert_eq!(
        stdout,
        "true not_allowed: evil.example.net is not in the network policy not_allowed\n"
    );
    assert_eq!(net.request(request.len()), request);
    // Uncaught, it ends the program like any error.
    net.answer(
        request,
        r#"{"ok":false,"error":"timeout","message":"timeout: no answer within 30000 ms"}"#,
    );
    let code = "await fetch('https://evil.example.net/', { method: 'DELETE' });\n";
    let (status, _, stderr) = net.run(code);
    assert_eq!(status, 1);
    assert!(
        stderr.contains("TypeError: timeout: no answer within 30000 ms"),
        "{stderr}"
    );
}

#[test]
fn without_a_network_policy_fetch_rejects() {
    let net = Net::new("none");
    let code = "try { await fetch('https://example.com/'); } catch (e) { console.log(e.name + ': ' + e.message); }\n";
    let (status, stdout, stderr) = net.run(code);
    assert_eq!((status, stderr.as_str()), (0, ""));
    assert_eq!(
        stdout,
        "TypeError: no network: this sandbox has no network (runbox was started without a network policy, --net-config); pass data in with `files` (or stdin) instead of downloading it\n"
    );
}

#[test]
fn a_cut_answer_says_so_on_stderr() {
    let net = Net::new("truncated");
    let request = r#"{"method":"GET","url":"https://cdn.example.com/big","headers":[],"follow_redirects":true}"#;
    net.answer(
        request,
        r#"{"ok":true,"status":200,"reason":"OK","url":"https://cdn.example.com/big","redirected":false,"headers":[],"body_base64":"AAECAwQ=","truncated":true}"#,
    );
    let code = "const res = await fetch('https://cdn.example.com/big');\nconst b = await res.bytes();\nconsole.log(b instanceof Uint8Array, b.join(','));\n";
    let (status, stdout, stderr) = net.run(code);
    assert_eq!(status, 0);
    assert_eq!(stdout, "true 0,1,2,3,4\n");
    assert_eq!(
        stderr,
        "runbox: the answer from https://cdn.example.com/big was cut at 5 bytes (the network policy's answer cap)\n"
    );
}

#[test]
fn a_large_body_crosses_both_ways() {
    let net = Net::new("large");
    // 3 MiB of bytes out, the same back.
    let size = 3 << 20;
    let bytes: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
    let base64 = crate::net::encode_base64(&bytes);
    let request = format!(
        r#"{{"method":"POST","url":"https://api.example.com/echo","headers":[],"follow_redirects":true,"body_base64":"{base64}"}}"#
    );
    net.answer(
        &request,
        &format!(
            r#"{{"ok":true,"status":200,"reason":"OK","url":"https://api.example.com/echo","redirected":false,"headers":[],"body_base64":"{base64}","truncated":false}}"#
        ),
    );
    let code = format!(
        "const out = new Uint8Array({size});\nfor (let i = 0; i < 251; i++) out[i] = i * 7 % 251;\n\
         for (let n = 251; n < out.length; n *= 2) out.copyWithin(n, 0, n);\n\
         const res = await fetch('https://api.example.com/echo', {{ method: 'POST', body: out }});\n\
         const back = new Uint8Array(await res.arrayBuffer());\n\
         let same = back.length === out.length;\nfor (let i = 0; same && i < back.length; i += 4099) same = back[i] === out[i];\n\
         console.log(back.length, same);\n"
    );
    let (status, stdout, stderr) = net.run(&code);
    assert_eq!((status, stderr.as_str()), (0, ""));
    assert_eq!(stdout, format!("{size} true\n"));
    assert_eq!(net.request(request.len()), request);
}

#[test]
fn inputs_urls_and_request_likes() {
    let net = Net::new("inputs");
    let request = r#"{"method":"HEAD","url":"https://api.example.com/x","headers":[["x-from","request"]],"follow_redirects":true}"#;
    let answer = r#"{"ok":true,"status":200,"reason":"OK","url":"https://api.example.com/x","redirected":false,"headers":[],"truncated":false}"#;
    // A Request-like object: its url, method and headers.
    net.answer(request, answer);
    let code = "const res = await fetch({ url: 'https://api.example.com/x', method: 'HEAD', headers: { 'X-From': 'request' } });\nconsole.log(res.status);\n";
    assert_eq!(net.run(code), (0, "200\n".into(), String::new()));
    assert_eq!(net.request(request.len()), request);
    // A URL-like object: its text.
    let request = r#"{"method":"GET","url":"https://api.example.com/x","headers":[],"follow_redirects":true}"#;
    net.answer(request, answer);
    let code = "const url = { href: 'https://api.example.com/x', toString() { return this.href; } };\nconsole.log((await fetch(url)).status);\n";
    assert_eq!(net.run(code), (0, "200\n".into(), String::new()));
    assert_eq!(net.request(request.len()), request);
}

#[test]
fn headers_behave_like_the_standards() {
    let code = r#"const h = new Headers({ "Content-Type": "text/html", "X-B": " 2 " });
h.append("x-a", "1");
h.append("X-A", "3");
h.append("Set-Cookie", "s=1");
h.append("set-cookie", "t=2");
console.log(h.get("x-a"), h.get("X-B"), h.has("CONTENT-TYPE"), h.get("nope"));
console.log([...h].map(([k, v]) => `${k}=${v}`).join("; "));
console.log([...h.keys()].join(","), [...h.values()].length, h.getSetCookie().join("|"));
h.set("X-A", "9");
h.delete("content-type");
const seen = [];
h.forEach((value, name, headers) => seen.push(`${name}:${value}:${headers === h}`));
console.log(seen.join(" "));
console.log(new Headers([["a", "1"]]).get("A"), new Headers(h).get("x-a"), Object.prototype.toString.call(h));
for (const bad of [() => new Headers([["a"]]), () => h.get("bad name"), () => h.set("a", "x\ny"), () => new Headers(5)]) {
  try { bad(); } catch (e) { console.log(e.name); }
}
console.log(h);
"#;
    let (status, stdout, stderr) = Session::of(Language::JavaScript).run(code);
    assert_eq!((status, stderr.as_str()), (0, ""), "{stdout}");
    assert_eq!(
        stdout,
        "1, 3 2 true null\n\
         content-type=text/html; set-cookie=s=1; set-cookie=t=2; x-a=1, 3; x-b=2\n\
         content-type,set-cookie,set-cookie,x-a,x-b 5 s=1|t=2\n\
         set-cookie:s=1:true set-cookie:t=2:true x-a:9:true x-b:2:true\n\
         1 9 [object Headers]\n\
         TypeError\nTypeError\nTypeError\nTypeError\n\
         Headers { 'set-cookie': 's=1, t=2', 'x-a': '9', 'x-b': '2' }\n"
    );
}

#[test]
fn responses_can_be_made_by_programs() {
    let code = r#"const r = new Response("héllo", { status: 404, statusText: "Not Found", headers: { "X-A": "1" } });
console.log(r.status, r.ok, r.statusText, r.headers.get("content-type"), r.headers.get("x-a"), r.url, r.type);
const c = r.clone();
console.log(await r.text(), r.bodyUsed, c.bodyUsed, (await c.bytes()).length);
const j = Response.json({ a: [1] });
console.log(j.headers.get("content-type"), JSON.stringify(await j.json()));
const e = new Response();
console.log(await e.text() === "", e.bodyUsed, e.status);
try { new Response("x", { status: 99 }); } catch (err) { console.log(err.name); }
try { new Response({}); } catch (err) { console.log(err.name); }
console.log(new Response(null, { status: 201 }));
"#;
    let (status, stdout, stderr) = Session::of(Language::JavaScript).run(code);
    assert_eq!((status, stderr.as_str()), (0, ""), "{stdout}");
    assert_eq!(
        stdout,
        "404 false Not Found text/plain;charset=UTF-8 1  default\n\
         héllo true false 6\n\
         application/json {\"a\":[1]}\n\
         true false 200\n\
         RangeError\n\
         TypeError\n\
         Response {\n  status: 201,\n  statusText: '',\n  headers: Headers {},\n  bodyUsed: false,\n  ok: true,\n  redirected: false,\n  type: 'default',\n  url: ''\n}\n"
    );
}

#[test]
fn programs_may_replace_the_globals() {
    let code = "globalThis.fetch = async () => 'mine';\nconsole.log(await fetch('x'), typeof Headers, typeof Response, fetch.length);\n";
    let (status, stdout, stderr) = Session::of(Language::JavaScript).run(code);
    assert_eq!((status, stderr.as_str()), (0, ""));
    assert_eq!(stdout, "mine function function 0\n");
    let code = "console.log(typeof fetch, fetch.length, fetch.name);\n";
    assert_eq!(
        Session::of(Language::JavaScript).run(code).1,
        "function 1 fetch\n"
    );
}

#[test]
fn typescript_fetches_too() {
    let net = Net::new("typescript");
    net.answer(GET, ITEMS);
    let code = "interface Items { items: number[] }\n\
                const res: Response = await fetch('https://api.example.com/v1/items?page=2');\n\
                const data = (await res.json()) as Items;\n\
                const h: Headers = res.headers;\n\
                console.log(res.status, data.items.length, h.get('x-count'));\n";
    let (status, stdout, stderr) = net.session(Language::TypeScript).run(code);
    assert_eq!((status, stderr.as_str()), (0, ""), "{stdout}");
    assert_eq!(stdout, "200 2 2\n");
    assert_eq!(net.request(GET.len()), GET);
}

#[test]
fn a_session_fetches_at_each_call() {
    let net = Net::new("session");
    let mut session = net.session(Language::JavaScript);
    // A script (not a module): the promise, then the event loop.
    let code = "fetch('https://api.example.com/v1/items?page=2').then((r) => r.json()).then((d) => console.log(d.items.join('+')));\n";
    net.answer(GET, ITEMS);
    assert_eq!(session.run(code), (0, "1+2\n".into(), String::new()));
    net.answer(
        GET,
        &ITEMS.replace("eyJpdGVtcyI6WzEsMl19", "eyJpdGVtcyI6WzNdfQ=="),
    );
    assert_eq!(session.run(code), (0, "3\n".into(), String::new()));
    assert_eq!(net.request(GET.len()), GET);
}

#[test]
fn lazy_globals_are_read_again_in_a_loop() {
    // Each place reading a global the prelude loads on first use (an accessor) reads it
    // the same way every time, in a module and in a function.
    let code = "for (let i = 0; i < 3; i++) {\n\
                  console.log(typeof Buffer.from, new TextEncoder().encode('a').length, typeof new Headers().get, fetch.name);\n\
                  try { await fetch('https://example.com/'); } catch (e) { console.log(e.message.slice(0, 10)); }\n\
                }\n";
    let (status, stdout, stderr) = Session::of(Language::JavaScript).run(code);
    assert_eq!((status, stderr.as_str()), (0, ""), "{stdout}");
    assert_eq!(stdout, "function 1 function fetch\nno network\n".repeat(3));
    let code =
        "function f() { return typeof TextDecoder.prototype.decode; }\nconsole.log(f(), f());\n\
                globalThis.Buffer = 1;\nconsole.log(Buffer, f());\n";
    let (status, stdout, stderr) = Session::of(Language::JavaScript).run(code);
    assert_eq!((status, stderr.as_str()), (0, ""), "{stdout}");
    assert_eq!(stdout, "function function\n1 function\n");
}
