"""Sessions through `runbox mcp`, over stdio or streamable HTTP, driven by the MCP Python
SDK. Usage: sessions.py TRANSPORT SCENARIO, TRANSPORT being `stdio` or `http`."""

import glob
import os
import sys
import tempfile
import time
from contextlib import asynccontextmanager

import anyio

from harness import (
    connected,
    check_run,
    check_tool_error,
    completed,
    main,
    run_code,
    text_of,
)

TRANSPORT = sys.argv[1]
SCRATCH = tempfile.mkdtemp(prefix="runbox-session-test-")


@asynccontextmanager
async def server(*args):
    """A client session with `runbox mcp ARGS` over the chosen transport; every server
    keeps its scratch directories under SCRATCH."""
    async with connected(TRANSPORT, "--scratch-dir", SCRATCH, *args) as session:
        yield session


def session_dirs():
    return glob.glob(os.path.join(SCRATCH, "*", "runbox-session-*"))


async def create(session, runtime):
    result = await session.call_tool("create_session", {"runtime": runtime})
    assert not result.is_error, text_of(result)
    content = result.structured_content
    assert content["runtime"] == runtime, content
    assert len(content["session_id"]) >= 32, content
    assert content["idle_timeout_seconds"] > 0, content
    return content["session_id"]


async def in_session(session, sid, code, **extra):
    return await run_code(session, session_id=sid, code=code, **extra)


def in_session_completed(stdout, sid, stderr="", exit_code=0):
    return completed(stdout, stderr, exit_code, session_id=sid)


CARRY_OVER = {
    "python": [
        ("import json\nx = 41\ndef double(n):\n    return 2 * n", ""),
        ("print(x + 1, double(21), json.dumps([1]))", "42 42 [1]\n"),
    ],
    "quickjs": [
        ("var x = 41;\nfunction double(n) { return 2 * n; }\nvar lib = { json: JSON };", ""),
        ("console.log(x + 1, double(21), lib.json.stringify([1]))", "42 42 [1]\n"),
    ],
    "ruby": [
        ("require 'json'\nx = 41\ndef double(n) = 2 * n", ""),
        ("puts [x + 1, double(21), JSON.generate([1])].join(' ')", "42 42 [1]\n"),
    ],
}

RAISE = {
    "python": "raise ValueError('boom')",
    "quickjs": "throw new Error('boom')",
    "ruby": "raise ArgumentError, 'boom'",
}


async def carry_over():
    """A variable, a function and an import carry over in python, quickjs and ruby; an
    exception leaves the earlier state; each call has its own stdin and exit code."""
    async with server() as session:
        for runtime, steps in CARRY_OVER.items():
            sid = await create(session, runtime)
            for code, out in steps:
                check_run(await in_session(session, sid, code), in_session_completed(out, sid))
            result = await in_session(session, sid, RAISE[runtime])
            content = result.structured_content
            assert content["status"] == "completed" and content["exit_code"] == 1, content
            assert "boom" in content["stderr"], content
            code, out = steps[-1]
            check_run(await in_session(session, sid, code), in_session_completed(out, sid))
            # A runtime may be given when it is the session's own.
            result = await run_code(session, session_id=sid, runtime=runtime, code=code)
            check_run(result, in_session_completed(out, sid))
            await session.call_tool("close_session", {"session_id": sid})

        # pandas: load once, query in the next call (what the sessions are for).
        sid = await create(session, "python")
        csv = "city,temp\n" + "".join(f"c{i % 3},{i}\n" for i in range(30))
        result = await in_session(session, sid, files=[{"path": "t.csv", "content": csv}],
                                  code="import pandas as pd\ndf = pd.read_csv('t.csv')\nprint(len(df))")
        check_run(result, in_session_completed("30\n", sid))
        result = await in_session(session, sid, code="print(df.groupby('city').temp.max().to_dict())")
        check_run(result, in_session_completed("{'c0': 27, 'c1': 28, 'c2': 29}\n", sid))
        # stdin and exit codes are per call.
        result = await in_session(session, sid, stdin="abc",
                                  code="import sys\nprint(sys.stdin.read().upper())\nsys.exit(4)")
        check_run(result, in_session_completed("ABC\n", sid, exit_code=4))
        result = await in_session(session, sid, code="import sys\nprint(repr(sys.stdin.read()), len(df))")
        check_run(result, in_session_completed("'' 30\n", sid))


