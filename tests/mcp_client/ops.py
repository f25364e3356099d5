"""What operators and balancers ask an HTTP server: /healthz, /readyz, /metrics with the
token rules, the drain SIGTERM starts, and what a replica says of another's handles.
Spoken in raw HTTP and stateless 2026-07-28 JSON-RPC, so every status and header shows.
Usage: ops.py SCENARIO."""

import os
import re
import signal
import tempfile
import threading
import time

import httpx2

from harness import HttpServer, eventually, main, stateless_request

TOKEN = "t" * 40


def request(url, method, params, token=None, headers=None, timeout=120):
    """One stateless request (the headers a 2026-07-28 client sends); the HTTP answer."""
    message, sent = stateless_request(method, params, client="ops")
    if token:
        sent["Authorization"] = f"Bearer {token}"
    sent.update(headers or {})
    return httpx2.post(url, json=message, headers=sent, timeout=timeout)


def rpc(url, method, params, **kw):
    answer = request(url, method, params, **kw)
    assert answer.status_code == 200, (answer.status_code, answer.text)
    return answer.json()


def tool(url, name, arguments, **kw):
    return rpc(url, "tools/call", {"name": name, "arguments": arguments}, **kw)


def base(server):
    return server.url.rsplit("/mcp", 1)[0]


def metric(page, name, labels=""):
    """A sample's value on a /metrics page (None when absent)."""
    for line in page.splitlines():
        m = re.match(r"^(\w+)(\{[^}]*\})? (\S+)$", line)
        if m and m.group(1) == name and (m.group(2) or "") == labels:
            return float(m.group(3))
    return None


def exits_within(server, seconds):
    """The server's exit status, which must come within `seconds`."""
    try:
        return server.proc.wait(timeout=seconds)
    except Exception:
        server.proc.kill()
        raise AssertionError(f"the server did not exit within {seconds} s")


async def probes_and_metrics():
    """The probes answer without the token; /metrics needs it, and counts what ran."""
    token_file = os.path.join(tempfile.mkdtemp(prefix="runbox-ops-"), "token")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")
    with HttpServer("--token-file", token_file) as server:
        root = base(server)
        health = httpx2.get(f"{root}/healthz")
        assert health.status_code == 200 and health.text == "ok\n", health
        # Not ready while runtimes are prepared (from the cache: moments), then ready.
        deadline = time.monotonic() + 120
        while (ready := httpx2.get(f"{root}/readyz")).status_code != 200:
            assert ready.status_code == 503 and ready.text.startswith("preparing "), ready.text
            assert time.monotonic() < deadline, ready.text
            time.sleep(0.1)
        assert ready.text == "ready\n", ready.text
        assert httpx2.get(f"{root}/metrics").status_code == 401
        wrong = httpx2.get(f"{root}/metrics", headers={"Authorization": "Bearer " + "x" * 40})
        assert wrong.status_code == 401, wrong
        assert request(server.url, "tools/list", {}).status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        page = httpx2.get(f"{root}/metrics", headers=auth)
        assert page.status_code == 200, page
        assert page.headers["content-type"].startswith("text/plain; version=0.0.4"), page.headers
        assert metric(page.text, "runbox_runs_in_progress") == 0, page.text
        assert metric(page.text, "runbox_sessions") == 0, page.text
        assert metric(page.text, "runbox_draining") == 0, page.text
        assert metric(page.text, "runbox_memory_budget_bytes") > 0, page.text

        done = tool(server.url, "run_code", {"runtime": "python", "code": "print(1)"},
                    token=TOKEN)
        assert done["result"]["structuredContent"]["status"] == "completed", done
        late = tool(server.url, "run_code", {"runtime": "python", "code": "while True: pass",
                                             "timeout_seconds": 0.5}, token=TOKEN)
        assert late["result"]["structuredContent"]["status"] == "timeout", late
        created = tool(server.url, "create_session", {"runtime": "quickjs"}, token=TOKEN)
        assert "session_id" in created["result"]["structuredContent"], created

        # A run under way and one waiting show as such.
        seen = {}

        def busy():
            seen["answer"] = tool(server.url, "run_code", {
                "runtime": "python", "code": "import time\ntime.sleep(2)"}, token=TOKEN)

        thread = threading.Thread(target=busy)
        thread.start()
        page = eventually(lambda: (p := httpx2.get(f"{root}/metrics", headers=auth).text)
                          and metric(p, "runbox_runs_in_progress") == 1 and p)
        assert page, "the run under way never showed"
        thread.join()

        page = httpx2.get(f"{root}/metrics", headers=auth).text
        python = '{runtime="python",status="completed"}'
        assert metric(page, "runbox_runs_total", python) == 2, page
        assert metric(page, "runbox_runs_total", '{runtime="python",status="timeout"}') == 1
        assert metric(page, "runbox_run_duration_seconds_count", '{runtime="python"}') == 3
        assert metric(page, "runbox_run_duration_seconds_bucket",
                      '{runtime="python",le="+Inf"}') == 3, page
        # 0.5 s timeout and 2 s sleep are over a quarter second; the print is not.
        assert metric(page, "runbox_run_duration_seconds_bucket",
                      '{runtime="python",le="0.25"}') == 1, page
        assert metric(page, "runbox_sessions") == 1, page
        assert metric(page, "runbox_runs_in_progress") == 0, page
        assert httpx2.get(f"{root}/nowhere").status_code in (401, 404)
        # Not for browsers, and a loopback server's only for loopback hosts (against DNS
        # rebinding), token or not.
        evil = httpx2.get(f"{root}/metrics", headers={**auth, "Host": "evil.example"})
        assert evil.status_code == 403, evil
        page = httpx2.get(f"{root}/metrics", headers={**auth, "Origin": "http://localhost:3000"})
        assert page.status_code == 403, page
        assert httpx2.get(f"{root}/metrics", headers={**auth, "Host": "localhost"}).status_code == 200


