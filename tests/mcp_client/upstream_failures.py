"""An upstream MCP server that misbehaves on request, for testing runbox's code mode.

runbox, given `--tools-config`, is an MCP *client* of servers like this one. Each tool
below exercises one way an upstream call can go: slowly, not at all (the process dies),
too big, with structured content, with a tool error, or by changing the tool list.

Written with the official MCP Python SDK pinned in requirements.txt (mcp 2.x, whose
high-level server is `MCPServer`, FastMCP's new name). Run it as

    python upstream_failures.py              # over stdio
    python upstream_failures.py --http PORT  # streamable HTTP at http://127.0.0.1:PORT/mcp

Over HTTP it is ready when uvicorn prints "Uvicorn running on http://127.0.0.1:PORT" on
stderr. stdout carries nothing but the protocol (stdio) or nothing at all (HTTP).
"""

import os
import sys
import time
from typing import TypedDict

from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent

mcp = MCPServer("upstream-failures", version="1.0.0", log_level="WARNING")

# Say `tools.listChanged: true` in `initialize` (2025-11-25 and older clients): MCPServer
# asks its low-level server for the default options, which say false, on stdio and HTTP
# alike. (At 2026-07-28 the flag follows from `subscriptions/listen` being served.)
_low = mcp._lowlevel_server
_default_options = _low.create_initialization_options


def _options_with_list_changed(notification_options=None, *args, **kwargs):
    return _default_options(notification_options or NotificationOptions(tools_changed=True), *args, **kwargs)


_low.create_initialization_options = _options_with_list_changed


# `structured_output=False`: a bare text result, with no {"result": ...} structuredContent
# (which would double `big`'s payload) and no outputSchema.
@mcp.tool(structured_output=False)
def slow(seconds: float) -> str:
    """Sleeps `seconds`, then returns "done"."""
    time.sleep(seconds)  # a sync tool runs in a worker thread: the server stays responsive
    return "done"


@mcp.tool(structured_output=False)
def crash() -> str:
    """Kills this server's process, exit status 3, in the middle of the call: no answer."""
    sys.stderr.write("upstream_failures: crash() called, exiting with 3\n")
    sys.stderr.flush()
    os._exit(3)


@mcp.tool(structured_output=False)
def big(mb: int) -> str:
    """Returns a text result of exactly `mb` MiB (the letter x repeated)."""
    return "x" * (mb * 1024 * 1024)


class Doubled(TypedDict):
    x: int
    double: int


@mcp.tool()
def ok(x: int) -> Doubled:
    """Returns structuredContent {"x": x, "double": 2x}, with its JSON as text, and an
    outputSchema."""
    return {"x": x, "double": 2 * x}


@mcp.tool()
def fail(message: str) -> CallToolResult:
    """Returns an isError result whose only text block is `message`, verbatim. (Raising
    ToolError would say "Error executing tool fail: MESSAGE".)"""
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


_calls = {"count": 0}


@mcp.tool(structured_output=False)
def count() -> str:
    """Returns how many times `count` was called in this process, this call included: a
    replay that called the server again would show in the number."""
    _calls["count"] += 1
    return str(_calls["count"])


def added() -> str:
    """Returns "added" (listed only after `grow` was called)."""
    return "added"


@mcp.tool(structured_output=False)
async def grow(ctx: Context) -> str:
    """Adds the tool `added` and says the tool list changed."""
    if all(t.name != "added" for t in await mcp.list_tools()):
        mcp.add_tool(added, structured_output=False)
    # A 2025-11-25 session: notifications/tools/list_changed on the session. (A 2026-07-28
    # connection drops it there: its clients hear of changes only through the
    # subscriptions/listen stream they opened, which the publish below reaches.)
    await ctx.session.send_tool_list_changed()
    await ctx.notify_tools_changed()
    return "grown"


def serve_http(port: int) -> None:
    # mcp.run("streamable-http") would run uvicorn at the server's log level (WARNING here),
    # hiding the line that says where it listens; no access log (uvicorn writes it to stdout).
    import uvicorn

    app = mcp.streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="info", access_log=False)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        serve_http(int(sys.argv[2]))
    elif len(sys.argv) == 1:
        mcp.run()
    else:
        sys.exit("usage: upstream_failures.py [--http PORT]")
