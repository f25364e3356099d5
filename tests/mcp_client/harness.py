"""Shared helpers for the scenarios tests/all/mcp.rs runs against the real `runbox mcp`.

The client is the official MCP Python SDK (pinned in requirements.txt), used the two ways a
stranger would: its high-level `Client` in its default mode ("auto": it probes
`server/discover` and speaks the current revision, 2026-07-28, statelessly), or the
low-level `ClientSession.initialize()` handshake ("legacy"). RUNBOX_TEST_CLIENT picks one
(default "auto"). The binary and the artifact cache come from the environment:
RUNBOX_BIN, RUNBOX_CACHE_DIR.
"""

import json
import os
import re
import subprocess
import sys
import traceback
import threading
import time
from contextlib import asynccontextmanager

import anyio
import httpx2
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

RUNBOX = os.environ["RUNBOX_BIN"]
CACHE_DIR = os.environ["RUNBOX_CACHE_DIR"]
CLIENT = os.environ.get("RUNBOX_TEST_CLIENT", "auto")
assert CLIENT in ("auto", "legacy"), CLIENT
# What each client negotiates with runbox.
PROTOCOL = {"auto": "2026-07-28", "legacy": "2025-11-25"}

# The built-in runtimes as plugins.toml lists them, with their samples (from tests/all/mcp.rs):
# [{name, language, version, extension, samples: [{name, code, stdin, stdout,
# stderr_contains, exit_code}]}]
MANIFEST = json.loads(os.environ["RUNBOX_TEST_RUNTIMES"])
RUNTIMES = [r["name"] for r in MANIFEST]

# Compilers need more than the default 10 s when the machine is busy.
SLOW_OK = 40  # the most a client without tasks may ask for

C_PROGRAM = r"""#include <ctype.h>
#include <stdio.h>

int main(void) {
    char s[64];
    int n = 0, c;
    while ((c = getchar()) != EOF && n < 63)
        if (!isspace(c)) s[n++] = toupper(c);
    s[n] = 0;
    printf("out %s\n", s);
    fflush(stdout);
    fprintf(stderr, "err\n");
    int sum = 0;
    for (int i = 0; i < 10; i++) sum += i;
    printf("%d\n", sum);
    return 0;
}
"""

CPP_PROGRAM = r"""#include <cctype>
#include <iostream>
#include <string>

int main() {
    std::string s;
    std::getline(std::cin, s);
    for (auto &c : s) c = std::toupper(c);
    std::cout << "out " << s << std::endl;
    std::cerr << "err" << std::endl;
    int sum = 0;
    for (int i = 0; i < 10; i++) sum += i;
    std::cout << sum << std::endl;
}
"""