async def drain_finishes_tasks():
    """SIGTERM: /readyz fails at once, new sessions are refused with a tool error, a task
    under way finishes and its result is fetched, a session goes on answering; then the
    server exits 0 on its own."""
    server = HttpServer("--task-after", "1", "--drain-timeout", "60")
    root = base(server)
    sid = tool(server.url, "create_session",
               {"runtime": "python"})["result"]["structuredContent"]["session_id"]
    tool(server.url, "run_code", {"session_id": sid, "code": "x = 5"})
    answer = tool(server.url, "run_code", {
        "runtime": "python", "timeout_seconds": 30,
        "code": "import time\nprint('start', flush=True)\ntime.sleep(4)\nprint('done')"})
    task_id = answer["result"]["taskId"]
    server.proc.send_signal(signal.SIGTERM)
    ready = eventually(lambda: (r := httpx2.get(f"{root}/readyz")).status_code == 503 and r)
    assert ready and ready.text == "draining\n", ready
    assert httpx2.get(f"{root}/healthz").status_code == 200
    page = httpx2.get(f"{root}/metrics").text
    assert metric(page, "runbox_draining") == 1, page
    refused = tool(server.url, "create_session", {"runtime": "python"})["result"]
    assert refused["isError"], refused
    text = refused["content"][0]["text"]
    assert "is draining" in text and "create_session again" in text, text
    kept = tool(server.url, "run_code", {"session_id": sid, "code": "print(x)"})
    assert kept["result"]["structuredContent"]["stdout"] == "5\n", kept
    while True:
        got = rpc(server.url, "tasks/get", {"taskId": task_id})["result"]
        if got["status"] != "working":
            break
        assert server.proc.poll() is None, "the server exited with a task working"
        time.sleep(0.3)
    assert got["status"] == "completed", got
    assert got["result"]["structuredContent"]["stdout"] == "start\ndone\n", got
    started = time.monotonic()
    assert exits_within(server, 15) == 0, server.proc.returncode
    assert time.monotonic() - started < 10


async def drain_timeout_and_second_signal():
    """A run longer than --drain-timeout is stopped at it; a second signal stops at once.
    Either way the call is answered (its run cancelled) and the server exits 0."""
    for how in ("timeout", "second signal"):
        server = HttpServer("--drain-timeout", "1" if how == "timeout" else "60")
        answers = []

        def forever():
            try:
                answers.append(request(server.url, "tools/call", {
                    "name": "run_code",
                    "arguments": {"runtime": "python", "code": "while True: pass",
                                  "timeout_seconds": 60}}, timeout=30))
            except httpx2.HTTPError as e:
                answers.append(e)

        thread = threading.Thread(target=forever)
        thread.start()
        # The run is under way before the signal.
        root = base(server)
        assert eventually(lambda: metric(httpx2.get(f"{root}/metrics").text,
                                         "runbox_runs_in_progress") == 1, 10)
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        if how == "second signal":
            time.sleep(0.5)
            assert server.proc.poll() is None, "exited on the first signal with a run under way"
            server.proc.send_signal(signal.SIGTERM)
        assert exits_within(server, 10) == 0, (how, server.proc.returncode)
        took = time.monotonic() - started
        assert took < 8, (how, took)
        thread.join(timeout=30)
        assert not thread.is_alive(), f"{how}: the call was never answered"
        # Answered, as a run the server stopped, not cut off.
        answer = answers[0]
        assert isinstance(answer, httpx2.Response) and answer.status_code == 200, (how, answer)
        content = answer.json()["result"]["structuredContent"]
        assert content["status"] == "terminated", (how, content)
        assert content["error"].startswith("the server stopped before the run ended"), content


