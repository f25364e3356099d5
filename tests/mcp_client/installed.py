"""An installed runbox (an npm package through npx, a wheel's `runbox` in a venv) started as
an MCP client starts a server, with the MCP Python SDK's stdio client; one python run.
Usage: installed.py EXPECTED COMMAND [ARG…]

The server gets HOME, RUNBOX_CACHE_DIR and every npm_config_* and UV_* variable of this
process (the SDK passes on only PATH and a few more by itself), and starts in
RUNBOX_TEST_SERVER_CWD when it is set. Prints how long the start (initialize) and the first
call took.
"""

import os
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client


async def main(expected, command, args):
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("npm_config_", "UV_")) or k in ("HOME", "RUNBOX_CACHE_DIR")}
    params = StdioServerParameters(command=command, args=args, env=env,
                                   cwd=os.environ.get("RUNBOX_TEST_SERVER_CWD"))
    start = time.monotonic()
    with anyio.fail_after(240):
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                started = time.monotonic()
                assert init.server_info.name == "runbox", init.server_info
                result = await session.call_tool(
                    "run_code", {"runtime": "python", "code": f"print({expected!r})"})
                called = time.monotonic()
                text = "".join(getattr(c, "text", "") for c in result.content)
                assert not result.is_error, text
                out = result.structured_content
                assert out["status"] == "completed", out
                assert out["stdout"] == expected + "\n", out
    print(f"initialize answered after {started - start:.2f} s, "
          f"the first run_code after {called - started:.2f} s more")


anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3:])
