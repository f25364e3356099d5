"""runbox's result app (MCP Apps) in a real browser, for tests/all/app.rs.

A client of the Python SDK that declares the extension (`io.modelcontextprotocol/ui` with
`mimeTypes: ["text/html;profile=mcp-app"]`) checks what tools/list and resources/* offer it,
makes real results with `runbox mcp`, and shows each in headless Chromium: the app in an
iframe of app_host.html (a small host that speaks the bridge protocol), served from a
loopback HTTP server, the browser driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: no websocket library needed). It checks the DOM, clicks, and
writes a screenshot of each case into $RUNBOX_APP_SCREENSHOTS.

Usage: app_view.py CHROMIUM
"""

import base64
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anyio
import anyio.from_thread
import httpx2
from harness import RUNBOX, HttpServer, server_env
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.extension import advertise
from mcp.client.streamable_http import streamable_http_client

EXTENSION = "io.modelcontextprotocol/ui"
MIME = "text/html;profile=mcp-app"
APP_URI = "ui://runbox/run"
HERE = os.path.dirname(os.path.abspath(__file__))
SHOTS = os.environ["RUNBOX_APP_SCREENSHOTS"]
# What a host must apply when a UI resource declares no origins (the extension's default).
DEFAULT_CSP = ("default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' "
               "'unsafe-inline'; img-src 'self' data:; media-src 'self' data:; connect-src 'none'")
HOSTILE_NAME = '"><img src=x onerror=alert(1)>.txt'

CASES = {
    "plot": {"runtime": "python", "code": (
        "import matplotlib.pyplot as plt\n"
        "import numpy as np\n"
        "x = np.linspace(0, 2 * np.pi, 200)\n"
        "plt.plot(x, np.sin(x), label='sin')  # a comment\n"
        "plt.title('a sine')\n"
        "plt.legend()\n"
        "plt.show()\n"
        "print('\\x1b[31mred\\x1b[0m and \\x1b[1;32mbold green\\x1b[0m')\n")},
    "table": {"runtime": "python", "code": (
        "import pandas as pd\n"
        "df = pd.DataFrame({'city': ['Oslo', 'Lima', 'Pune', 'Kyiv', 'Bonn'],\n"
        "                   'population': [709000, 10092000, 7276000, 2952000, 336000],\n"
        "                   'rain_mm': [763.5, 16.0, 722.0, 649.2, 669.1]})\n"
        "df.to_csv('cities.csv', index=False)\n"
        "df.to_json('cities.json', orient='records')\n"
        "print(len(df), 'rows')\n")},
    "error": {"runtime": "python", "code": (
        "def ratio(a, b):\n"
        "    return a / b\n"
        "\n"
        "print(\"before\")\n"
        "ratio(1, 0)\n")},
    "big": {"runtime": "python", "code": (
        "import sys\n"
        "line = 'x' * 99 + '\\n'\n"
        "for i in range(50000):\n"
        "    sys.stdout.write(f'{i:07d} ' + line)\n")},
    "wide": {"runtime": "python", "code": (
        "line = '" + "wide " * 80 + "'\n"
        "print(len(line), line * 2)\n")},
    "hostile": {"runtime": "python", "code": (
        "print('<script>alert(1)</script>')\n"
        f"open({HOSTILE_NAME!r}, 'w').write('<img src=x onerror=alert(2)>')\n"
        "n = open('data.bin', 'wb').write(bytes(range(256)))\n")},
}


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


# ---------------------------------------------------------------------------------------
# The browser, over the DevTools protocol on a pipe (fd 3: to Chromium; fd 4: from it).

