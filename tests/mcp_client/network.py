"""Network egress by policy (docs/network.md) through the MCP Python SDK: programs in
python, javascript, typescript and the shell reach loopback HTTP and HTTPS servers this
script runs, by names the policy maps to 127.0.0.1 (its [resolve], never real DNS), with
a test CA made here by openssl.
Usage: network.py SCENARIO.

- runtimes: each runtime's usual calls (urllib and requests, fetch, curl and wget) reach
  allowed hosts; other hosts, a name resolving to loopback the policy does not name, a
  redirect to a refused address and the metadata address are refused naming the policy;
  a secret's placeholder becomes its value only on the wire to its hosts and never comes
  back; a huge answer is cut at its cap; HTTPS is verified against the test CA.
- over_http: the same python program over streamable HTTP (RUNBOX_TEST_CLIENT's
  client), and /metrics counts requests by host and status.
- no_policy: without --net-config nothing is reachable, and programs are told why.
- durable: a resumed session replays a recorded answer and never fetches again.
- hostile: a program writing to the device itself: other schemes, address spellings
  (IPv6 loopback, a decimal address, user-info before an address), header injection,
  its own Host header, a redirect loop, a body past the cap and not JSON are refused;
  the 51st request is past the cap; a server that never answers ends at the deadline.
- byte_cap: a run's answers are cut at the bytes it has left, then refused.
- packages: `pip install` of a pure-Python wheel from a local index served on loopback
  works in a python session and in the shell; a name off the allow-list, wheels with
  native code and an option passed as a name are refused.
"""

import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import ssl

import anyio
import httpx2

from harness import HttpServer, http_session, main, run_code, stdio_session, text_of

SECRET = "s3cr3t-value-4242"
PLACEHOLDER = "__RUNBOX_SECRET_API_TOKEN__"
CAP = 100_000
WORK = tempfile.mkdtemp(prefix="runbox-network-")

# Every request the loopback servers saw: (Host header, path, all headers and body as text).
SEEN = []
SEEN_LOCK = threading.Lock()
COUNTER = {"n": 0}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _record(self, body):
        text = "".join(f"{k}: {v}\n" for k, v in self.headers.items()) + body.decode("latin-1")
        with SEEN_LOCK:
            SEEN.append((self.headers.get("Host", ""), self.path, text))

    def _send(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self._record(body)
        path = self.path
        if path == "/hello":
            self._send(200, b"hello from loopback", [("Content-Type", "text/plain")])
        elif path == "/echo":
            echo = {"method": self.command, "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body.decode("utf-8", "replace")}
            # The answer carries whatever secret came in: the host must scrub it.
            self._send(200, json.dumps(echo).encode(), [("Content-Type", "application/json"),
                                                        ("X-Echo-Auth", self.headers.get("Authorization", ""))])
        elif path == "/big":
            self._send(200, b"x" * (1 << 20), [("Content-Type", "application/octet-stream")])
        elif path.startswith("/redirect?to="):
            self._send(302, b"", [("Location", path.split("=", 1)[1])])
        elif path == "/gzecho":
            # Compressed whatever was asked: an echo the host could not scrub.
            import gzip
            self._send(200, gzip.compress(json.dumps(dict(self.headers.items())).encode()),
                       [("Content-Encoding", "gzip")])
        elif path == "/hang":
            time.sleep(60)
        elif path.startswith("/loop"):
            self._send(302, b"", [("Location", "/loop")])
        elif path == "/count":
            COUNTER["n"] += 1
            self._send(200, str(COUNTER["n"]).encode())
        elif path.startswith("/wheels/"):
            name = path[len("/wheels/"):]
            if not name:
                links = "".join(f'<a href="{n}">{n}</a>\n' for n in sorted(os.listdir(WHEELS)))
                self._send(200, links.encode(), [("Content-Type", "text/html")])
            elif name in os.listdir(WHEELS):
                with open(os.path.join(WHEELS, name), "rb") as f:
                    self._send(200, f.read(), [("Content-Type", "application/octet-stream")])
            else:
                self._send(404, b"no such wheel")
        elif path == "/missing":
            self._send(404, b"no such thing")
        else:
            self._send(404, b"?")

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _handle


def serve(tls=None):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def make_ca():
    """A test CA and a certificate for secure.test signed by it (openssl's CLI)."""
    def ossl(*args):
        subprocess.run(["openssl", *args], cwd=WORK, check=True, capture_output=True)
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
         "-days", "2", "-subj", "/CN=runbox test CA")
    ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr",
         "-subj", "/CN=secure.test")
    with open(os.path.join(WORK, "ext.cnf"), "w") as f:
        f.write("subjectAltName=DNS:secure.test\nbasicConstraints=CA:FALSE\n")
    ossl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", "srv.pem", "-days", "2", "-extfile", "ext.cnf")
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(os.path.join(WORK, "srv.pem"), os.path.join(WORK, "srv.key"))
    return tls


