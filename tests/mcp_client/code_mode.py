"""Code mode (docs/tools.md) through the MCP Python SDK: programs in the sandbox call the
tools of upstream MCP servers that no one here wrote (npm's server-everything,
server-filesystem and server-memory, PyPI's mcp-server-time and mcp-server-git), and of
upstream_failures.py for what can go wrong.
Usage: code_mode.py SCENARIO.

- calls: python, typescript, shell and ruby programs call tools; list_runtimes and the
  run_code description list them; a tool off the allow-list and an upstream that cannot
  start give clear errors; runbox also serves them over HTTP.
- limits: the 101st call, a slow tool past the run's deadline, a crash mid-call, a 50 MB
  answer and a changed tool list, each leaving the server healthy.
- live, live_http: sessions of python, javascript and the shell made before their
  upstream went down, came back and changed its tool list keep calling, and see the new
  tool (over stdio; over HTTP).
- failing_neighbour: beside a server that cannot start (tried again and again), a python
  session calls tools for 16 s, and /tools stays the same files.
- oversize: an answer past the cap (a 5 MiB file through server-filesystem, 50 MB from
  upstream_failures) fails that call alone: the connection stays, other calls go on.
- oversize_http: the same from a streamable-HTTP upstream.
- device_budget: a session's open devices are capped, and what they hold is charged.
- answers: the description says what each tool of the five servers hands back, and
  programs written from it alone work the first time.
- http_upstream: server-everything over streamable HTTP.
- durable: a resumed session replays a tool's recorded answer, never calling it again.

RUNBOX_TEST_UPSTREAM_NPM is the npm prefix holding the npm servers (tests/all/code_mode.rs);
the PyPI servers are in this interpreter's venv (tests/mcp_client/requirements.txt).
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

import anyio
import httpx2

from harness import (HttpServer, check_tool_error, http_session, main, run_code,
                     stdio_session, text_of)

NPM = os.environ["RUNBOX_TEST_UPSTREAM_NPM"]
BIN = os.path.join(NPM, "node_modules", ".bin")
HERE = os.path.dirname(os.path.abspath(__file__))
FAILURES = os.path.join(HERE, "upstream_failures.py")

WORK = tempfile.mkdtemp(prefix="runbox-code-mode-")
DATA = os.path.realpath(os.path.join(WORK, "data"))
os.makedirs(DATA)
with open(os.path.join(DATA, "notes.txt"), "w") as f:
    f.write("one\ntwo\nthree\nfour\n")
# 5.2 MB: server-filesystem answers it with its text twice (content and structuredContent).
BIG = os.path.join(DATA, "big.txt")
with open(BIG, "w") as f:
    f.write(("0123456789abcdef" * 64 + "\n") * 5 * 1024)
# The PyPI servers are console scripts beside this interpreter.
VENV_BIN = os.path.dirname(sys.executable)
REPO = os.path.join(WORK, "repo")
MEMORY_FILE = os.path.join(WORK, "memory.jsonl")


def make_repo():
    git = ["git", "-C", REPO, "-c", "user.name=runbox", "-c", "user.email=runbox@localhost"]
    subprocess.run(["git", "init", "-q", REPO], check=True)
    with open(os.path.join(REPO, "README"), "w") as f:
        f.write("a repository for mcp-server-git\n")
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first commit"], check=True)


def write_config(text):
    path = os.path.join(WORK, f"tools-{time.monotonic_ns()}.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


EVERYTHING = f"""
[servers.everything]
command = "node"
args = [{json.dumps(os.path.join(BIN, "mcp-server-everything"))}, "stdio"]
allow = ["echo", "get-sum", "get-structured-content"]
"""

BROKEN = """
[servers.broken]
command = "/nonexistent/runbox-no-such-server"
allow = "*"
"""


FILES = f"""
[servers.files]
command = "node"
args = [{json.dumps(os.path.join(BIN, "mcp-server-filesystem"))}, {json.dumps(DATA)}]
allow = ["read_text_file", "list_directory"]
"""

FAILING = f"""
[servers.failing]
command = {json.dumps(sys.executable)}
args = [{json.dumps(FAILURES)}]
allow = "*"
"""


def config(extra=""):
    """A tools config: everything (three tools), files (two), failing (all), broken."""
    return write_config(EVERYTHING + FILES + FAILING + BROKEN + extra)


def out_of(result):
    assert not result.is_error, text_of(result)
    return result.structured_content


async def run(session, runtime, code, **extra):
    return out_of(await run_code(session, runtime=runtime, code=code, **extra))


def completed(out, stdout=None):
    assert out["status"] == "completed" and out["exit_code"] == 0, out
    if stdout is not None:
        assert out["stdout"] == stdout, (out["stdout"], stdout)
    return out


PYTHON_CALLS = """
import tools
r = tools.everything.get_sum(a=2, b=3)
print(r.split()[-1].rstrip("."))
print(tools.everything.echo(message="hi"))
w = tools.everything.get_structured_content(location="Chicago")
print(sorted(w), type(w["temperature"]).__name__)
print(tools.failing.ok(x=21)["double"])
print(tools.call("everything", "get-sum", {"a": 1}, b=1).endswith("is 2."))
print(tools.everything.echo.__doc__ is not None and "echo" in tools.everything.echo.__doc__.lower())
try:
    tools.failing.fail(message="boom")