async def files_carry_over():
    """In clang each call compiles anew, beside the files earlier calls left."""
    async with server() as session:
        sid = await create(session, "clang")
        listing = await session.call_tool("list_runtimes", {})
        clang = next(r for r in listing.structured_content["runtimes"] if r["name"] == "clang")
        assert clang["session_state"] is False, clang
        result = await in_session(session, sid, timeout_seconds=40, code=(
            "#include <stdio.h>\nint main(void) { FILE *f = fopen(\"count.txt\", \"w\");"
            " fprintf(f, \"7\"); fclose(f); puts(\"wrote\"); return 0; }"))
        content = result.structured_content
        check_run(result, in_session_completed("wrote\n", sid, **{}) | {"files": content["files"]})
        assert [f["path"] for f in content["files"]] == ["count.txt"], content["files"]
        result = await in_session(session, sid, timeout_seconds=40, code=(
            "#include <stdio.h>\nint main(void) { int n = 0; FILE *f = fopen(\"count.txt\", \"r\");"
            " fscanf(f, \"%d\", &n); printf(\"%d\\n\", n * 6); return 0; }"))
        # count.txt was left as it was: not listed again.
        check_run(result, in_session_completed("42\n", sid))


async def files_carry_over_in_every_runtime_that_runs_anew():
    """php-cgi and clangpp, like clang, run each call anew beside the files kept."""
    async with server() as session:
        for runtime, write, read in [
            ("php-cgi", "<?php file_put_contents('n.txt', '7'); echo \"wrote\\n\";",
             "<?php echo intval(file_get_contents('n.txt')) * 6, \"\\n\";"),
            ("clangpp",
             "#include <fstream>\n#include <iostream>\nint main() { std::ofstream(\"n.txt\") << 7;"
             " std::cout << \"wrote\\n\"; }",
             "#include <fstream>\n#include <iostream>\nint main() { int n = 0;"
             " std::ifstream(\"n.txt\") >> n; std::cout << n * 6 << \"\\n\"; }"),
        ]:
            sid = await create(session, runtime)
            result = await in_session(session, sid, write, timeout_seconds=40)
            content = result.structured_content
            assert content["stdout"] == "wrote\n" and content["exit_code"] == 0, content
            assert [f["path"] for f in content["files"]] == ["n.txt"], content
            result = await in_session(session, sid, read, timeout_seconds=40)
            check_run(result, in_session_completed("42\n", sid))
            await session.call_tool("close_session", {"session_id": sid})


async def limits_in_a_session():
    """Per call: the output cap, and a call it cut resets the interpreter but keeps the
    files. For the session's whole life: the memory cap (its interpreter's, not a
    call's) and the scratch disk cap."""
    async with server("--output-bytes", "10000") as session:
        sid = await create(session, "python")
        result = await in_session(session, sid, "x = 7\n_ = open('kept.txt', 'w').write('yes')")
        assert result.structured_content["status"] == "completed", result.structured_content
        result = await in_session(session, sid, "print('y' * 50000)")
        content = result.structured_content
        assert content["status"] == "terminated" and content["truncated"], content
        assert "reset" in content["error"] and "files were kept" in content["error"], content
        # The next call has an output cap of its own: 9,000 bytes pass.
        result = await in_session(session, sid, "print('z' * 9000)\nprint(open('kept.txt').read())\nprint(x)")
        content = result.structured_content
        assert content["stdout"] == "z" * 9000 + "\nyes\n", content
        assert not content["truncated"] and "NameError" in content["stderr"], content

        # Memory: what earlier calls keep counts against a later call's cap.
        sid = await create(session, "python")
        await in_session(session, sid, "chunks = []")
        refused_at = None
        for call in range(8):
            result = await in_session(session, sid, "chunks.append(bytearray(100 << 20))\nprint(len(chunks))")
            content = result.structured_content
            if content["stdout"] == f"{call + 1}\n":
                continue
            assert content["status"] == "completed" and "MemoryError" in content["stderr"], content
            refused_at = call
            break
        # 512 MiB: the interpreter and at most four more 100 MiB chunks.
        assert refused_at is not None and 1 <= refused_at <= 4, refused_at
        result = await in_session(session, sid, "print(len(chunks))")
        check_run(result, in_session_completed(f"{refused_at}\n", sid))

        # Disk: 256 MiB for the session's whole life, not per call.
        sid = await create(session, "python")
        write = "_ = open('f{n}', 'wb').write(b'x' * (100 << 20))\nprint('wrote')"
        for n in (1, 2):
            result = await in_session(session, sid, write.format(n=n))
            assert result.structured_content["stdout"] == "wrote\n", result.structured_content
        result = await in_session(session, sid, write.format(n=3))
        content = result.structured_content
        assert content["stdout"] == "" and "No space left" in content["stderr"], content