def make_wheels():
    """A local index: humanize as pip downloads it, and two wheels with native code."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                    "--disable-pip-version-check", "-q", "-d", WHEELS, "humanize==4.11.0"], check=True)
    platform = "linux_x86_64"
    for name, tag, entries in [("fakenative", f"py3-none-{platform}", {"fakenative/__init__.py": ""}),
                               ("sneaky", "py3-none-any", {"sneaky/__init__.py": "", "sneaky/_speed.so": "ELF"})]:
        dist = f"{name}-1.0.dist-info"
        entries = {**entries,
                   f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
                   f"{dist}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n",
                   f"{dist}/RECORD": ""}
        with zipfile.ZipFile(os.path.join(WHEELS, f"{name}-1.0-{tag}.whl"), "w") as z:
            for entry, text in entries.items():
                z.writestr(entry, text)


WHEELS = os.path.join(WORK, "wheels")
os.makedirs(WHEELS)
PORT = serve()
TLS_PORT = serve(make_ca())
POLICY = os.path.join(WORK, "net.toml")
with open(POLICY, "w") as f:
    f.write(f"""
[[allow]]
host = "api.test"
ports = [{PORT}]
schemes = ["http"]
addresses = ["127.0.0.1"]

[[allow]]
host = "secure.test"
ports = [{TLS_PORT}]
schemes = ["https"]
addresses = ["127.0.0.1"]

# Allowed by name, but it resolves to loopback, which this rule does not name.
[[allow]]
host = "rebind.test"
ports = [{PORT}]

[[allow]]
host = "readonly.test"
ports = [{PORT}]
methods = ["GET"]
addresses = ["127.0.0.1"]

[secrets.API_TOKEN]
env = "RUNBOX_TEST_API_TOKEN"
hosts = ["api.test", "secure.test"]

[limits]
answer_bytes = {CAP}

[resolve]
"api.test" = ["127.0.0.1"]
"secure.test" = ["127.0.0.1"]
"rebind.test" = ["127.0.0.1"]
"readonly.test" = ["127.0.0.1"]
"other.test" = ["127.0.0.1"]

[tls]
ca_files = ["ca.pem"]

[packages]
allow = ["humanize", "fakenative", "sneaky"]
find_links = ["http://127.0.0.1:{PORT}/wheels/"]
pip = [{json.dumps(sys.executable)}, "-m", "pip"]
""")
ARGS = ("--net-config", POLICY)
ENV = {"RUNBOX_TEST_API_TOKEN": SECRET}
API = f"http://api.test:{PORT}"
SECURE = f"https://secure.test:{TLS_PORT}"
# Refused destinations, each with what its refusal must say.
REFUSED = [
    (f"http://other.test:{PORT}/hello", "other.test is not in the network policy"),
    (f"http://rebind.test:{PORT}/hello", "a loopback address"),
    (f"{API}/redirect?to=http://127.0.0.1:{PORT}/hello", "127.0.0.1 is not in the network policy"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is not in the network policy"),
]

PYTHON = f"""
import os, urllib.request, urllib.error, requests
API, SECURE = {API!r}, {SECURE!r}
print(urllib.request.urlopen(API + "/hello").read().decode())
r = requests.post(API + "/echo", json={{"a": 1}}, headers={{"Authorization": "Bearer " + os.environ["API_TOKEN"]}})
echo = r.json()
print("auth", echo["headers"]["authorization"], r.headers["X-Echo-Auth"])
print("body", echo["body"])
basic = requests.get(API + "/echo", auth=("me", os.environ["API_TOKEN"]))
print("basic", basic.json()["headers"]["authorization"], basic.headers["X-Echo-Auth"])
print("follow", urllib.request.urlopen(API + "/redirect?to=/hello").read().decode())
for url in {[u for u, _ in REFUSED]!r}:
    try:
        urllib.request.urlopen(url)
        print("reached", url)
    except urllib.error.URLError as e:
        print("refused", e.reason)