except tools.ToolError as e:
    print("ToolError", e.kind, e)
try:
    tools.everything.get_sum(a="two", b=3)
except tools.ToolError as e:
    print("ToolError", e.kind, "Input validation error" in str(e))
"""

TYPESCRIPT_LINES = """
import { files, ToolError } from "runbox:tools";
const r = await files.read_text_file({ path: "%s/notes.txt" });
const lines: number = (r as { content: string }).content.trimEnd().split("\\n").length;
console.log(lines);
try {
  await files.write_file({ path: "%s/x", content: "no" });
} catch (e) {
  console.log(e instanceof ToolError, (e as ToolError).kind);
}
""" % (DATA, DATA)

RUBY_DEVICE = """
require "json"
answer = File.open("/tools/call", "r+") do |f|
  f.write(JSON.generate(server: "everything", tool: "echo", arguments: { message: "from ruby" }))
  f.flush
  JSON.parse(f.read)
end
puts answer["value"]
"""


async def calls():
    async with stdio_session("--tools-config", config()) as s:
        listed = out_of(await s.call_tool("list_runtimes", {}))["tools"]
        by_server = {entry["server"]: entry for entry in listed}
        assert [t.split("(")[0] for t in by_server["everything"]["tools"]] == [
            "echo", "get-sum", "get-structured-content"] or sorted(
            t.split("(")[0] for t in by_server["everything"]["tools"]) == sorted(
            ["echo", "get-sum", "get-structured-content"]), by_server["everything"]
        assert by_server["everything"]["available"], by_server
        assert not by_server["broken"]["available"], by_server
        assert "could not be started" in by_server["broken"]["message"], by_server
        assert "nonexistent" not in json.dumps(listed), "the command line stays out of it"
        described = {t.name: t.description for t in (await s.list_tools()).tools}["run_code"]
        assert "everything.get-sum(a, b)" in described, described
        assert 'import { SERVER } from "runbox:tools"' in described, described
        assert "nonexistent" not in described, "the command line stays out of it"

        out = completed(await run(s, "python", PYTHON_CALLS))
        assert out["stdout"].splitlines() == [
            "5", "Echo: hi", "['conditions', 'humidity', 'temperature'] int", "42", "True", "True",
            "ToolError tool_error boom", "ToolError tool_error True"], out["stdout"]

        out = completed(await run(s, "typescript", TYPESCRIPT_LINES))
        assert out["stdout"] == "4\ntrue not_allowed\n", out

        out = completed(await run(s, "shell", "tool everything echo --message hi | jq -r ."))
        assert out["stdout"] == "Echo: hi\n", out
        out = completed(await run(s, "shell", "tool everything get-sum --a 2 --b 40 | jq -r . | grep -o '[0-9]*\\.$'"))
        assert out["stdout"] == "42.\n", out

        out = completed(await run(s, "ruby", RUBY_DEVICE))
        assert out["stdout"] == "Echo: from ruby\n", out

        # The sandbox sees what the operator allowed, and only that.
        out = completed(await run(s, "python", "print(open('/tools/README.md').read())"))
        assert "`get-sum(a, b)`" in out["stdout"] and "get-env" not in out["stdout"], out["stdout"]
        out = completed(await run(s, "shell", "ls /tools; cat /tools/tools.json | jq -r '.servers | keys | join(\",\")'"))
        assert out["stdout"].split() == ["README.md", "call", "index.d.ts", "tools.json",
                                         "broken,everything,failing,files"], out["stdout"]
        secret = completed(await run(s, "shell", "grep -rl nonexistent /tools || echo none"))
        assert secret["stdout"] == "none\n", secret
        out = completed(await run(s, "typescript", "console.log(1)"))

        # Not on the allow-list: the program's error names the list; the server goes on.
        out = await run(s, "python", "import tools\ntools.everything.get_env()")
        assert out["status"] == "completed" and out["exit_code"] == 1, out
        assert "not on the server's allow-list" in out["stderr"], out["stderr"]
        assert "allowed: echo, get-structured-content, get-sum" in out["stderr"], out["stderr"]
        out = await run(s, "shell", "tool broken anything")
        assert out["exit_code"] == 2 and "unavailable" in out["stderr"], out
        out = await run(s, "shell", "tool nosuch x")
        assert out["exit_code"] == 2 and "no server is named `nosuch`" in out["stderr"], out
        completed(await run(s, "python", "print(1)"), "1\n")

    # runbox served over HTTP gives programs the same tools, and counts their calls.
    with HttpServer("--tools-config", config()) as http:
        async with http_session(http.url) as s:
            completed(await run(s, "python", "import tools\nprint(tools.everything.echo(message='http'))"),
                      "Echo: http\n")
            await run(s, "python", "import tools\ntools.everything.get_env()")
        async with httpx2.AsyncClient() as client:
            page = (await client.get(http.url.replace("/mcp", "/metrics"))).text
        for line in ['runbox_tool_calls_total{server="everything",tool="echo",status="ok"} 1',
                     'runbox_tool_calls_total{server="everything",tool="-",status="not_allowed"} 1']:
            assert line in page, f"{line} not in /metrics:\n{page}"


async def limits():
    async with stdio_session("--tools-config", config()) as s:
        # The 101st call of one run is refused; the next run has its own 100.
        out = completed(await run(s, "python", """
