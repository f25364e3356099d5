"""What a model trips on, through the MCP Python SDK: programs a model
writes, in the shapes it sends them. Usage: model_trips.py SCENARIO.

- sqlite_modes: `.mode column` (and box, markdown, json) give the sqlite3 shell's tables.
- compile_budget: compiling C++ does not come out of the program's `timeout_seconds`; a
  compile past its own budget says so.
- numpy_integers: numpy's integer sums and products do not overflow at 32 bits.
- asyncio: an event loop runs timers, tasks and gather; threads say they cannot start.
- cpp_exceptions: try/throw/catch compile and run.
- runno_shapes: `encoding: "text"` is taken as utf-8; a capped `timeout_seconds` is said;
  no input-schema description holds a stray line break.
- links_and_resources: a result with links says resources/list does not show them.
- shell_hub: the other runtimes as commands of `shell` (docs/plugins.md), over stdio and HTTP:
  python, sqlite3 and cc in pipes, on the same files; a runaway python in a pipe ends the
  run at its deadline.
- tasks_by_revision: a handshake-era client that lists the tasks extension gets a plain
  result; a 2026-07-28 client that claims task results gets a task and polls it.
"""

import json
from typing import Literal

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim, advertise
from mcp_types import CallToolResult, Request, RequestParams, Result
from pydantic import ConfigDict

from harness import (RUNBOX, check_tool_error, connected, main, run_code, server_env,
                     stdio_session, text_of)

TASKS = "io.modelcontextprotocol/tasks"


def out_of(result):
    assert not result.is_error, text_of(result)
    return result.structured_content


async def sqlite_modes():
    async with stdio_session("--runtimes", "sqlite") as s:
        setup = "create table t(name text, n integer);\ninsert into t values ('ab', 1), ('c', 22);\n"
        out = out_of(await run_code(s, runtime="sqlite",
                                    code=setup + ".mode column\nselect * from t;"))
        assert out["exit_code"] == 0, out
        assert out["stdout"] == "name  n \n----  --\nab    1 \nc     22\n", repr(out["stdout"])
        out = out_of(await run_code(s, runtime="sqlite",
                                    code=setup + ".mode box\nselect * from t;"))
        assert out["stdout"].startswith("┌──────┬────┐\n│ name │ n  │\n"), out["stdout"]
        out = out_of(await run_code(s, runtime="sqlite",
                                    code=setup + ".mode markdown\nselect * from t;"))
        assert out["stdout"].startswith("| name | n  |\n|------|----|\n"), out["stdout"]
        out = out_of(await run_code(s, runtime="sqlite",
                                    code=setup + ".mode json\nselect * from t;"))
        assert json.loads(out["stdout"]) == [{"name": "ab", "n": 1}, {"name": "c", "n": 22}]
        out = out_of(await run_code(s, runtime="sqlite", code=".timer on\nselect 1;"))
        assert out["exit_code"] == 1 and "supported:" in out["stderr"], out


CPP_HELLO = "#include <iostream>\nint main() { std::cout << \"hi\" << std::endl; }\n"


async def compile_budget():
    async with stdio_session("--runtimes", "clangpp") as s:
        # The C++ compile alone takes longer than this whole limit.
        out = out_of(await run_code(s, runtime="clangpp", code=CPP_HELLO, timeout_seconds=0.2))
        assert out["duration_ms"] > 200, out
        assert out["status"] == "completed" and out["stdout"] == "hi\n", out
        # A program that runs past its own limit is still its own timeout.
        loop = "int main() { volatile unsigned long n = 0; for (;;) n = n + 1; }\n"
        out = out_of(await run_code(s, runtime="clangpp", code=loop, timeout_seconds=1))
        assert out["status"] == "timeout", out
        assert out["error"].startswith("time limit reached"), out
    async with stdio_session("--runtimes", "clangpp", "--compile-timeout", "0.05") as s:
        out = out_of(await run_code(s, runtime="clangpp", code=CPP_HELLO, timeout_seconds=5))
        assert out["status"] == "timeout", out
        assert out["error"].startswith("compiling took longer than"), out
        assert "the program did not run" in out["error"], out
        listing = await s.call_tool("list_runtimes", {})
        assert listing.structured_content["limits"]["compile_timeout_seconds"] == 0.05