try:
    requests.get("http://readonly.test:{PORT}/hello", headers={{"X-Key": os.environ["API_TOKEN"]}})
except requests.ConnectionError as e:
    print("refused", e)
try:
    requests.post("http://readonly.test:{PORT}/echo", data="x")
except requests.ConnectionError as e:
    print("refused", e)
try:
    urllib.request.urlopen(API + "/missing")
except urllib.error.HTTPError as e:
    print("status", e.code)
print("big", len(urllib.request.urlopen(API + "/big").read()))
print(requests.get(SECURE + "/hello").text)
print("env", os.environ["API_TOKEN"])
"""

JAVASCRIPT = f"""
const API = {json.dumps(API)}, SECURE = {json.dumps(SECURE)};
const token: string = process.env.API_TOKEN;
console.log(await (await fetch(API + "/hello")).text());
const r = await fetch(API + "/echo", {{method: "POST", headers: {{"Authorization": "Bearer " + token, "Content-Type": "application/json"}}, body: JSON.stringify({{a: 1}})}});
const echo: any = await r.json();
console.log("auth", echo.headers.authorization, r.headers.get("x-echo-auth"));
console.log("body", echo.body);
console.log("follow", await (await fetch(API + "/redirect?to=/hello")).text());
for (const url of {json.dumps([u for u, _ in REFUSED])}) {{
  try {{ await fetch(url); console.log("reached", url); }}
  catch (e: any) {{ console.log("refused", e.message); }}
}}
try {{ await fetch("http://readonly.test:{PORT}/hello", {{headers: {{"X-Key": token}}}}); }}
catch (e: any) {{ console.log("refused", e.message); }}
try {{ await fetch("http://readonly.test:{PORT}/echo", {{method: "POST", body: "x"}}); }}
catch (e: any) {{ console.log("refused", e.message); }}
console.log("status", (await fetch(API + "/missing")).status);
console.log("big", (await (await fetch(API + "/big")).arrayBuffer()).byteLength);
console.log(await (await fetch(SECURE + "/hello")).text());
console.log("env", token);
"""

SHELL = f"""
API={API}; SECURE={SECURE}
curl -s "$API/hello"; echo
auth=$(curl -s -X POST -H "Authorization: Bearer $API_TOKEN" -H 'Content-Type: application/json' -d '{{"a": 1}}' "$API/echo")
echo "auth $auth"
echo "follow $(curl -sL "$API/redirect?to=/hello")"
for url in {' '.join(repr(u) for u, _ in REFUSED)}; do
  curl -sS -L "$url" >/dev/null 2>err.txt; echo "refused exit $? $(cat err.txt)"