import tools
for i in range(100):
    assert tools.failing.ok(x=i)["double"] == 2 * i
try:
    tools.failing.ok(x=100)
except tools.ToolError as e:
    print(e.kind, e)
"""))
        assert out["stdout"].startswith("limit this run already made 100 tool calls"), out
        completed(await run(s, "python", "import tools\nprint(tools.failing.ok(x=1)['x'])"), "1\n")

        # A request past the 1 MiB cap never leaves the sandbox.
        out = completed(await run(s, "python", """
import tools
try:
    tools.everything.echo(message="x" * 2_000_000)
except tools.ToolError as e:
    print(e.kind, "byte cap" in str(e))
"""))
        assert out["stdout"] == "limit True\n", out

        # A slow tool past the run's deadline: the run ends `timeout` at its deadline.
        start = time.monotonic()
        out = await run(s, "python", "import tools\ntools.failing.slow(seconds=30)",
                        timeout_seconds=2)
        took = time.monotonic() - start
        assert out["status"] == "timeout", out
        assert took < 8, f"the run took {took:.1f} s past a 2 s deadline"
        completed(await run(s, "shell", "tool failing ok --x 5 | jq .double"), "10\n")

        # A crash mid-call: a clear error, then the server is started again.
        out = completed(await run(s, "python", """
