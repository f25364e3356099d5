"""`runbox mcp --http` driven by the MCP Python SDK's streamable-HTTP client.

Usage: over_http.py SCENARIO
"""

import anyio
import httpx2
from mcp import MCPError

from harness import (
    stateless_request,
    expected_for,
    EXPECTED,
    RUNTIMES,
    HttpServer,
    check_run,
    check_tool_error,
    http_session,
    main,
    program_arguments,
    run_code,
)
from over_stdio import cancellation_frees_the_slot

import os
import tempfile

# 32 characters or more: runbox refuses shorter tokens.
TOKEN = "s3cret-t0ken-0123456789abcdefghijk"

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-http", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


async def basics():
    """Without a token (loopback): the same calls as over stdio."""
    with HttpServer() as server:
        async with http_session(server.url) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert sorted(tools) == ["close_session", "create_session", "fork_session",
                                     "list_runtimes", "run_code"], sorted(tools)
            assert tools["run_code"].input_schema["properties"]["runtime"]["enum"] == RUNTIMES
            assert tools["run_code"].output_schema["properties"]["status"]["enum"] == [
                "completed", "crashed", "terminated", "timeout"]
            for runtime in RUNTIMES:
                check_run(await session.call_tool("run_code", program_arguments(runtime)),
                          expected_for(runtime))
            result = await run_code(session, runtime="python", code="import sys\nsys.exit(3)")
            check_run(result, {**EXPECTED, "exit_code": 3, "tty": "", "stdout": "", "stderr": ""})
            result = await run_code(session, runtime="python", code="while True:\n    pass",
                                    timeout_seconds=0.5)
            assert result.structured_content["status"] == "timeout", result.structured_content
            check_tool_error(await run_code(session, runtime="cobol", code="x"), "cobol", *RUNTIMES)
            result = await run_code(session, runtime="ruby", code="puts 1 + 1")
            check_run(result, {**EXPECTED, "tty": "2\n", "stdout": "2\n", "stderr": ""})


async def token():
    """With --token, every request without the right bearer token gets 401."""
    with HttpServer("--token", TOKEN) as server:
        base = server.url.removesuffix("/mcp")
        async with httpx2.AsyncClient(timeout=30) as client:
            cases = [
                ("no token", {}),
                ("wrong token", {"Authorization": "Bearer nope"}),
                ("another scheme", {"Authorization": f"Basic {TOKEN}"}),
            ]
            for what, headers in cases:
                r = await client.post(server.url, json=INITIALIZE, headers={**ACCEPT, **headers})
                assert r.status_code == 401, (what, r.status_code, r.text)
                assert r.headers.get("www-authenticate", "").lower().startswith("bearer"), r.headers
                assert r.headers.get("connection") == "close", r.headers
            r = await client.get(server.url)
            assert r.status_code == 401, r.status_code
            r = await client.get(f"{base}/elsewhere")
            assert r.status_code == 401, r.status_code
            r = await client.post(server.url, json=INITIALIZE,
                                  headers={**ACCEPT, "Authorization": f"Bearer {TOKEN}"})
            assert r.status_code == 200, (r.status_code, r.text)

        # The SDK's client with a wrong token cannot even initialize...
        try:
            with anyio.fail_after(30):
                async with http_session(server.url, token="nope"):
                    pass
        except Exception as e:  # noqa: BLE001 - an MCPError, maybe inside exception groups
            assert raised(e, MCPError), repr(e)
        else:
            raise AssertionError("initialize succeeded with a wrong token")

        # ...and with the right one it works.
        async with http_session(server.url, token=TOKEN) as session:
            tools = (await session.list_tools()).tools
            assert "run_code" in {t.name for t in tools}, tools
            result = await run_code(session, runtime="python", code="print('over http')")
            check_run(result, {**EXPECTED, "tty": "over http\n", "stdout": "over http\n",
                               "stderr": ""})


async def token_file():
    """--token-file: the token need not appear in `ps`; a trailing newline is ignored."""
    file_token = "from-a-file-" + "x" * 30
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "token")
        with open(path, "w") as f:
            f.write(file_token + "\n")
        with HttpServer("--token-file", path) as server:
            with open(f"/proc/{server.proc.pid}/cmdline", "rb") as f:
                assert file_token.encode() not in f.read()
            async with httpx2.AsyncClient(timeout=30) as client:
                for token, status in [(file_token[:-1], 401),
                                      (file_token + "x", 401), (file_token, 200)]:
                    r = await client.post(server.url, json=INITIALIZE,
                                          headers={**ACCEPT, "Authorization": f"Bearer {token}"})
                    assert r.status_code == status, (token, r.status_code, r.text)