done
curl -sS -H "X-Key: $API_TOKEN" "http://readonly.test:{PORT}/hello" 2>&1; echo " exit $?"
curl -sS -d x "http://readonly.test:{PORT}/echo" 2>&1; echo " exit $?"
echo "status $(curl -s -o /dev/null -w '%{{http_code}}' "$API/missing")"
echo "big $(curl -s "$API/big" | wc -c)"
wget -q -O - "$SECURE/hello"; echo
echo "env $API_TOKEN"
"""


def seen_secret_hosts():
    with SEEN_LOCK:
        basic = base64.b64encode(f"me:{SECRET}".encode()).decode()
        return {host.split(":")[0] for host, _, text in SEEN if SECRET in text or basic in text}


def check_common(out, runtime):
    """What every runtime's program must show (its stdout and stderr)."""
    stdout, stderr = out["stdout"], out["stderr"]
    assert SECRET not in json.dumps(out), f"{runtime}: the secret reached the program: {out}"
    assert "hello from loopback" in stdout, (runtime, out)
    assert stdout.count(PLACEHOLDER) >= 2, (runtime, "the echo of the secret is scrubbed", out)
    assert base64.b64encode(f"me:{SECRET}".encode()).decode() not in json.dumps(out), (runtime, out)
    assert "follow hello from loopback" in stdout, (runtime, out)
    for _, needle in REFUSED:
        assert needle in stdout + stderr, (runtime, needle, out)
    assert f"policy ({POLICY})" in stdout + stderr, (runtime, "the refusal names the policy", out)
    assert "carries the placeholder of secret API_TOKEN" in stdout + stderr, (runtime, out)
    assert "POST to http://readonly.test" in stdout + stderr and "only GET" in stdout + stderr, (runtime, out)
    assert "reached" not in stdout, (runtime, out)
    assert f"big {CAP}" in stdout, (runtime, "the answer is cut at its cap", out)
    assert "was cut at 100000 bytes" in stderr, (runtime, out)
    assert "status 404" in stdout, (runtime, out)
    assert stdout.count("hello from loopback") >= 3, (runtime, "HTTPS with the test CA", out)
    assert f"env {PLACEHOLDER}" in stdout, (runtime, out)


async def run(session, runtime, code, **extra):
    result = await run_code(session, runtime=runtime, code=code, timeout_seconds=30, **extra)
    assert not result.is_error, text_of(result)
    return result.structured_content


async def runtimes():
    async with stdio_session(*ARGS, env=ENV) as s:
        listing = (await s.call_tool("list_runtimes", {})).structured_content
        assert "api.test" in listing["network"], listing
        tools = await s.list_tools()
        description = next(t for t in tools.tools if t.name == "run_code").description
        assert "reachable only through runbox's policy" in description and "API_TOKEN" in description
        for runtime, code in [("python", PYTHON), ("javascript", JAVASCRIPT.replace(": string", "").replace(": any", "")),
                              ("typescript", JAVASCRIPT), ("shell", SHELL)]:
            SEEN.clear()
            out = await run(s, runtime, code)
            check_common(out, runtime)
            if runtime == "python":
                out_python = out
            assert seen_secret_hosts() == {"api.test"}, (runtime, seen_secret_hosts())
        # Basic credentials made from a placeholder carry the value to its host, and the
        # echo of them comes back as the program wrote them.
        basic = base64.b64encode(f"me:{PLACEHOLDER}".encode()).decode()
        assert f"basic Basic {basic} Basic {basic}" in out_python["stdout"], out_python
        readme = await run(s, "shell", "cat /net/README.md")
        assert PLACEHOLDER in readme["stdout"] and SECRET not in readme["stdout"], readme


async def over_http():
    with HttpServer(*ARGS, env=ENV) as server:
        async with http_session(server.url) as s:
            SEEN.clear()
            out = await run(s, "python", PYTHON)
            check_common(out, "python over HTTP")
        base = server.url.rsplit("/mcp", 1)[0]
        async with httpx2.AsyncClient() as http:
            metrics = (await http.get(base + "/metrics")).text
        assert 'runbox_net_requests_total{host="api.test",status="200"}' in metrics, metrics
        assert 'runbox_net_requests_total{host="other",status="not_allowed"}' in metrics, metrics
        assert SECRET not in metrics