# One program per runtime, with the exact structuredContent it must produce (less
# duration_ms): stdout and stderr in order, stdin read back, exit code 0.
PROGRAMS = {
    "clang": (C_PROGRAM, "abc\n"),
    "clangpp": (CPP_PROGRAM, "abc\n"),
    "python": (
        "import sys\ns = sys.stdin.read()\nprint('out', s.strip().upper())\n"
        "print('err', file=sys.stderr)\nprint(sum(range(10)))",
        "abc\n",
    ),
    "quickjs": (
        "const s = std.in.readAsString();\nconsole.log('out', s.trim().toUpperCase());\n"
        "std.err.puts('err\\n');\nconsole.log([...Array(10).keys()].reduce((a, b) => a + b));",
        "abc\n",
    ),
    "ruby": (
        "s = STDIN.read\nputs \"out #{s.strip.upcase}\"\n$stderr.puts 'err'\nputs (0...10).sum",
        "abc\n",
    ),
    "javascript": (
        "const s = readStdin();\nconsole.log('out', s.trim().toUpperCase());\n"
        "console.error('err');\nconsole.log([...Array(10).keys()].reduce((a, b) => a + b));",
        "abc\n",
    ),
    "typescript": (
        "const s: string = readStdin();\nconsole.log('out', s.trim().toUpperCase());\n"
        "console.error('err');\n"
        "console.log([...Array(10).keys()].reduce((a: number, b: number): number => a + b));",
        "abc\n",
    ),
    "shell": (
        "read -r s\necho \"out $(echo \"$s\" | tr a-z A-Z)\"\necho err >&2\n"
        "seq 0 9 | awk '{t += $1} END {print t}'",
        "abc\n",
    ),
    "prolog": (
        ":- initialization(main).\n"
        "main :- read_line_to_string(user_input, S), string_upper(S, U),\n"
        "    format(\"out ~s~n\", [U]), flush_output,\n"
        "    format(user_error, \"err~n\", []),\n"
        "    numlist(0, 9, L), sum_list(L, T), write(T), nl.",
        "abc\n",
    ),
    "sqlite": (
        ".mode csv\n.import /dev/stdin t\n.mode list\nselect 'out ' || upper(w) from t;\n"
        "with recursive c(i) as (select 0 union all select i + 1 from c where i < 9) "
        "select sum(i) from c;",
        "w\nabc\n",
    ),
    "php-cgi": (
        "<?php\n$s = stream_get_contents(STDIN);\necho 'out ', strtoupper(trim($s)), \"\\n\";\n"
        "fwrite(STDERR, \"err\\n\");\necho array_sum(range(0, 9)), \"\\n\";",
        "abc\n",
    ),
}

EXPECTED = {
    "status": "completed",
    "exit_code": 0,
    "tty": "out ABC\nerr\n45\n",
    "stdout": "out ABC\n45\n",
    "stderr": "err\n",
    "error": None,
    "truncated": False,
    "files": [],
    "session_id": None,
    "output_uri": None,
}



def expected_for(runtime):
    """EXPECTED, except for SQL, which has no way to write to stderr."""
    if runtime == "sqlite":
        return {**EXPECTED, "tty": "out ABC\n45\n", "stderr": ""}
    return EXPECTED


def program_arguments(runtime):
    """run_code arguments for PROGRAMS[runtime] (expected output: EXPECTED)."""
    code, stdin = PROGRAMS[runtime]
    args = {"runtime": runtime, "code": code, "timeout_seconds": SLOW_OK}
    if stdin is not None:
        args["stdin"] = stdin
    return args


# Samples that check a guarantee (a limit, a pair of runs), not an output: the
# conformance suite's (tests/all/conformance.rs).
GUARANTEE_SAMPLES = {"busy-loop", "allocation", "file-probe", "state-set", "state-get", "flood"}


async def run_samples(session, runtime):
    """Runs every sample plugins.toml lists for `runtime` and checks what it specifies."""
    spec = next(r for r in MANIFEST if r["name"] == runtime)
    for sample in spec["samples"]:
        if sample["name"] in GUARANTEE_SAMPLES:
            continue
        args = {"runtime": runtime, "code": sample["code"], "timeout_seconds": SLOW_OK}
        if sample["stdin"] is not None:
            args["stdin"] = sample["stdin"]
        result = await session.call_tool("run_code", args)
        what = f"{runtime} sample {sample['name']}"
        assert not result.is_error, (what, text_of(result))
        content = result.structured_content
        assert content["status"] == "completed", (what, content)
        assert content["exit_code"] == sample["exit_code"], (what, content)
        if sample["stdout"] is not None:
            assert content["stdout"] == sample["stdout"], (what, content)
        if sample["stderr_contains"] is not None:
            assert sample["stderr_contains"] in content["stderr"], (what, content)
        assert content["error"] is None and content["truncated"] is False, (what, content)


# A program that never ends, and one that ends at once.
FOREVER = {"runtime": "python", "code": "while True:\n    pass"}
QUICK = {"runtime": "quickjs", "code": "console.log('quick')"}