async def numpy_integers():
    async with stdio_session("--runtimes", "python") as s:
        code = ("import numpy as np\n"
                "print(np.arange(100_000).sum())\n"
                "print(np.prod(np.arange(1, 21)))\n"
                "print(np.array([2**31 - 1, 1]).sum())\n"
                "print(np.cumsum(np.arange(100_000))[-1])")
        out = out_of(await run_code(s, runtime="python", code=code))
        assert out["stdout"] == "4999950000\n2432902008176640000\n2147483648\n4999950000\n", out


async def asyncio_loop():
    async with stdio_session("--runtimes", "python") as s:
        code = ("import asyncio, time\n"
                "async def job(i):\n    await asyncio.sleep(0.3)\n    return i * i\n"
                "async def main():\n    t = time.monotonic()\n"
                "    r = await asyncio.gather(*(job(i) for i in range(5)))\n"
                "    q = asyncio.Queue()\n    await q.put('x')\n"
                "    try:\n        await asyncio.wait_for(asyncio.sleep(5), 0.1)\n"
                "    except TimeoutError:\n        r.append('timed out')\n"
                "    dt = time.monotonic() - t\n"
                # The five jobs sleep at once (0.3 s), then wait_for's 0.1 s: one after
                # another they would take 1.6 s.
                "    return r, await q.get(), 0.4 <= dt < 1.2 or dt\n"
                "print(asyncio.run(main()))\n"
                "asyncio.run(asyncio.sleep(0))\nprint('again')")
        out = out_of(await run_code(s, runtime="python", code=code))
        assert out["exit_code"] == 0, out
        assert out["stdout"] == "([0, 1, 4, 9, 16, 'timed out'], 'x', True)\nagain\n", out
        out = out_of(await run_code(s, runtime="python", code=(
            "import asyncio\nasync def main():\n    await asyncio.to_thread(print, 1)\n"
            "asyncio.run(main())")))
        assert out["exit_code"] == 1 and "thread" in out["stderr"], out


async def cpp_exceptions():
    async with stdio_session("--runtimes", "clangpp") as s:
        code = ("#include <iostream>\n#include <stdexcept>\n#include <vector>\n"
                "int main() {\n  try { throw std::runtime_error(\"boom\"); }\n"
                "  catch (const std::exception &e) { std::cout << \"caught \" << e.what() << '\\n'; }\n"
                "  std::vector<int> v(2);\n  try { v.at(5); }\n"
                "  catch (const std::out_of_range &) { std::cout << \"out of range\\n\"; }\n}\n")
        out = out_of(await run_code(s, runtime="clangpp", code=code))
        assert out["status"] == "completed" and out["exit_code"] == 0, out
        assert out["stdout"] == "caught boom\nout of range\n", out


async def runno_shapes():
    async with stdio_session("--runtimes", "python") as s:
        out = out_of(await run_code(s, runtime="python", code="print(open('in.txt').read())",
                                    files=[{"path": "in.txt", "content": "héllo",
                                            "encoding": "text"}]))
        assert out["stdout"] == "héllo\n", out
        result = await run_code(s, runtime="python", code="print(1)", timeout_seconds=600)
        out = out_of(result)
        assert "timeout_seconds 600" in (out.get("notice") or ""), out
        assert "notice: timeout_seconds 600" in text_of(result), text_of(result)
        check_tool_error(await run_code(s, runtime="python", code="1",
                                        files=[{"path": "x", "content": "", "encoding": "latin-1"}]),
                         "encoding `latin-1`")
        tools = (await s.list_tools()).tools

        def descriptions(schema):
            if isinstance(schema, dict):
                for key, value in schema.items():
                    if key == "description" and isinstance(value, str):
                        yield value
                    else:
                        yield from descriptions(value)
            elif isinstance(schema, list):
                for item in schema:
                    yield from descriptions(item)

        for tool in tools:
            for text in descriptions(tool.input_schema):
                assert "\n" not in text, (tool.name, text)