import tools
try:
    tools.failing.crash()
except tools.ToolError as e:
    print(e.kind)
"""))
        assert out["stdout"] == "unavailable\n", out
        await back_up(s)

        # A 50 MB answer: refused at the answer cap, the connection kept.
        out = completed(await run(s, "python", """
import tools
try:
    tools.failing.big(mb=50)
except tools.ToolError as e:
    print(e.kind, "cap" in str(e))
print(tools.failing.ok(x=5)["double"])
"""))
        assert out["stdout"] == "limit True\n10\n", out

        # A tool list that changes: the new tool is listed and callable.
        completed(await run(s, "python", "import tools\nprint(tools.failing.grow())"), "grown\n")
        for _ in range(50):
            listed = out_of(await s.call_tool("list_runtimes", {}))["tools"]
            failing = [e for e in listed if e["server"] == "failing"][0]
            if any(t.startswith("added(") for t in failing["tools"]):
                break
            await anyio.sleep(0.2)
        else:
            raise AssertionError(f"`added` never listed: {failing}")
        completed(await run(s, "python", "import tools\nprint(tools.failing.added())"), "added\n")
        completed(await run(s, "shell", "grep -c '\"added\"' /tools/tools.json"), "1\n")


async def back_up(session):
    """Waits until the failing server answers again (it is restarted with backoff)."""
    for _ in range(60):
        out = out_of(await run_code(session, runtime="shell", code="tool failing ok --x 2 | jq .double"))
        if out["stdout"] == "4\n":
            return
        await anyio.sleep(0.5)
    raise AssertionError(f"the failing server never came back: {out}")


async def listed(session, server, prefix):
    """Waits until list_runtimes lists a tool of `server` starting with `prefix`."""
    for _ in range(100):
        listed = out_of(await session.call_tool("list_runtimes", {}))["tools"]
        entry = [e for e in listed if e["server"] == server][0]
        if any(t.startswith(prefix) for t in entry["tools"]):
            return
        await anyio.sleep(0.2)
    raise AssertionError(f"{prefix} never listed: {entry}")


async def new_session(session, runtime):
    return out_of(await session.call_tool("create_session", {"runtime": runtime}))["session_id"]


JS_OK = """import { failing } from "runbox:tools";
console.log((await failing.ok({ x: %d })).double);
"""

JS_ADDED = """import { failing } from "runbox:tools";
console.log((await failing.ok({ x: 2 })).double, await failing.added());
"""


async def live():
    async with stdio_session("--tools-config", config()) as s:
        await sessions_across_changes(s)


async def live_http():
    with HttpServer("--tools-config", config()) as http:
        async with http_session(http.url) as s:
            await sessions_across_changes(s)


async def sessions_across_changes(s):
    """Sessions of python, javascript and the shell keep calling across three upstream
    changes, and see the tool added."""
    py, js, sh = [await new_session(s, r) for r in ("python", "javascript", "shell")]
    completed(await run_code_in(s, py, "import tools\nfailing = tools.failing\nprint(failing.ok(x=1)['double'])"), "2\n")
    completed(await run_code_in(s, js, JS_OK % 1), "2\n")
    completed(await run_code_in(s, sh, "tool failing ok --x 1 | jq .double"), "2\n")
    # What the session reads through the /tools it began with: its tool names.
    names = ("import json\nprint(sorted(t['name'] for t in "
             "json.load(open('/tools/tools.json'))['servers']['failing']['tools']))")
    before = completed(await run_code_in(s, py, names))
    assert "'added'" not in before["stdout"], before

    # Three changes of what programs are told: the server goes down, comes back, and
    # its tool list grows. (Each used to replace /tools, and a sandbox kept the one
    # it began with: after two, every call of theirs failed.)
    out = completed(await run(s, "python", "import tools\ntry:\n    tools.failing.crash()\nexcept tools.ToolError as e:\n    print(e.kind)"))
    assert out["stdout"] == "unavailable\n", out
    await back_up(s)
    completed(await run(s, "python", "import tools\nprint(tools.failing.grow())"), "grown\n")
    await listed(s, "failing", "added(")

    # Each session still calls, and sees the tool added since it began.
    completed(await run_code_in(
        s, py, "print(failing.ok(x=2)['double'], failing.added(), 'added' in dir(failing), 'added' in dir(tools.failing))"),
        "4 added True True\n")
    completed(await run_code_in(s, js, JS_ADDED), "4 added\n")
    completed(await run_code_in(s, sh, "tool failing ok --x 2 | jq .double; tool failing added | jq -r ."),
              "4\nadded\n")
    # The same open directory now holds the new tools.json. (Its inode number is no
    # witness: the old file's number is free once it is renamed over, and may be reused.)
    after = completed(await run_code_in(s, py, names))
    assert "'added'" in after["stdout"], after
    completed(await run(s, "python", "import tools\nprint(tools.failing.added())"), "added\n")
    completed(await run(s, "ruby", RUBY_DEVICE), "Echo: from ruby\n")


async def failing_neighbour():
    # One server that works and one that cannot start, tried again at 1, 3, 7 and 15 s.
    async with stdio_session("--tools-config", write_config(EVERYTHING + BROKEN)) as s:
        sid = await new_session(s, "python")
        first = completed(await run_code_in(
            s, sid, "import os, tools\nprint(os.stat('/tools/tools.json').st_ino)\nprint(tools.everything.echo(message='0'))"))
        ino = first["stdout"].splitlines()[0]
        for i in range(1, 9):
            await anyio.sleep(2)
            completed(await run_code_in(
                s, sid, f"print(os.stat('/tools/tools.json').st_ino)\nprint(tools.everything.echo(message='{i}'))"),
                f"{ino}\nEcho: {i}\n")
failing_neighbour.deadline = 120


COUNT = "tool failing count | jq -r ."


async def oversize():
    async with stdio_session("--tools-config", config()) as s:
        # server-filesystem answers a 5 MiB file with 10 MB of JSON: past the 4 MiB cap,
        # that call fails, and the next one of the same server is answered at once.
        out = completed(await run(s, "python", f"""