class Browser:
    def __init__(self, exe):
        self.profile = tempfile.mkdtemp(prefix="runbox-app-chromium-")
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()

        def fds():
            a = fcntl.fcntl(to_r, fcntl.F_DUPFD, 20)
            b = fcntl.fcntl(from_w, fcntl.F_DUPFD, 20)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
             "--remote-debugging-pipe", f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=fds, close_fds=False)
        os.close(to_r)
        os.close(from_w)
        self.next_id = 0
        self.answers = {}
        self.events = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buf = b""
        while True:
            chunk = os.read(self.from_r, 1 << 20)
            if not chunk:
                with self.cond:
                    self.answers[None] = "closed"
                    self.cond.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                message = json.loads(raw)
                with self.cond:
                    if "id" in message:
                        self.answers[message["id"]] = message
                    else:
                        self.events.append(message)
                        if message.get("method") == "Page.javascriptDialogOpening":
                            # Answered at once, so the page goes on; the test fails on it.
                            threading.Thread(target=self.send, args=(
                                "Page.handleJavaScriptDialog", {"accept": True},
                                message.get("sessionId")), daemon=True).start()
                    self.cond.notify_all()

    def send(self, method, params=None, session=None, timeout=60):
        with self.cond:
            self.next_id += 1
            ident = self.next_id
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self.cond:
            while ident not in self.answers:
                if None in self.answers:
                    raise AssertionError(f"Chromium went away: {self.proc.stderr.read()!r}")
                left = deadline - time.monotonic()
                assert left > 0, f"no answer to {method} in {timeout} s"
                self.cond.wait(left)
            answer = self.answers.pop(ident)
        assert "error" not in answer, f"{method}: {answer['error']}"
        return answer["result"]

    def dialogs(self):
        with self.cond:
            return [e for e in self.events if e.get("method") == "Page.javascriptDialogOpening"]

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser, url):
        self.b = browser
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.target = target
        self.session = browser.send("Target.attachToTarget",
                                    {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 960, "height": 800, "deviceScaleFactor": 1, "mobile": False})
        self.call("Page.navigate", {"url": url})

    def call(self, method, params=None, timeout=60):
        return self.b.send(method, params, self.session, timeout)

    def js(self, expression, timeout=60):
        answer = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                 "awaitPromise": True}, timeout)
        if "exceptionDetails" in answer:
            raise AssertionError(f"{expression}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def wait(self, expression, what, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.js(expression):
                return
            time.sleep(0.1)
        raise AssertionError(f"{what}: not within {timeout} s; the page: {self.js(REPORT)}")

    def screenshot(self, name):
        # The whole page, as tall as the app asked to be.
        height = self.js("Math.ceil(document.documentElement.scrollHeight)")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 960, "height": min(max(height, 200), 6000), "deviceScaleFactor": 1,
                   "mobile": False})
        time.sleep(0.3)
        shot = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        path = os.path.join(SHOTS, f"{name}.png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot))
        print(f"  screenshot: {path} ({os.path.getsize(path)} bytes)")

    def close(self):
        self.b.send("Target.closeTarget", {"targetId": self.target})


# What the test reads of the app's DOM (it is same-origin with the host page).
REPORT = r"""(() => {
  const d = document.getElementById('app').contentDocument;
  if (!d || !d.getElementById('status')) return null;
  const all = [...d.querySelectorAll('*')];
  return {
    status: d.getElementById('status').textContent,
    facts: d.getElementById('facts').textContent,
    problem: d.getElementById('problem').textContent,
    code: d.getElementById('code').textContent,
    tokens: ['kw', 'str', 'com', 'num'].map(k => d.querySelectorAll('#code .tok-' + k).length),
    streams: [...d.querySelectorAll('pre.stream')].map(p => ({name: p.dataset.stream,
      length: p.textContent.length, head: p.textContent.slice(0, 300),
      text: p.textContent.length < 100000 ? p.textContent : null, open: p.parentElement.open,
      colours: [...p.querySelectorAll('span.ansi')].map(s => [s.textContent, s.style.color, s.style.fontWeight])})),
    images: [...d.querySelectorAll('.images img')].map(i => ({alt: i.alt, width: i.naturalWidth, height: i.naturalHeight})),
    tables: [...d.querySelectorAll('table')].map(t => ({file: t.dataset.file,
      header: [...t.querySelectorAll('th')].map(h => h.textContent),
      rows: [...t.querySelectorAll('tbody tr')].map(r => [...r.children].map(c => c.textContent))})),
    files: [...d.querySelectorAll('.files li')].map(li => ({text: li.textContent,
      download: li.querySelector('a') ? li.querySelector('a').getAttribute('download') : null,
      href: li.querySelector('a') ? li.querySelector('a').href.slice(0, 5) : null})),
    scripts: d.querySelectorAll('script').length,
    imgs: d.querySelectorAll('img').length,
    handlers: all.filter(e => [...e.attributes].some(a => a.name.toLowerCase().startsWith('on'))).length,
    body: d.body.textContent,
    again: !d.getElementById('again').disabled,
    alerts: window.__alerts.slice(),
    calls: window.__calls.map(c => c.method),
    messages: window.__messages.slice(),
  };
})()"""


# ---------------------------------------------------------------------------------------
# The loopback server: the host page, the app, each case's input and result, and the
# bridge to the MCP session.

def serve(app_html, cases, portal, session):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def send_body(self, body, kind, extra=()):
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            if path == "/host.html":
                with open(os.path.join(HERE, "app_host.html"), "rb") as f:
                    self.send_body(f.read(), "text/html; charset=utf-8")
            elif path == "/app.html":
                self.send_body(app_html.encode(), "text/html; charset=utf-8",
                               [("Content-Security-Policy", DEFAULT_CSP)])
            elif path.startswith("/case/") and path[6:-5] in cases:
                self.send_body(json.dumps(cases[path[6:-5]]).encode(), "application/json")
            else:
                self.send_error(404)

        def do_POST(self):
            if self.path != "/bridge":
                self.send_error(404)
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            try:
                result = portal.call(forward, session, body["method"], body["params"])
                answer = {"result": result}
            except Exception as e:  # the app shows the error
                answer = {"error": {"code": -32603, "message": str(e)}}
            self.send_body(json.dumps(answer).encode(), "application/json")

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


async def forward(session, method, params):
    if method == "tools/call":
        assert params["name"] == "run_code", params
        return dump(await session.call_tool(params["name"], params.get("arguments") or {}))
    if method == "resources/read":
        return dump(await session.read_resource(params["uri"]))
    raise ValueError(f"{method} is not passed on")


# ---------------------------------------------------------------------------------------
# The checks, one per case, in the browser (a worker thread: the event loop stays free
# for the app's calls).

def check_case(browser, base, name, result):
    page = Page(browser, f"{base}/host.html?case={name}")
    try:
        page.wait("window.__initialized === true", "the app sends ui/initialize and initialized")
        page.wait(f"(() => {{ const r = {REPORT}; return r && r.status !== 'waiting'; }})()",
                  "the app shows the result")
        report = page.js(REPORT)
        assert report["scripts"] == 1, report
        sc = result["structuredContent"]
        if name == "plot":
            assert report["images"] and report["images"][0]["width"] > 100, report["images"]
            assert report["images"][0]["alt"].startswith("figure-"), report["images"]
            kw, strings, comments, numbers = report["tokens"]
            assert kw >= 4 and strings >= 3 and comments == 1 and numbers >= 2, report["tokens"]
            colours = report["streams"][0]["colours"]
            assert ["red", "rgb(205, 49, 49)", ""] in colours, colours
            assert any(c[0] == "bold green" and c[2] == "700" for c in colours), colours
        elif name == "table":
            tables = {t["file"]: t for t in report["tables"]}
            assert set(tables) == {"cities.csv", "cities.json"}, tables
            csv = tables["cities.csv"]
            assert csv["header"] == ["city", "population", "rain_mm"], csv
            assert [r[0] for r in csv["rows"]] == ["Oslo", "Lima", "Pune", "Kyiv", "Bonn"], csv
            click = ("document.getElementById('app').contentDocument"
                     ".querySelector('table[data-file=\"cities.csv\"] th:nth-child(2)').click()")
            page.js(click)
            rows = page.js(REPORT)["tables"][0]["rows"]
            assert [r[0] for r in rows] == ["Bonn", "Oslo", "Kyiv", "Pune", "Lima"], rows
            page.js(click)
            rows = page.js(REPORT)["tables"][0]["rows"]
            assert [r[0] for r in rows] == ["Lima", "Pune", "Kyiv", "Oslo", "Bonn"], rows
            assert tables["cities.json"]["header"] == ["city", "population", "rain_mm"]
            assert len(tables["cities.json"]["rows"]) == 5
            page.screenshot("table-sorted")
            # Run again: tools/call through the host, to the server, and shown.
            assert report["again"], "run again is offered"
            page.js("document.getElementById('app').contentDocument.getElementById('again').click()")
            page.wait(f"{REPORT}.calls.length === 1 && {REPORT}.status === 'completed'",
                      "run again answered")
            # Edit and run: a shorter result, and the frame shrinks to it.
            taller = page.js("document.getElementById('app').offsetHeight")
            page.js("""(() => { const d = document.getElementById('app').contentDocument;
                d.getElementById('edit').click();
                d.getElementById('editor-text').value = "print('edited in the app')";
                d.getElementById('editor-run').click(); })()""")
            page.wait(f"(() => {{ const r = {REPORT}; return r.calls.length === 2 && "
                      "r.status === 'completed' && r.streams.length && "
                      "r.streams[0].text === 'edited in the app\\n'; })()", "edit and run answered")
            edited = page.js(REPORT)
            assert "edited in the app" in edited["code"], edited["code"]
            assert edited["tables"] == [], "the edited run wrote no table"
            page.wait("""(() => { const f = document.getElementById('app');
                const body = f.contentDocument.body.getBoundingClientRect().height;
                return Math.abs(parseFloat(f.style.height) - 2 - Math.ceil(body)) <= 1; })()""",
                      "the frame fits the shorter result")
            shorter = page.js("document.getElementById('app').offsetHeight")
            assert shorter < taller - 100, f"the frame did not shrink: {taller} px, then {shorter} px"
        elif name == "wide":
            # Wide lines scroll in their own boxes; the page itself is never wider than
            # its frame (nothing cut off at the frame's edge).
            fits = page.js("""(() => { const d = document.getElementById('app').contentDocument;
                const code = d.getElementById('code'), out = d.querySelector('pre.stream');
                return [code.scrollWidth > code.clientWidth, out.scrollWidth > out.clientWidth,
                        getComputedStyle(code).overflowX, getComputedStyle(out).overflowX,
                        d.documentElement.scrollWidth <= d.documentElement.clientWidth]; })()""")
            assert fits == [True, True, "auto", "auto", True], fits
        elif name == "error":
            assert report["status"] == "completed" and "exit code 1" in report["facts"], report
            stderr = [s for s in report["streams"] if s["name"] == "stderr"][0]
            assert "Traceback" in stderr["text"] and "ZeroDivisionError" in stderr["text"], stderr
            assert report["streams"][0]["text"] == "before\n", report["streams"]
        elif name == "big":
            stdout = report["streams"][0]
            assert not stdout["open"], "a long output is collapsed"
            assert "bytes left out here" in stdout["text"], stdout["head"]
            assert sc["output_uri"], sc
            page.js("""document.getElementById('app').contentDocument
                .querySelector('.whole button').click()""")
            page.wait(f"{REPORT}.streams.length === 2", "the whole output loaded", timeout=60)
            whole = page.js(REPORT)["streams"][1]
            assert whole["name"] == "whole output" and whole["length"] == 50000 * 108, whole["length"]
            assert page.js(REPORT)["calls"] == ["resources/read"]
        elif name == "hostile":
            stdout = report["streams"][0]
            assert stdout["text"] == "<script>alert(1)</script>\n", stdout
            named = [f for f in report["files"] if HOSTILE_NAME in f["text"]]
            assert named and named[0]["download"] == HOSTILE_NAME, report["files"]
            assert named[0]["href"] == "blob:", named
            binary = [f for f in report["files"] if f["text"].startswith("data.bin")]
            assert binary and binary[0]["download"] == "data.bin", report["files"]
            assert report["imgs"] == 0, "no element came from the results"
        # Every case: nothing from the results ran or became markup.
        final = page.js(REPORT)
        assert final["scripts"] == 1 and final["handlers"] == 0, final
        assert final["alerts"] == [] and browser.dialogs() == [], (final["alerts"], browser.dialogs())
        if name != "table":
            page.screenshot(name)
        else:
            page.screenshot("table-edited")
        print(f"  {name}: status {report['status']!r}, {len(report['streams'])} streams, "
              f"{len(report['images'])} images, {len(report['tables'])} tables, "
              f"{len(report['files'])} files")
    finally:
        page.close()


async def offered(session, ui):
    """What `session` is offered: run_code's `_meta`, the resources, the app's read."""
    tools = {t.name: dump(t) for t in (await session.list_tools()).tools}
    resources = [dump(r)["uri"] for r in (await session.list_resources()).resources]
    try:
        read = dump(await session.read_resource(APP_URI))["contents"][0]["text"]
    except Exception as e:  # refused: as any URI never given out
        read = f"refused: {e}"
    return tools["run_code"].get("_meta"), resources, read


async def over_http(app_html):
    """The same over streamable HTTP, for both kinds of client, with and without the
    extension: a `ui://` read is answered by rmcp, which knows each client's capabilities."""
    with HttpServer() as server:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=60)) as http:
            for ui in (True, False):
                extensions = [advertise(EXTENSION, {"mimeTypes": [MIME]})] if ui else None
                async with Client(streamable_http_client(server.url, http_client=http),
                                  extensions=extensions) as session:
                    modern = await offered(session, ui)
                async with streamable_http_client(server.url, http_client=http) as (r, w):
                    settings = {EXTENSION: {"mimeTypes": [MIME]}} if ui else None
                    async with ClientSession(r, w, extensions=settings) as session:
                        await session.initialize()
                        legacy = await offered(session, ui)
                for got in (modern, legacy):
                    if ui:
                        assert got == ({"ui": {"resourceUri": APP_URI}}, [APP_URI], app_html), got[:2]
                    else:
                        assert got[0] is None and got[1] == [], got[:2]
                        assert got[2].startswith("refused:") and APP_URI in got[2], got[2]
    print("  over HTTP: 2026-07-28 and 2025-11-25 clients, with and without the extension: ok")


