"""`runbox mcp` over stdio, driven by the MCP Python SDK. Usage: over_stdio.py SCENARIO"""

import time

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from harness import (
    EXPECTED,
    FOREVER,
    MANIFEST,
    PROGRAMS,
    QUICK,
    RUNBOX,
    RUNTIMES,
    cancel_after,
    check_run,
    check_tool_error,
    expected_for,
    main,
    program_arguments,
    run_code,
    run_samples,
    server_env,
    slot_wait,
    stdio_session,
    text_of,
)


async def startup():
    """With everything cached, initialize is answered in under a second (best of three)."""
    times = []
    for _ in range(3):
        params = StdioServerParameters(command=RUNBOX, args=["mcp"], env=server_env())
        start = time.monotonic()
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                result = await session.initialize()
                times.append(time.monotonic() - start)
                assert result.server_info.name == "runbox", result
                assert result.capabilities.tools is not None, result
    print("initialize answered after", ", ".join(f"{t:.3f} s" for t in times))
    assert min(times) < 1.0, times


async def schemas():
    async with stdio_session() as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert sorted(tools) == ["close_session", "create_session", "fork_session",
                                 "list_runtimes", "run_code"], sorted(tools)

        run = tools["run_code"]
        props = run.input_schema["properties"]
        assert run.input_schema["type"] == "object"
        # `runtime` may be left out in a session, so only `code` is always required.
        assert run.input_schema["required"] == ["code"]
        assert props["runtime"]["type"] == "string"
        assert props["runtime"]["enum"] == RUNTIMES, props["runtime"]
        assert "`session_id`" in props["runtime"]["description"], props["runtime"]
        assert props["code"]["type"] == "string"
        # One JSON type per property, at any depth (no ["number", "null"]): what clients
        # of 2026-07-28 and the MCP Inspector need to list the tool and convert values.
        for tool in tools.values():
            for name, prop in tool.input_schema.get("properties", {}).items():
                assert isinstance(prop.get("type"), str), (tool.name, name, prop)
                for inner, sub in prop.get("items", {}).get("properties", {}).items():
                    assert isinstance(sub.get("type"), str), (tool.name, name, inner, sub)
        assert props["stdin"]["type"] == "string"
        assert props["timeout_seconds"]["type"] == "number"
        assert props["files"]["type"] == "array"
        assert set(props) == {"runtime", "code", "stdin", "timeout_seconds", "files",
                              "session_id"}
        # A load balancer can route a session's calls by an Mcp-Param-Session header.
        assert props["session_id"]["x-mcp-header"] == "Session", props["session_id"]
        file_props = props["files"]["items"]["properties"]
        assert set(file_props) == {"path", "content", "encoding"}, file_props
        assert file_props["encoding"]["enum"] == ["utf-8", "base64"], file_props

        out = run.output_schema
        assert out["type"] == "object"
        assert set(out["required"]) == {
            "status", "exit_code", "tty", "stdout", "stderr", "error", "truncated", "duration_ms",
            "files", "session_id", "output_uri",
        }, out["required"]
        assert out["properties"]["status"]["enum"] == ["completed", "crashed", "terminated", "timeout"]
        assert out["properties"]["exit_code"]["type"] == ["integer", "null"]
        assert out["properties"]["error"]["type"] == ["string", "null"]
        assert out["properties"]["truncated"]["type"] == "boolean"
        assert out["properties"]["duration_ms"]["type"] == "number"

        # Written for a model: every runtime with its version, the sandbox's rules, the limits.
        description = run.description
        for spec in MANIFEST:
            needle = f"{spec['name']}: {spec['language']} {spec['version']}"
            assert needle in description, (needle, description)
        for needle in ["nothing to install", "No network", "starts fresh unless in a session",
                       "create_session", "figure-N.png", "10 s", "40 s", "512 MiB", "1 MiB"]:
            assert needle in description, (needle, description)

        create = tools["create_session"]
        assert create.input_schema["required"] == ["runtime"], create.input_schema
        assert create.input_schema["properties"]["runtime"]["enum"] == RUNTIMES
        assert set(create.output_schema["properties"]) == {
            "session_id", "runtime", "idle_timeout_seconds", "session_state"}
        close = tools["close_session"]
        assert close.input_schema["required"] == ["session_id"], close.input_schema
        assert close.input_schema["properties"]["session_id"]["x-mcp-header"] == "Session"

        listing = await session.call_tool("list_runtimes", {})
        assert not listing.is_error, text_of(listing)
        runtimes = listing.structured_content["runtimes"]
        # A server just started may still be loading a runtime: it says so, and only then.
        for runtime in runtimes:
            preparing = runtime.pop("preparation", None)
            assert preparing is None or preparing.startswith("preparing: "), runtime
        assert runtimes == [
            {
                "name": spec["name"], "language": spec["language"], "version": spec["version"],
                "extension": spec["extension"],
                "sample": spec["samples"][0]["code"] if spec["samples"] else None,
                "session_state": spec["session_state"], "note": spec["note"],
                # How a stateful runtime's sessions are kept: snapshot or replay.
                **({"session_mode": spec["session_mode"]} if spec["session_mode"] else {}),
            }
            for spec in MANIFEST
        ], runtimes
        keeping = {r["name"] for r in runtimes if r["session_state"]}
        assert keeping == {"python", "quickjs", "ruby", "javascript", "sqlite", "typescript",
                           "shell"}, keeping
        copied = {r["name"] for r in runtimes if r.get("session_mode") == "snapshot"}
        assert copied == {"python", "javascript", "typescript"}, copied
        assert listing.structured_content["limits"] == {
            "default_timeout_seconds": 10.0, "max_timeout_seconds": 40.0,
            "compile_timeout_seconds": 15.0, "memory_mb": 512, "output_bytes": 1048576,
            "max_sessions": 16, "session_idle_timeout_seconds": 600.0,
        }