import tools
try:
    tools.files.read_text_file(path={BIG!r})
except tools.ToolError as e:
    print(e.kind, "4194304 byte cap" in str(e))
print(sorted(tools.files.list_directory(path={DATA!r})["content"].split()))
"""))
        assert out["stdout"] == "limit True\n['[FILE]', '[FILE]', 'big.txt', 'notes.txt']\n", out

        # The connection stays: the server counts on (a restarted one would start at 1).
        n = int(completed(await run(s, "shell", COUNT))["stdout"])
        out = completed(await run(s, "python", """
import tools
try:
    tools.failing.big(mb=50)
except tools.ToolError as e:
    print(e.kind, "cap" in str(e))
print(tools.failing.ok(x=3)["double"])
"""))
        assert out["stdout"] == "limit True\n6\n", out
        completed(await run(s, "shell", COUNT), f"{n + 1}\n")

        # Another program's calls while one asks for answers past the cap: none fails.
        results = {}

        async def asking_too_much():
            results["big"] = await run(s, "python", """
import tools
for _ in range(5):
    try:
        tools.failing.big(mb=20)
    except tools.ToolError as e:
        print(e.kind)
""", timeout_seconds=40)

        async def asking_little():
            results["small"] = await run(s, "python", """
import time, tools
ok = 0
for i in range(24):
    ok += tools.failing.ok(x=i)["double"] == 2 * i
    time.sleep(0.05)