async def timeouts_reset_state():
    """A call past its deadline, or one that crashed, resets the interpreter but keeps the
    files, and says so."""
    async with server() as session:
        sid = await create(session, "python")
        check_run(await in_session(session, sid, "x = 1\n_ = open('kept.txt', 'w').write('yes')"),
                  in_session_completed("", sid) | {"files": [
                      {"path": "kept.txt", "size": 3, "mime_type": "text/plain", "returned": True}]})
        result = await in_session(session, sid, "while True:\n    pass", timeout_seconds=0.5)
        content = result.structured_content
        assert content["status"] == "timeout", content
        assert "reset" in content["error"] and "files were kept" in content["error"], content
        assert content["session_id"] == sid, content
        result = await in_session(session, sid, "print(open('kept.txt').read())\nprint(x)")
        content = result.structured_content
        assert content["stdout"] == "yes\n", content
        assert "NameError" in content["stderr"], content
        # quickjs and ruby too.
        for runtime, define, loop, use in [
            ("quickjs", "var y = 2;", "for (;;) {}", "console.log(typeof y)"),
            ("ruby", "$y = 2", "loop { }", "p $y"),
        ]:
            sid = await create(session, runtime)
            await in_session(session, sid, define)
            result = await in_session(session, sid, loop, timeout_seconds=0.5)
            assert result.structured_content["status"] == "timeout", result.structured_content
            assert "reset" in result.structured_content["error"]
            result = await in_session(session, sid, use)
            assert result.structured_content["stdout"] in ("undefined\n", "nil\n"), result.structured_content
        # A crash (quickjs traps when its stack runs out) resets it the same way.
        sid = await create(session, "quickjs")
        await in_session(session, sid, "var kept = 1; std.open('crash.txt', 'w').puts('kept');")
        result = await in_session(session, sid, "function f(n) { return f(n + 1) + 1; }\nf(0);")
        content = result.structured_content
        assert content["status"] == "crashed", content
        assert "reset" in content["error"] and "files were kept" in content["error"], content
        result = await in_session(session, sid, "console.log(typeof kept, std.loadFile('crash.txt'))")
        check_run(result, in_session_completed("undefined kept\n", sid))


async def isolation():
    """Two sessions see neither each other's files nor variables, nor the host."""
    canary = os.path.join(tempfile.mkdtemp(), "canary.txt")
    with open(canary, "w") as f:
        f.write("host secret 7f3a")
    async with server() as session:
        a = await create(session, "python")
        b = await create(session, "python")
        await in_session(session, a, "secret = 'a-only'\n_ = open('a.txt', 'w').write('a')")
        result = await in_session(session, b, (
            "import os\nprint(sorted(os.listdir('/')))\n"
            "print('secret' in globals())\n"
            "print(os.path.exists('a.txt'))"))
        content = result.structured_content
        assert "a.txt" not in content["stdout"], content
        assert content["stdout"].endswith("False\nFalse\n"), content
        result = await in_session(session, b, (
            f"try:\n    print(open({canary!r}).read())\nexcept OSError as e:\n    print('refused')"))
        assert result.structured_content["stdout"] == "refused\n", result.structured_content
        for runtime, code in [
            ("quickjs", f"let f = std.open({canary!r}, 'r'); console.log(f ? f.readAsString() : 'refused')"),
            ("ruby", f"begin; puts File.read({canary!r}); rescue SystemCallError; puts 'refused'; end"),
        ]:
            sid = await create(session, runtime)
            result = await in_session(session, sid, code)
            assert result.structured_content["stdout"] == "refused\n", result.structured_content
            assert "7f3a" not in str(result.structured_content)