async def origin_and_host():
    """A foreign browser Origin gets 403, and so does a foreign Host on a loopback server
    (DNS rebinding); loopback pages, allowed origins and clients without Origin pass."""
    with HttpServer("--allow-origin", "https://app.example:8443") as server:
        port = server.url.split(":")[2].split("/")[0]
        async with httpx2.AsyncClient(timeout=30) as client:
            cases = [
                ({"Origin": "https://evil.example"}, 403),
                ({"Origin": "http://evil.example"}, 403),
                ({"Origin": "https://app.example"}, 403),  # the allowed host, another port
                ({"Origin": "https://app.example:443"}, 403),
                ({"Origin": "null"}, 403),
                ({"Origin": "not an origin"}, 403),
                ({"Origin": "https://app.example:8443"}, 200),
                ({"Origin": "http://localhost:5173"}, 200),
                ({"Origin": f"http://127.0.0.1:{port}"}, 200),
                ({"Origin": "http://[::1]:3000"}, 200),
                ({}, 200),
                ({"Host": "evil.example"}, 403),
                ({"Host": f"evil.example:{port}"}, 403),
                ({"Host": f"localhost:{port}"}, 200),
            ]
            for headers, status in cases:
                r = await client.post(server.url, json=INITIALIZE, headers={**ACCEPT, **headers})
                assert r.status_code == status, (headers, r.status_code, r.text)
        # The SDK's own client (no Origin) works as ever.
        async with http_session(server.url) as session:
            result = await run_code(session, runtime="python", code="print('past the guard')")
            check_run(result, {**EXPECTED, "tty": "past the guard\n",
                               "stdout": "past the guard\n", "stderr": ""})


async def every_method_is_checked():
    """Every request passes the Origin and Host checks before anything answers it, in
    either era and for every method, resources/read of a handshake-era session among
    them (runbox answers that one before rmcp does)."""
    hostile = [{"Origin": "https://evil.example"}, {"Host": "evil.example"}]
    with HttpServer() as server:
        async with httpx2.AsyncClient(timeout=60) as client:
            r = await client.post(server.url, json=INITIALIZE, headers=ACCEPT)
            assert r.status_code == 200, r.text
            sid = {"Mcp-Session-Id": r.headers["mcp-session-id"],
                   "MCP-Protocol-Version": "2025-06-18"}
            r = await client.post(server.url, headers={**ACCEPT, **sid},
                                  json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            assert r.status_code in (200, 202), r.text
            # A long output, so that the result links the whole of it.
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "run_code", "arguments": {
                    "runtime": "python", "code": "print('x' * 200000)"}}}
            r = await client.post(server.url, json=call, headers={**ACCEPT, **sid})
            assert r.status_code == 200, r.text
            uri = r.text.split('"output_uri":"')[1].split('"')[0]
            read = {"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                    "params": {"uri": uri}}
            r = await client.post(server.url, json=read, headers={**ACCEPT, **sid})
            assert r.status_code == 200 and "xxxx" in r.text, r.text[:200]
            legacy = [read, call,
                      {"jsonrpc": "2.0", "id": 4, "method": "tools/list"},
                      {"jsonrpc": "2.0", "id": 5, "method": "resources/list"},
                      {"jsonrpc": "2.0", "id": 6, "method": "ping"},
                      INITIALIZE]
            modern = [stateless_request(m, p) for m, p in [
                ("server/discover", {}), ("tools/list", {}),
                ("resources/read", {"uri": uri}),
                ("tools/call", {"name": "run_code",
                                "arguments": {"runtime": "python", "code": "print(1)"}}),
                ("tasks/get", {"taskId": "x"})]]
            for bad in hostile:
                for message in legacy:
                    r = await client.post(server.url, json=message,
                                          headers={**ACCEPT, **sid, **bad})
                    assert r.status_code == 403, (message["method"], bad, r.status_code, r.text)
                    # Its body unread, the connection is not kept: the answer says so,
                    # and the client's next request goes on a new one.
                    assert r.headers.get("connection") == "close", r.headers
                for message, headers in modern:
                    r = await client.post(server.url, json=message, headers={**headers, **bad})
                    assert r.status_code == 403, (message["method"], bad, r.status_code, r.text)
                for method in ("GET", "DELETE"):
                    r = await client.request(method, server.url, headers={**ACCEPT, **sid, **bad})
                    assert r.status_code == 403, (method, bad, r.status_code, r.text)
            # The session is still there for its own client.
            r = await client.post(server.url, json=read, headers={**ACCEPT, **sid})
            assert r.status_code == 200 and "xxxx" in r.text, r.text[:200]
    print(f"{len(hostile) * (len(legacy) + len(modern) + 2)} hostile requests refused with 403")


def raised(error, cls):
    """Whether `error` is a `cls`, or an exception group holding one."""
    return isinstance(error, cls) or any(raised(e, cls) for e in getattr(error, "exceptions", ()))


async def cancellation():
    with HttpServer(env={"RUNBOX_MAX_CONCURRENT": "1"}) as server:
        async with http_session(server.url) as session:
            await cancellation_frees_the_slot(session)


if __name__ == "__main__":
    main({"basics": basics, "token": token, "token_file": token_file,
          "origin_and_host": origin_and_host, "every_method_is_checked": every_method_is_checked,
          "cancellation": cancellation})