async def no_policy():
    async with stdio_session() as s:
        listing = (await s.call_tool("list_runtimes", {})).structured_content
        assert listing["network"].startswith("No network"), listing
        out = await run(s, "python", f"import urllib.request\nurllib.request.urlopen({API + '/hello'!r})")
        assert "no network" in out["stderr"] and out["exit_code"] == 1, out
        out = await run(s, "shell", f"curl -sS {API}/hello; echo \" exit $?\"")
        assert "no network" in out["stderr"] and "exit 7" in out["stdout"], out
    with SEEN_LOCK:
        assert not SEEN, f"a request left without a policy: {SEEN}"


async def durable():
    store = tempfile.mkdtemp(prefix="runbox-network-store-")
    args = (*ARGS, "--session-store", store, "--session-hibernate-after", "1")
    async with stdio_session(*args, env=ENV) as s:
        sid = (await s.call_tool("create_session", {"runtime": "python"})).structured_content["session_id"]
        fetch = f"import urllib.request\nn = urllib.request.urlopen({API + '/count'!r}).read().decode()\nprint(n)"
        first = await run(s, "python", fetch, session_id=sid)
        assert first["stdout"] == "1\n", first
        # Hibernate (stored), then resume: the request is replayed from the journal.
        await anyio.sleep(3)
        out = await run(s, "python", "print(n)", session_id=sid)
        assert out["stdout"] == "1\n", out
        out = await run(s, "python", fetch.replace("n = ", "m = ").replace("print(n)", "print(m)"), session_id=sid)
        assert out["stdout"] == "2\n", f"the replay fetched again: {out}"
    for path, _, files in os.walk(store):
        for name in files:
            with open(os.path.join(path, name), "rb") as f:
                assert SECRET.encode() not in f.read(), f"the secret is in the stored session {name}"


async def packages():
    make_wheels()
    async with stdio_session(*ARGS, env=ENV) as s:
        sid = (await s.call_tool("create_session", {"runtime": "python"})).structured_content["session_id"]
        out = await run(s, "python", "import pip\nprint(pip.main(['install', 'humanize==4.11.0']))", session_id=sid)
        assert "Successfully installed humanize-4.11.0" in out["stdout"] and "sha256=" in out["stdout"], out
        out = await run(s, "python", "import humanize\nprint(humanize.intcomma(1234567))", session_id=sid)
        assert out["stdout"] == "1,234,567\n", out
        for req, needle in [("requests", "not in the network policy's [packages] allow list"),
                            ("fakenative", "has native code"), ("sneaky", "holds native code")]:
            out = await run(s, "python", f"import pip\nprint(pip.main(['install', {req!r}]))", session_id=sid)
            assert needle in out["stderr"] and out["stdout"].strip().endswith("1"), (req, out)
        # The device itself, past the binding: an option in place of a name never reaches pip.
        raw = ("import json\nwith open('/net/fetch', 'r+b', buffering=0) as d:\n"
               "    d.write(json.dumps({'install': ['--index-url=http://127.0.0.1:1/']}).encode())\n"
               "    print(d.readall().decode())")
        out = await run(s, "python", raw, session_id=sid)
        assert '"bad_request"' in out["stdout"] and "not a package requirement" in out["stdout"], out
        out = await run(s, "shell", "pip install humanize && python -c 'import humanize; print(humanize.naturalsize(3000000))'")
        assert "Successfully installed humanize-4.11.0" in out["stdout"] and "3.0 MB" in out["stdout"], out
        out = await run(s, "shell", "pip install fakenative; echo \"exit $?\"")
        assert "has native code" in out["stderr"] and "exit 1" in out["stdout"], out
        listing = (await s.call_tool("list_runtimes", {})).structured_content
        assert "pip install" in listing["network"], listing