async def refusals():
    """Closed, expired and unknown ids, and another runtime, are refused with what to do."""
    async with server("--session-idle-timeout", "1") as session:
        sid = await create(session, "python")
        result = await run_code(session, session_id=sid, runtime="ruby", code="puts 1")
        check_tool_error(result, sid, "python", "ruby", "create_session")
        closed = await session.call_tool("close_session", {"session_id": sid})
        assert not closed.is_error and closed.structured_content == {
            "session_id": sid, "closed": True}, closed
        check_tool_error(await in_session(session, sid, "print(1)"), sid, "closed",
                         "create_session")
        check_tool_error(await session.call_tool("close_session", {"session_id": sid}),
                         "closed")
        check_tool_error(await in_session(session, session_id_unknown(), "print(1)"),
                         "unknown session_id", "create_session")
        check_tool_error(await session.call_tool("create_session", {"runtime": "cobol"}),
                         "cobol", "python")
        check_tool_error(await session.call_tool("run_code", {"code": "1"}),
                         "runtime", "session_id")

        # Idle expiry, with its own message; its files are removed.
        sid = await create(session, "python")
        await in_session(session, sid, "_ = open('x.txt', 'w').write('x')")
        assert session_dirs(), "the session has a scratch directory"
        await anyio.sleep(2.5)
        check_tool_error(await in_session(session, sid, "print(1)"), sid, "expired",
                         "create_session")
        assert session_dirs() == [], session_dirs()


def session_id_unknown():
    return "0" * 32


async def cap():
    """One session more than --max-sessions is a tool error naming the cap."""
    async with server("--max-sessions", "2") as session:
        first = await create(session, "quickjs")
        await create(session, "php-cgi")
        check_tool_error(await session.call_tool("create_session", {"runtime": "python"}),
                         "2 sessions", "--max-sessions", "close_session")
        await session.call_tool("close_session", {"session_id": first})
        await create(session, "python")


async def serialized():
    """Calls in one session take turns; calls in two sessions run at once."""
    # Each step says on stderr when it began and ended (the guest's clock is the host's).
    step = ("import sys, time\nt = time.time()\nwhile time.time() - t < 0.4:\n    pass\n"
            "n = n + 1 if 'n' in globals() else 1\nprint(n)\nprint(t, time.time(), file=sys.stderr)")
    async with server() as session:
        a = await create(session, "python")
        b = await create(session, "python")
        await in_session(session, a, "print(0)")
        await in_session(session, b, "print(0)")
        results = {}

        async def one(key, sid):
            results[key] = await in_session(session, sid, step)

        start = time.monotonic()
        async with anyio.create_task_group() as tg:
            for i in range(3):
                tg.start_soon(one, f"a{i}", a)
        serial = time.monotonic() - start
        outs = sorted(r.structured_content["stdout"] for r in results.values())
        # Each saw the one before it: 1, 2, 3, never two at once.
        assert outs == ["1\n", "2\n", "3\n"], outs
        assert serial >= 1.2, serial

        results.clear()
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "a", a)
            tg.start_soon(one, "b", b)
        # The two calls ran at once: each began before the other ended. (A wall-clock
        # bound on both left a loaded machine a quarter of a second.)
        (a0, a1), (b0, b1) = [map(float, results[k].structured_content["stderr"].split())
                              for k in ("a", "b")]
        assert a0 < b1 and b0 < a1, ((a0, a1), (b0, b1))
        assert results["a"].structured_content["stdout"] == "4\n"
        assert results["b"].structured_content["stdout"] == "1\n"


async def cleanup():
    """No scratch is left after close, expiry and shutdown."""
    async with server("--session-idle-timeout", "2") as session:
        closed = await create(session, "python")
        expiring = await create(session, "ruby")
        await create(session, "quickjs")
        for sid in (closed, expiring):
            await in_session(session, sid, "1")
        assert len(session_dirs()) == 3, session_dirs()
        await session.call_tool("close_session", {"session_id": closed})
        assert len(session_dirs()) == 2, session_dirs()
    # The server is gone: every session's files with it.
    deadline = time.monotonic() + 5
    while session_dirs() and time.monotonic() < deadline:
        await anyio.sleep(0.1)
    assert session_dirs() == [], session_dirs()


if __name__ == "__main__":
    scenarios = {
        "carry_over": carry_over,
        "files_carry_over": files_carry_over,
        "files_carry_over_in_every_runtime_that_runs_anew": files_carry_over_in_every_runtime_that_runs_anew,
        "limits_in_a_session": limits_in_a_session,
        "timeouts_reset_state": timeouts_reset_state,
        "isolation": isolation,
        "refusals": refusals,
        "cap": cap,
        "serialized": serialized,
        "cleanup": cleanup,
    }
    main(scenarios, label=f"{TRANSPORT} ")