def peak_rss(pid):
    """A process's peak resident memory in bytes (VmHWM)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def server_env(**extra):
    return {"RUNBOX_CACHE_DIR": CACHE_DIR, **extra}


@asynccontextmanager
async def stdio_session(*args, env=None, client=None):
    """A connected client of `runbox mcp ARGS` over stdio (CLIENT's kind, or `client`)."""
    params = StdioServerParameters(
        command=RUNBOX, args=["mcp", "--quiet", *args], env=server_env(**(env or {}))
    )
    if (client or CLIENT) == "legacy":
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
    else:
        async with Client(params) as session:
            assert session.protocol_version == PROTOCOL["auto"], session.protocol_version
            yield session


class HttpServer:
    """`runbox mcp --http 127.0.0.1:0 ARGS` as a child process; `url` once it listens."""

    def __init__(self, *args, env=None, stop_timeout=10):
        # How long SIGTERM may take: storing every session of a durable server writes
        # what its sessions hold (a GB takes more than 10 s on a busy disk).
        self.stop_timeout = stop_timeout
        self.proc = subprocess.Popen(
            [RUNBOX, "mcp", "--quiet", "--http", "127.0.0.1:0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **server_env(**(env or {}))},
            text=True,
        )
        self.url = None
        for line in self.proc.stderr:
            sys.stderr.write("server: " + line)
            m = re.search(r"serving MCP at (http://\S+)", line)
            if m:
                self.url = m.group(1)
                break
        assert self.url, f"the server never said where it listens (exit {self.proc.poll()})"
        # The rest of its stderr too: a full pipe would block the server mid-request.
        threading.Thread(target=self._relay_stderr, daemon=True).start()

    def _relay_stderr(self):
        for line in self.proc.stderr:
            sys.stderr.write("server: " + line)

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=self.stop_timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(
                f"the HTTP server did not stop on SIGTERM within {self.stop_timeout} s")
        out = self.proc.stdout.read()
        assert out == "", f"the HTTP server wrote to stdout: {out!r}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@asynccontextmanager
async def http_session(url, token=None, client=None):
    """A connected client of the server at `url` (CLIENT's kind, or `client`)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        if (client or CLIENT) == "legacy":
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    yield session
        else:
            async with Client(streamable_http_client(url, http_client=http)) as session:
                assert session.protocol_version == PROTOCOL["auto"], session.protocol_version
                yield session


@asynccontextmanager
async def connected(transport, *args):
    """A connected client of `runbox mcp ARGS` over `transport` (`stdio` or `http`)."""
    if transport == "stdio":
        async with stdio_session(*args) as session:
            yield session
    else:
        with HttpServer(*args) as http:
            async with http_session(http.url) as session:
                yield session


# The current revision, spoken statelessly: no handshake, each request says who it is.
CURRENT = "2026-07-28"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


def stateless_request(method, params, request_id=1, tasks=True, client="raw"):
    """A 2026-07-28 JSON-RPC request and the HTTP headers such a client sends with it:
    `Mcp-Name` (a tool's name, a task id, a URI) and `Mcp-Param-Session` (from
    `session_id`, by its `x-mcp-header`), which is what a balancer routes by. `tasks`:
    whether the client declares the tasks extension."""
    capabilities = {"extensions": {TASKS_EXTENSION: {}}} if tasks else {}
    meta = {"io.modelcontextprotocol/protocolVersion": CURRENT,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": client, "version": "0"}}
    params = {**params, "_meta": meta}
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    headers = {"Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": CURRENT, "Mcp-Method": method}
    name = params.get("name") or params.get("taskId") or params.get("uri")
    if name:
        headers["Mcp-Name"] = name
    session = params.get("arguments", {}).get("session_id")
    if session:
        headers["Mcp-Param-Session"] = session
    return message, headers


def eventually(check, seconds=5):
    """Asks `check` every 50 ms until it returns something true (returned), for at most
    `seconds`; then the last answer."""
    deadline = time.monotonic() + seconds
    while True:
        answer = check()
        if answer or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def text_of(result):
    return "\n".join(c.text for c in result.content if c.type == "text")


def check_run(result, expected):
    """A run_code result: not a tool error, exact structuredContent, readable text.

    `tty` is expected only when both streams wrote (it would repeat the one that did),
    and each listed file's `uri` is checked apart (it holds the result's random handle).
    """
    assert not result.is_error, f"tool error: {text_of(result)}"
    expected = {**EXPECTED, **expected}
    if not (expected["stdout"] and expected["stderr"]):
        expected["tty"] = None
    expected["files"] = [{k: v for k, v in f.items() if k != "uri"} for f in expected["files"]]
    got = dict(result.structured_content)
    got["files"] = [without_uri(f) for f in got["files"]]
    duration = got.pop("duration_ms")
    assert isinstance(duration, (int, float)) and duration >= 0, duration
    assert got == expected, f"\n got      {got!r}\n expected {expected!r}"
    text = text_of(result)
    assert text.startswith(f"status: {expected['status']}\n"), text
    if expected["exit_code"] is not None:
        assert f"\nexit code: {expected['exit_code']}\n" in text, text
    if expected["stdout"]:
        assert f"--- stdout ---\n{expected['stdout']}" in text, text
    if expected["stderr"]:
        assert f"--- stderr ---\n{expected['stderr']}" in text, text
    return duration


def without_uri(file):
    """A listed output file without its `uri`, which is checked to name the file."""
    file = dict(file)
    uri = file.pop("uri")
    if uri is not None:
        assert uri.startswith("runbox://") and uri.endswith("/files/" + quote(file["path"])), (
            uri, file)
    return file


def quote(path):
    """A path as runbox's URIs write it: every segment percent-encoded."""
    from urllib.parse import quote as q
    return "/".join(q(segment, safe="") for segment in path.split("/"))


def completed(stdout, stderr="", exit_code=0, **extra):
    """The structuredContent of a completed run that printed `stdout` then `stderr`."""
    return {**EXPECTED, "exit_code": exit_code, "tty": stdout + stderr, "stdout": stdout,
            "stderr": stderr, **extra}


def check_tool_error(result, *needles):
    assert result.is_error, f"expected a tool error, got {result!r}"
    text = text_of(result)
    for needle in needles:
        assert needle in text, f"{needle!r} not in {text!r}"


async def run_code(session, **arguments):
    return await session.call_tool("run_code", arguments)


async def slot_wait(session, arguments):
    """Calls run_code; returns (result, seconds spent besides the run itself)."""
    start = time.monotonic()
    result = await session.call_tool("run_code", arguments)
    wall = time.monotonic() - start
    return result, wall - result.structured_content["duration_ms"] / 1000


async def cancel_after(session, arguments, seconds):
    """Starts a call and gives up on it after `seconds`: the SDK sends notifications/cancelled."""
    with anyio.move_on_after(seconds) as scope:
        await session.call_tool("run_code", arguments)
    assert scope.cancelled_caught, "the call ended before it was cancelled"


def main(scenarios, label=""):
    """Runs the scenario named by the last argument with an overall deadline."""
    name = sys.argv[-1]

    async def run():
        # A scenario may set its own overall deadline (`scenario.deadline`, seconds).
        with anyio.fail_after(getattr(scenarios[name], "deadline", 240)):
            await scenarios[name]()

    try:
        anyio.run(run)
    except BaseExceptionGroup as group:
        # The SDK nests task groups deeper than a traceback shows: print the failures
        # themselves, so that a failed scenario says what failed.
        for leaf in _leaves(group):
            traceback.print_exception(leaf, file=sys.stderr)
        raise
    print(f"{label}{name}: ok")


def _leaves(group):
    """The exceptions inside nested exception groups."""
    for e in group.exceptions:
        if isinstance(e, BaseExceptionGroup):
            yield from _leaves(e)
        else:
            yield e