HOSTILE = f"""
import json, urllib.request, urllib.error

def device(request):
    with open("/net/fetch", "r+b", buffering=0) as d:
        d.write(request if isinstance(request, bytes) else json.dumps(request).encode())
        return json.loads(d.readall())

for label, request in [
    ("file", {{"url": "file:///etc/passwd"}}),
    ("ipv6", {{"url": "http://[::1]:{PORT}/hello"}}),
    ("decimal", {{"url": "http://2130706433:{PORT}/hello"}}),
    ("userinfo", {{"url": "http://api.test:{PORT}@127.0.0.1:{PORT}/hello"}}),
    ("header", {{"url": "{API}/hello", "headers": [["X", "a\\r\\nHost: evil"]]}}),
    ("host header", {{"url": "{API}/hello", "headers": [["Host", "other.test"]]}}),
    ("loop", {{"url": "{API}/loop"}}),
    ("not json", b"GET / HTTP/1.1"),
    ("huge", {{"url": "{API}/echo", "method": "POST", "body": "x" * (17 << 20)}}),
    ("gzip", {{"url": "{API}/gzecho", "headers": [["Authorization", "Bearer {PLACEHOLDER}"]]}}),
    ("userinfo-secret", {{"url": "http://me:{PLACEHOLDER}@api.test:{PORT}/hello"}}),
    ("dot", {{"url": "http://API.test.:{PORT}/hello"}}),
]:
    answer = device(request)
    print(label, answer.get("error"), answer.get("message", "")[:200])
made = 0
for i in range(60):
    answer = device({{"url": "{API}/hello"}})
    if not answer["ok"]:
        print("cap", made, answer["error"], answer["message"])
        break
    made += 1
"""


async def hostile():
    async with stdio_session(*ARGS, env=ENV) as s:
        SEEN.clear()
        out = await run(s, "python", HOSTILE)
        lines = {l.split(" ", 1)[0]: l for l in out["stdout"].splitlines()}
        expect = {"file": "not_allowed", "ipv6": "not_allowed", "decimal": "not_allowed",
                  "userinfo": "not_allowed", "header": "bad_request", "host": "bad_request",
                  "loop": "limit", "not": "bad_request", "huge": "limit",
                  "gzip": "unavailable", "userinfo-secret": "not_allowed"}
        for label, kind in expect.items():
            assert kind in lines.get(label, ""), (label, out)
        assert "more than 5 redirects" in lines["loop"], out
        assert lines["dot"] == "dot None ", ("a trailing dot is the same name", out)
        assert "encoded body" in lines["gzip"] and "user-info" in lines["userinfo-secret"], out
        assert SECRET not in json.dumps(out), out
        # Refused requests count too: seven of the eleven refused above, and the one
        # made, were taken from the cap.
        assert "cap 42 limit" in out["stdout"] and "50 requests" in out["stdout"], out
        with SEEN_LOCK:
            assert all(host.startswith("api.test") for host, _, _ in SEEN), SEEN
        # A server that never answers: the run's deadline ends it; the server goes on.
        result = await run_code(s, runtime="python", timeout_seconds=3,
                                code=f"import urllib.request\nurllib.request.urlopen({API + '/hang'!r})")
        out = result.structured_content
        assert out["status"] == "timeout", out
        out = await run(s, "shell", f"curl -s {API}/hello")
        assert out["stdout"] == "hello from loopback", out


async def byte_cap():
    """The run's byte cap: answers are cut at what is left, then refused; a new run starts
    again (its own cap)."""
    with open(POLICY) as f:
        text = f.read().replace(f"answer_bytes = {CAP}", f"answer_bytes = {CAP}\nbytes = 250000")
    policy = os.path.join(WORK, "bytes.toml")
    with open(policy, "w") as f:
        f.write(text)
    program = f"""
import urllib.request, urllib.error
for i in range(4):
    try:
        print(len(urllib.request.urlopen({API + '/big'!r}).read()))
    except urllib.error.URLError as e:
        print("refused", e.reason)
"""
    async with stdio_session("--net-config", policy, env=ENV) as s:
        for _ in range(2):
            out = await run(s, "python", program)
            lines = out["stdout"].splitlines()
            assert lines[:3] == ["100000", "100000", "50000"], out
            assert lines[3].startswith("refused") and "250000 bytes" in lines[3], out


runtimes.deadline = 400
main({"runtimes": runtimes, "over_http": over_http, "no_policy": no_policy, "durable": durable,
      "packages": packages, "hostile": hostile, "byte_cap": byte_cap},
     label="network ")
