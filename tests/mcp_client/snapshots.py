"""Sessions as snapshots (docs/mcp.md, "Forking a session" and "Durable sessions"),
driven by the MCP Python SDK. Usage: snapshots.py [stdio|http] SCENARIO.

What must hold: `list_runtimes` tells each stateful runtime's session_mode;
`fork_session` copies a python session holding a DataFrame and a fitted model into new
sessions that each live on their own; bad arguments are tool errors; a stored python
session comes back exact after `kill -9` and a restart, without running its calls again
(one of which read the clock for seconds and drew megabytes of random bytes, which no
record of its calls could keep).
"""

import os
import shutil
import signal
import sys
import tempfile
import time

import anyio

from harness import HttpServer, check_tool_error, http_session, main, run_code, stdio_session, text_of

TRANSPORT = sys.argv[1] if len(sys.argv) > 2 else "stdio"
STORE = tempfile.mkdtemp(prefix="runbox-snapshots-")

# A DataFrame, a model fitted on it, and what both print.
PREPARE = (
    "import numpy as np, pandas as pd\n"
    "from sklearn.linear_model import LinearRegression\n"
    "rng = np.random.default_rng(3)\n"
    "df = pd.DataFrame(rng.random((200_000, 5)), columns=list('abcde'))\n"
    "model = LinearRegression().fit(df[['a', 'b', 'c', 'd']], df['e'])\n"
)
SHOW = ("print(df.shape, repr(float(df.values.sum())), repr(float(model.coef_.sum())), "
        "repr(float(model.predict(df[['a', 'b', 'c', 'd']].head(3)).sum())))")


def server(*args):
    """A connected client of a runbox with `args`, over TRANSPORT."""
    if TRANSPORT == "stdio":
        return stdio_session(*args)
    return _http(*args)


class _http:
    def __init__(self, *args):
        self.http = HttpServer(*args)

    async def __aenter__(self):
        self.cm = http_session(self.http.url)
        return await self.cm.__aenter__()

    async def __aexit__(self, *exc):
        await self.cm.__aexit__(*exc)
        self.http.close()


async def ok(session, **arguments):
    result = await run_code(session, **arguments)
    out = result.structured_content
    assert out and out["status"] == "completed" and out["exit_code"] == 0, text_of(result)
    return out


async def create(session, runtime):
    result = await session.call_tool("create_session", {"runtime": runtime})
    assert not result.is_error, text_of(result)
    return result.structured_content["session_id"]


async def fork():
    """A python session with a DataFrame and a fitted model forks into three; each copy,
    and the source, change their own DataFrame; no change is seen by another."""
    async with server() as s:
        listed = (await s.call_tool("list_runtimes", {})).structured_content["runtimes"]
        modes = {r["name"]: r.get("session_mode") for r in listed}
        assert modes["python"] == "snapshot" and modes["javascript"] == "snapshot", modes
        assert modes["quickjs"] == "replay", modes
        assert modes["clang"] is None, modes

        sid = await create(s, "python")
        await ok(s, session_id=sid, code=PREPARE + "open('note.txt', 'w').write('source')")
        before = (await ok(s, session_id=sid, code=SHOW))["stdout"]

        started = time.monotonic()
        result = await s.call_tool("fork_session", {"session_id": sid, "count": 3})
        took = time.monotonic() - started
        assert not result.is_error, text_of(result)
        forked = result.structured_content
        children = forked["session_ids"]
        assert forked["source"] == sid and len(children) == 3, forked
        assert len(set(children) | {sid}) == 4, forked
        print(f"fork into 3 through MCP: {took * 1000:.0f} ms")

        for n, child in enumerate(children):
            out = await ok(s, session_id=child, code=SHOW + "\nprint(open('note.txt').read())")
            assert out["stdout"] == before + "source\n", (before, out)
            await ok(s, session_id=child,
                     code=f"df = df.head({n + 1})\nopen('note.txt', 'w').write('child {n}')")
        await ok(s, session_id=sid, code="df['a'] = 0.0")
        for n, child in enumerate(children):
            out = await ok(s, session_id=child,
                           code="print(len(df), open('note.txt').read())")
            assert out["stdout"] == f"{n + 1} child {n}\n", out
        out = await ok(s, session_id=sid,
                       code="print(len(df), float(df['a'].sum()), open('note.txt').read())")
        assert out["stdout"] == "200000 0.0 source\n", out

        # A fork of a fork.
        result = await s.call_tool("fork_session", {"session_id": children[0]})
        assert not result.is_error, text_of(result)
        grandchild = result.structured_content["session_ids"][0]
        out = await ok(s, session_id=grandchild, code="print(len(df))")
        assert out["stdout"] == "1\n", out

        # Bad arguments, an unknown session, and a runtime that is replayed.
        check_tool_error(await s.call_tool("fork_session", {"session_id": sid, "count": 17}),
                         "`count`", "1 to 16")
        check_tool_error(await s.call_tool("fork_session", {"session_id": "nope"}), "nope")
        replayed = await create(s, "quickjs")
        check_tool_error(await s.call_tool("fork_session", {"session_id": replayed}),
                         'session_mode "replay"')
        await s.call_tool("close_session", {"session_id": sid})
        out = await ok(s, session_id=children[1], code="print(len(df))")
        assert out["stdout"] == "2\n", out


async def kill9():
    """A stored python session comes back exact after kill -9 and a restart, at once."""
    assert TRANSPORT == "http"
    first = HttpServer("--session-store", STORE, "--session-hibernate-after", "0.5")
    async with http_session(first.url) as s:
        sid = await create(s, "python")
        await ok(s, session_id=sid, code=PREPARE)
        # What no record of calls could keep: seconds of clock readings, 6 MiB of random.
        await ok(s, session_id=sid, timeout_seconds=30, code=(
            "import os, time\nt = time.perf_counter()\nticks = 0\n"
            "while time.perf_counter() - t < 8: ticks += 1\n"
            "noise = [os.urandom(1 << 20) for _ in range(6)]\n"
            "open('kept.txt', 'w').write(str(ticks))"))
        before = (await ok(s, session_id=sid, code=SHOW + "\nprint(ticks, len(noise))"))["stdout"]
        entry = os.path.join(STORE, sid + ".session")
        for _ in range(100):
            if os.path.exists(entry):
                break
            await anyio.sleep(0.1)
        assert os.path.exists(entry), os.listdir(STORE)
        print(f"stored entry: {os.path.getsize(entry) >> 20} MiB")
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(timeout=10)
    with HttpServer("--session-store", STORE) as second:
        async with http_session(second.url) as s:
            started = time.monotonic()
            out = await ok(s, session_id=sid,
                           code=SHOW + "\nprint(ticks, len(noise))\nprint(open('kept.txt').read() == str(ticks))")
            took = time.monotonic() - started
            assert out["stdout"] == before + "True\n", (before, out)
            assert out.get("notice") is None, out
            print(f"resume after kill -9 and a restart, with a call: {took * 1000:.0f} ms")
            # Running the calls again would take the loop's 8 s.
            assert took < 6, took


kill9.deadline = 300

if __name__ == "__main__":
    try:
        main({f.__name__: f for f in (fork, kill9)}, label=f"{TRANSPORT} ")
    finally:
        shutil.rmtree(STORE, ignore_errors=True)