async def links_and_resources():
    async with stdio_session("--runtimes", "python") as s:
        result = await run_code(s, runtime="python", code="print('x' * 100000)")
        text = text_of(result)
        assert "resources/list does not show them" in text, text[-300:]
        listed = await s.list_resources()
        assert listed.resources == [], listed
        uri = result.structured_content["output_uri"]
        read = await s.read_resource(uri)
        assert len(read.contents[0].text) == 100001


class TaskHandle(Result):
    """A 2026-07-28 task answer: {resultType: "task", taskId, status, ...}."""
    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"]
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class TaskIdParams(RequestParams):
    task_id: str


class TasksGet(Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"


class AnyResult(Result):
    model_config = ConfigDict(extra="allow")


async def poll(handle, ctx: ClaimContext) -> CallToolResult:
    while True:
        await anyio.sleep((handle.poll_interval_ms or 1000) / 1000)
        got = await ctx.session.send_request(
            TasksGet(params=TaskIdParams(task_id=handle.task_id)), AnyResult)
        extra = got.model_extra or {}
        if extra.get("status") == "completed":
            return CallToolResult.model_validate(extra["result"])
        assert extra.get("status") == "working", extra


class ClaimsTasks(ClientExtension):
    """The tasks extension as an SDK user adds it: task answers are polled to the end."""
    identifier = TASKS

    def claims(self):
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=poll)]


async def tasks_by_revision():
    params = StdioServerParameters(command=RUNBOX, args=["mcp", "--quiet", "--runtimes", "python"],
                                   env=server_env())
    arguments = {"runtime": "python", "timeout_seconds": 30,
                 "code": "import time\ntime.sleep(7)\nprint('slept 7')"}
    for mode, extensions in [("legacy", [advertise(TASKS)]), ("auto", [ClaimsTasks()])]:
        async with Client(params, mode=mode, extensions=extensions) as client:
            result = await client.call_tool("run_code", arguments)
            assert not result.is_error, text_of(result)
            assert result.structured_content["stdout"] == "slept 7\n", result
            print(f"{mode}: {client.session.protocol_version} got its result")


async def shell_hub():
    gen = "for n in range(1, 21):\n    print(n * n % 37)\n"
    c = ("#include <stdio.h>\n#include <stdlib.h>\nint main(int c, char **v) {\n"
         "    long n = atol(v[1]), a = 0, b = 1;\n"
         "    for (long i = 0; i < n; i++) { long t = a + b; a = b; b = t; }\n"
         "    printf(\"%ld\\n\", a);\n}\n")
    sql = "create table t(x);\ninsert into t values (1), (2), (3);\nselect x from t;\n"
    for transport in ("stdio", "http"):
        await shell_hub_over(transport, gen, c, sql)


async def shell_hub_over(transport, gen, c, sql):
    async with connected(transport, "--runtimes", "shell,python,sqlite,clang") as s:
        code = ("python gen.py | sort -n | tail -3\n"
                "sqlite3 t.db < q.sql | wc -l\n"
                "cc -O2 p.c -o p && ./p 10\n"
                "ls *.csv | xargs -n1 python -c 'import sys; print(sys.argv[1].upper())'")
        files = [{"path": "gen.py", "content": gen}, {"path": "p.c", "content": c},
                 {"path": "q.sql", "content": sql}, {"path": "a.csv", "content": "1\n"}]
        out = out_of(await run_code(s, runtime="shell", code=code, files=files,
                                    timeout_seconds=30))
        tail = "".join(f"{n}\n" for n in sorted(n * n % 37 for n in range(1, 21))[-3:])
        assert out["exit_code"] == 0 and out["stdout"] == tail + "3\n55\nA.CSV\n", out
        out = out_of(await run_code(s, runtime="shell", timeout_seconds=2,
                                    code="python -c 'while True: pass' | wc -l; echo after"))
        assert out["status"] == "timeout" and "after" not in out["stdout"], out
        print(f"shell_hub over {transport}: pipes ran; the runaway ended at its deadline")


if __name__ == "__main__":
    main({"sqlite_modes": sqlite_modes, "compile_budget": compile_budget,
          "numpy_integers": numpy_integers, "asyncio": asyncio_loop,
          "cpp_exceptions": cpp_exceptions, "runno_shapes": runno_shapes,
          "links_and_resources": links_and_resources, "tasks_by_revision": tasks_by_revision,
          "shell_hub": shell_hub})