print(ok)
""", timeout_seconds=40)

        async with anyio.create_task_group() as tg:
            tg.start_soon(asking_too_much)
            tg.start_soon(asking_little)
        assert completed(results["big"])["stdout"] == "limit\n" * 5, results["big"]
        assert completed(results["small"])["stdout"] == "24\n", results["small"]
        completed(await run(s, "shell", COUNT), f"{n + 2}\n")


def start_http_upstream():
    """upstream_failures.py over streamable HTTP on a free loopback port: (process, url)."""
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, FAILURES, "--http", str(port)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if "Uvicorn running on" in line:
            break
    else:
        raise AssertionError("upstream_failures.py never listened")
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    return proc, f"http://127.0.0.1:{port}/mcp"


async def oversize_http():
    proc, url = start_http_upstream()
    try:
        extra = f"""
[servers.web]
url = "{url}"
allow = "*"
"""
        async with stdio_session("--tools-config", write_config(extra)) as s:
            n = int(completed(await run(s, "shell", "tool web count | jq -r ."))["stdout"])
            out = completed(await run(s, "python", """
import tools
try:
    tools.web.big(mb=50)
except tools.ToolError as e:
    print(e.kind, "cap" in str(e))
print(tools.web.ok(x=4)["double"])
"""))
            assert out["stdout"] == "limit True\n8\n", out
            completed(await run(s, "shell", "tool web count | jq -r ."), f"{n + 1}\n")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


QJS_OPEN = """globalThis.kept = [];
let refused = "none";
for (let i = 0; i < 20; i++) {
  const f = std.open("/tools/call", "r+");
  if (!f) { refused = i; break; }
  kept.push(f);
}
console.log(kept.length, refused);
"""

QJS_FILL = """const chunk = " ".repeat(1 << 20);
for (const f of kept) { f.puts(chunk); f.flush(); }
const answer = JSON.parse(kept[15].readAsString());
console.log(answer.error, answer.message.includes("memory limit"));
"""


async def device_budget():
    async with stdio_session("--tools-config", config(), "--memory-mb", "16") as s:
        sid = await new_session(s, "quickjs")
        # A session keeps its descriptors between calls: 16 open at most.
        completed(await run_code_in(s, sid, QJS_OPEN), "16 16\n")
        # What they hold is host memory charged to the run: 16 requests of 1 MiB do not
        # fit in 16 MiB beside the interpreter; the answer says so.
        completed(await run_code_in(s, sid, QJS_FILL), "limit true\n")
        # The next program of the session still calls (closing one makes room).
        completed(await run_code_in(s, sid, """kept.pop().close();
const f = std.open("/tools/call", "r+");
f.puts(JSON.stringify({server: "everything", tool: "echo", arguments: {message: "room"}}));
f.flush();
console.log(JSON.parse(f.readAsString()).value);
"""), "Echo: room\n")


def five_servers():
    make_repo()
    return write_config(EVERYTHING + FILES + f"""
[servers.memory]
command = "node"
args = [{json.dumps(os.path.join(BIN, "mcp-server-memory"))}]
env = {{ MEMORY_FILE_PATH = {json.dumps(MEMORY_FILE)} }}
allow = ["create_entities", "read_graph", "search_nodes"]

[servers.time]
command = {json.dumps(os.path.join(VENV_BIN, "mcp-server-time"))}
args = ["--local-timezone", "UTC"]
allow = "*"