async def every_runtime():
    """A program with exact output in every runtime, then every runtime's own samples."""
    async with stdio_session() as session:
        unknown = [r for r in RUNTIMES if r not in PROGRAMS]
        assert not unknown, f"add a program for {unknown} to PROGRAMS in harness.py"
        for runtime in RUNTIMES:
            check_run(await session.call_tool("run_code", program_arguments(runtime)),
                      expected_for(runtime))
            await run_samples(session, runtime)


async def outcomes():
    async with stdio_session() as session:
        # A non-zero exit is a completed run, not a tool error.
        result = await run_code(session, runtime="python",
                                code="import sys\nprint('bye')\nsys.exit(3)")
        check_run(result, {**EXPECTED, "exit_code": 3, "tty": "bye\n", "stdout": "bye\n",
                           "stderr": ""})

        # Without stdin the program sees end of input at once.
        result = await run_code(session, runtime="python",
                                code="import sys\nprint(repr(sys.stdin.read()))")
        check_run(result, {**EXPECTED, "tty": "''\n", "stdout": "''\n", "stderr": ""})

        # Past the deadline: timeout, with no exit code and an error saying why.
        start = time.monotonic()
        result = await run_code(session, **FOREVER, timeout_seconds=1)
        wall = time.monotonic() - start
        assert not result.is_error, text_of(result)
        content = result.structured_content
        assert content["status"] == "timeout", content
        assert content["exit_code"] is None, content
        assert content["error"], content
        assert 900 <= content["duration_ms"] < 2000, content
        assert wall < 3, wall
        assert text_of(result).startswith("status: timeout\n")

        # Fractions are allowed.
        result = await run_code(session, **FOREVER, timeout_seconds=0.25)
        assert result.structured_content["status"] == "timeout"
        assert result.structured_content["duration_ms"] < 1000, result.structured_content

        # An unknown runtime is a tool error naming the valid runtimes.
        result = await run_code(session, runtime="cobol", code="DISPLAY 'HI'.")
        check_tool_error(result, "cobol", *RUNTIMES)

        # So are malformed arguments.
        result = await session.call_tool("run_code", {"runtime": "python"})
        check_tool_error(result, "code", *RUNTIMES)
        result = await session.call_tool("run_code", {"runtime": "python", "code": 42})
        check_tool_error(result, *RUNTIMES)
        result = await run_code(session, runtime="python", code="print(1)", timeout_seconds=-1)
        check_tool_error(result, "timeout_seconds", *RUNTIMES)
        result = await run_code(session, runtime="python", code="print(1)", files=["x"])
        check_tool_error(result, "files", *RUNTIMES)

        # And the server still serves.
        result = await run_code(session, runtime="python", code="print(6 * 7)")
        check_run(result, {**EXPECTED, "tty": "42\n", "stdout": "42\n", "stderr": ""})


