"""Code mode (docs/tools.md) through the MCP Python SDK: programs in the sandbox call the
tools of upstream MCP servers that no one here wrote (npm's server-everything and
server-filesystem), and of upstream_failures.py for what can go wrong.
Usage: code_mode.py SCENARIO.

- calls: python, typescript, shell and ruby programs call tools; list_runtimes and the
  run_code description list them; a tool off the allow-list and an upstream that cannot
  start give clear errors; runbox also serves them over HTTP.
- limits: the 101st call, a slow tool past the run's deadline, a crash mid-call, a 50 MB
  answer and a changed tool list, each leaving the server healthy.
- http_upstream: server-everything over streamable HTTP.
- durable: a resumed session replays a tool's recorded answer, never calling it again.

RUNBOX_TEST_UPSTREAM_NPM is the npm prefix holding both servers (tests/all/code_mode.rs).
"""

import json
import os
import re
import subprocess
import sys
import tempfile
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


def config(extra=""):
    """A tools config: everything (three tools), files (two), failing (all), broken."""
    path = os.path.join(WORK, f"tools-{time.monotonic_ns()}.toml")
    with open(path, "w") as f:
        f.write(f"""
[servers.everything]
command = "node"
args = [{json.dumps(os.path.join(BIN, "mcp-server-everything"))}, "stdio"]
allow = ["echo", "get-sum", "get-structured-content"]

[servers.files]
command = "node"
args = [{json.dumps(os.path.join(BIN, "mcp-server-filesystem"))}, {json.dumps(DATA)}]
allow = ["read_text_file", "list_directory"]

[servers.failing]
command = {json.dumps(sys.executable)}
args = [{json.dumps(FAILURES)}]
allow = "*"

[servers.broken]
command = "/nonexistent/runbox-no-such-server"
allow = "*"
{extra}""")
    return path


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

        # A 50 MB answer: refused at the answer cap; the server is started again.
        out = completed(await run(s, "python", """
import tools
try:
    tools.failing.big(mb=50)
except tools.ToolError as e:
    print(e.kind, "cap" in str(e))
"""))
        assert out["stdout"] == "limit True\n", out
        await back_up(s)

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
main({"calls": calls, "limits": limits, "http_upstream": http_upstream, "durable": durable},
     label="code_mode ")