[servers.git]
command = {json.dumps(os.path.join(VENV_BIN, "mcp-server-git"))}
args = ["--repository", {json.dumps(REPO)}]
allow = ["git_status", "git_log"]
""")


# Programs as a model writes them from run_code's description alone: each line there says
# what a call hands back (`-> {content: string}`, `-> text`).
ANSWERS_PYTHON = f"""
import tools
print(tools.files.read_text_file(path={os.path.join(DATA, "notes.txt")!r})["content"].split()[-1])
tools.memory.create_entities(entities=[{{"name": "Ada", "entityType": "person", "observations": ["wrote code"]}}])
print([e["name"] for e in tools.memory.read_graph()["entities"]])
print(tools.time.get_current_time(timezone="UTC")["timezone"])
print(tools.git.git_status(repo_path={REPO!r}).splitlines()[0])
print(tools.everything.echo(message="hi"))
print(tools.everything.get_structured_content(location="Chicago")["conditions"] != "")
"""

ANSWERS_TYPESCRIPT = f"""
import {{ files, memory, time }} from "runbox:tools";
const text = (await files.read_text_file({{ path: {json.dumps(os.path.join(DATA, "notes.txt"))} }})).content;
console.log(text.trim().split("\\n").length);
const graph = await memory.search_nodes({{ query: "Ada" }});
console.log(graph.entities.map((e) => e.name).join(","));
console.log((await time.get_current_time({{ timezone: "UTC" }})).timezone);
"""


async def answers():
    async with stdio_session("--tools-config", five_servers()) as s:
        described = {t.name: t.description for t in (await s.list_tools()).tools}["run_code"]
        for line in ["files.read_text_file(path, head?, tail?) -> {content: string}",
                     "everything.echo(message) -> text",
                     "git.git_status(repo_path) -> text",
                     "time.get_current_time(timezone) -> {datetime: string, ",
                     "memory.read_graph() -> {entities: [{"]:
            assert line in described, f"{line!r} not in:\n{described}"
        out = completed(await run(s, "python", "print(open('/tools/README.md').read())"))
        assert "`read_text_file(path, head?, tail?)` -> `{content: string}`" in out["stdout"], out["stdout"]
        completed(await run(s, "python", ANSWERS_PYTHON),
                  "four\n['Ada']\nUTC\nRepository status:\nEcho: hi\nTrue\n")
        completed(await run(s, "typescript", ANSWERS_TYPESCRIPT), "4\nAda\nUTC\n")
answers.deadline = 300


async def http_upstream():
    env = {**os.environ, "PORT": "0"}
    proc = subprocess.Popen(
        ["node", "--require", os.path.join(HERE, "loopback.cjs"),
         os.path.join(BIN, "mcp-server-everything"), "streamableHttp"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env=env, text=True)
    try:
        port = None
        for line in proc.stderr:
            m = re.search(r"loopback listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                port = m.group(1)
                break
        assert port, "server-everything never listened"
        extra = f"""
[servers.web]
url = "http://127.0.0.1:{port}/mcp"
headers = {{ X-Test = "${{RUNBOX_TEST_HEADER}}" }}
allow = ["echo"]
"""
        async with stdio_session("--tools-config", config(extra),
                                 env={"RUNBOX_TEST_HEADER": "yes"}) as s:
            completed(await run(s, "shell", "tool web echo --message over-http | jq -r ."),
                      "Echo: over-http\n")
            out = await run(s, "shell", "tool web get-env")
            assert out["exit_code"] == 2 and "allow-list" in out["stderr"], out
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def durable():
    store = tempfile.mkdtemp(prefix="runbox-code-mode-store-")
    args = ("--tools-config", config(), "--session-store", store,
            "--session-hibernate-after", "1")
    async with stdio_session(*args) as s:
        created = out_of(await s.call_tool("create_session", {"runtime": "python"}))
        sid = created["session_id"]
        completed(await run_code_in(s, sid, "import tools\nn = tools.failing.count()\nprint(n)"), "1\n")
        # Hibernate (stored, memory freed), then resume: the call above is replayed from
        # the journal; the upstream is not asked again.
        await anyio.sleep(3)
        out = completed(await run_code_in(s, sid, "print(n)"))
        assert out["stdout"] == "1\n", out
        out = completed(await run_code_in(s, sid, "print(tools.failing.count())"))
        assert out["stdout"] == "2\n", f"the replay called the upstream again: {out}"


async def run_code_in(session, sid, code):
    return out_of(await run_code(session, session_id=sid, code=code))


calls.deadline = 300
limits.deadline = 300
main({"calls": calls, "limits": limits, "live": live, "live_http": live_http,
      "failing_neighbour": failing_neighbour,
      "oversize": oversize, "oversize_http": oversize_http, "device_budget": device_budget,
      "answers": answers, "http_upstream": http_upstream, "durable": durable},
     label="code_mode ")