async def main():
    chromium = sys.argv[1]
    os.makedirs(SHOTS, exist_ok=True)
    params = StdioServerParameters(
        command=RUNBOX, args=["mcp", "--quiet", "--output-bytes", str(8 << 20)],
        env=server_env())
    ui = advertise(EXTENSION, {"mimeTypes": [MIME]})
    async with Client(params, extensions=[ui]) as session:
        tools = {t.name: dump(t) for t in (await session.list_tools()).tools}
        assert tools["run_code"].get("_meta") == {"ui": {"resourceUri": APP_URI}}, tools["run_code"]
        assert all("_meta" not in t for n, t in tools.items() if n != "run_code"), tools
        listed = [dump(r) for r in (await session.list_resources()).resources]
        assert [r["uri"] for r in listed] == [APP_URI], listed
        assert listed[0]["mimeType"] == MIME and listed[0]["_meta"]["ui"]["prefersBorder"] is True
        read = dump(await session.read_resource(APP_URI))["contents"]
        assert len(read) == 1 and read[0]["mimeType"] == MIME, read
        app_html = read[0]["text"]
        assert listed[0]["size"] == len(app_html.encode()), (listed[0]["size"], len(app_html))
        print(f"  the app: {len(app_html.encode())} bytes")
        await over_http(app_html)

        cases = {}
        for name, arguments in CASES.items():
            result = dump(await session.call_tool("run_code", {**arguments, "timeout_seconds": 40}))
            assert not result.get("isError"), result
            cases[name] = {"input": arguments, "result": result}
        assert cases["error"]["result"]["structuredContent"]["exit_code"] == 1
        assert cases["big"]["result"]["structuredContent"]["status"] == "completed"

        async with anyio.from_thread.BlockingPortal() as portal:
            httpd = serve(app_html, cases, portal, session)
            base = f"http://127.0.0.1:{httpd.server_address[1]}"

            def in_the_browser():
                browser = Browser(chromium)
                try:
                    print(f"  {browser.send('Browser.getVersion')['product']}")
                    for name, case in cases.items():
                        check_case(browser, base, name, case["result"])
                finally:
                    browser.close()

            try:
                await anyio.to_thread.run_sync(in_the_browser)
            finally:
                httpd.shutdown()
    print("app_view: ok")


async def within_a_deadline():
    with anyio.fail_after(300):
        await main()


if __name__ == "__main__":
    anyio.run(within_a_deadline)