async def no_request_lost_at_stop():
    """Calls keep coming while a replica stops: each is answered with its result, or
    refused with 503 before anything of it ran, or its connection refused; never an
    error after it was taken, nor a connection reset mid-answer. The replica keeps serving
    for its grace period though nothing is under way."""
    server = HttpServer("--replica-id", "r0")
    outcomes = []
    stop = threading.Event()

    def client():
        while not stop.is_set():
            try:
                answer = request(server.url, "tools/call", {
                    "name": "run_code", "arguments": {"runtime": "quickjs",
                                                      "code": "console.log(1)"}}, timeout=10)
            except httpx2.ConnectError:
                outcomes.append("refused")
                time.sleep(0.01)
                continue
            except httpx2.HTTPError as e:
                outcomes.append(f"broken: {e!r}")
                continue
            if answer.status_code == 200:
                content = answer.json()["result"]["structuredContent"]
                outcomes.append("ran" if content["stdout"] == "1\n" else f"wrong: {content}")
            elif answer.status_code == 503 and "nothing of the request ran" in answer.text:
                outcomes.append("503")
            else:
                outcomes.append(f"HTTP {answer.status_code}: {answer.text[:200]}")

    threads = [threading.Thread(target=client) for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(1)
    before = len(outcomes)
    signalled = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    assert exits_within(server, 20) == 0, server.proc.returncode
    took = time.monotonic() - signalled
    time.sleep(0.3)
    stop.set()
    for thread in threads:
        thread.join()
    bad = [o for o in outcomes if o not in ("ran", "503", "refused")]
    assert not bad, bad[:5]
    assert 2 <= took < 15, took
    ran_after = outcomes[before:].count("ran")
    assert ran_after > 0, f"nothing was served in the grace period: {outcomes[before:][:10]}"


async def other_replicas_handles():
    """Every kind of handle another replica minted gets an error naming that replica."""
    with HttpServer("--replica-id", "r0") as server:
        created = tool(server.url, "create_session", {"runtime": "python"})
        sid = created["result"]["structuredContent"]["session_id"]
        assert re.fullmatch(r"r0\.[0-9a-f]{32}", sid), sid
        theirs = "r1." + "ab" * 16
        wrong = tool(server.url, "run_code", {"session_id": theirs, "code": "print(1)"})
        assert wrong["result"]["isError"], wrong
        text = wrong["result"]["content"][0]["text"]
        assert "belongs to replica `r1`" in text and "this is replica `r0`" in text, text
        task = rpc(server.url, "tasks/get", {"taskId": theirs})
        assert "belongs to replica `r1`" in task["error"]["message"], task
        read = rpc(server.url, "resources/read", {"uri": f"runbox://{theirs}/stdout"})
        assert "belongs to replica `r1`" in read["error"]["message"], read
        # A handle no replica minted is just unknown.
        unknown = rpc(server.url, "tasks/get", {"taskId": "0" * 32})
        assert "unknown task" in unknown["error"]["message"], unknown
        # A handshake-era client's protocol session id carries the replica's id too.
        init = httpx2.post(server.url, headers={
            "Accept": "application/json, text/event-stream"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "ops", "version": "0"}}})
        assert init.headers["mcp-session-id"].startswith("r0."), init.headers
        # Ending it is a success a client recognises (200 or 204), and it is gone after.
        ended = httpx2.delete(server.url, headers={
            "Mcp-Session-Id": init.headers["mcp-session-id"]})
        assert ended.status_code == 204, ended
        again = httpx2.post(server.url, headers={
            "Accept": "application/json, text/event-stream",
            "Mcp-Session-Id": init.headers["mcp-session-id"]},
            json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        assert again.status_code == 404, again
        foreign = httpx2.post(server.url, headers={
            "Accept": "application/json, text/event-stream", "Mcp-Session-Id": "r1.8b4f5fd6-cec3-4287-9688-0330e4fdb7e3"},
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert foreign.status_code == 404, foreign
        assert "belongs to replica `r1`" in foreign.json()["error"]["message"], foreign.text
        # A kept output's URI names the replica.
        long = tool(server.url, "run_code", {"runtime": "python", "code": "print('z' * 50000)"})
        uri = long["result"]["structuredContent"]["output_uri"]
        assert uri.startswith("runbox://r0."), uri
        got = rpc(server.url, "resources/read", {"uri": uri})
        assert got["result"]["contents"][0]["text"] == "z" * 50000 + "\n"


main({
    "probes_and_metrics": probes_and_metrics,
    "drain_finishes_tasks": drain_finishes_tasks,
    "drain_timeout_and_second_signal": drain_timeout_and_second_signal,
    "no_request_lost_at_stop": no_request_lost_at_stop,
    "other_replicas_handles": other_replicas_handles,
}, label="ops ")