async def parallel():
    """Eight calls at once all run at once (up to --max-concurrent, 8 by default)."""
    busy = "import time\nt = time.time()\nwhile time.time() - t < 0.5:\n    pass\nprint({})"
    async with stdio_session() as session:
        results = [None] * 8

        async def one(i):
            results[i] = await run_code(session, runtime="python", code=busy.format(i))

        start = time.monotonic()
        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(one, i)
        wall = time.monotonic() - start
        durations = [
            check_run(r, {**EXPECTED, "tty": f"{i}\n", "stdout": f"{i}\n", "stderr": ""})
            for i, r in enumerate(results)
        ]
        print(f"8 calls: {wall:.2f} s in all, {sum(durations) / 1000:.2f} s of runs")
        # One after another they would take at least 4 s.
        assert wall < 0.5 * sum(durations) / 1000, (wall, durations)


async def settings():
    """Flags and environment variables: runtimes, the timeout cap, queueing, output cap."""
    async with stdio_session("--runtimes", "python,quickjs", "--max-timeout", "2",
                             "--output-bytes", "64",
                             env={"RUNBOX_MAX_CONCURRENT": "1"}) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert tools["run_code"].input_schema["properties"]["runtime"]["enum"] == ["python", "quickjs"]
        check_tool_error(await run_code(session, runtime="ruby", code="puts 1"),
                         "ruby", "python, quickjs")

        # Asking for more than the maximum gets the maximum.
        result = await run_code(session, **FOREVER, timeout_seconds=100)
        assert result.structured_content["status"] == "timeout", result.structured_content
        assert 1900 <= result.structured_content["duration_ms"] < 3000, result.structured_content

        # With one slot, a second call waits its turn instead of failing.
        busy = "import time\nt = time.time()\nwhile time.time() - t < 0.3:\n    pass\nprint(1)"
        results = []

        async def one():
            results.append(await run_code(session, runtime="python", code=busy))

        start = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(one)
            tg.start_soon(one)
        wall = time.monotonic() - start
        for r in results:
            check_run(r, {**EXPECTED, "tty": "1\n", "stdout": "1\n", "stderr": ""})
        assert wall >= 0.6, wall

        # The output cap cuts the output.
        result = await run_code(session, runtime="python", code="print('x' * 1000)")
        content = result.structured_content
        assert content["status"] == "terminated", content
        assert content["truncated"] is True, content
        assert "output" in content["error"], content
        assert content["stdout"] == "x" * 64, content


async def cancellation():
    """notifications/cancelled stops the run at once: with one slot, the next call runs
    within 2 s of what an idle server takes to answer (not the cancelled run's 30 s)."""
    async with stdio_session(env={"RUNBOX_MAX_CONCURRENT": "1"}) as session:
        await cancellation_frees_the_slot(session)


async def cancellation_frees_the_slot(session):
    baseline = min([(await slot_wait(session, QUICK))[1] for _ in range(3)])
    await cancel_after(session, {**FOREVER, "timeout_seconds": 30}, 1.0)
    result, waited = await slot_wait(session, QUICK)
    check_run(result, {**EXPECTED, "tty": "quick\n", "stdout": "quick\n", "stderr": ""})
    print(f"after cancelling: waited {waited * 1000:.1f} ms (idle: {baseline * 1000:.1f} ms)")
    assert waited - baseline < 2, (waited, baseline)


if __name__ == "__main__":
    main({
        "startup": startup,
        "schemas": schemas,
        "every_runtime": every_runtime,
        "outcomes": outcomes,
        "parallel": parallel,
        "settings": settings,
        "cancellation": cancellation,
    })
