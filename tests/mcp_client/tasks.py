"""Long runs as MCP tasks (io.modelcontextprotocol/tasks), spoken in raw JSON-RPC of the
2026-07-28 revision: no SDK in the test suite speaks the tasks extension yet.
Usage: tasks.py TRANSPORT SCENARIO, TRANSPORT being `stdio` or `http`."""

import json
import os
import re
import subprocess
import sys
import time

import anyio
import httpx2

from harness import RUNBOX, HttpServer, main, server_env, stateless_request

TRANSPORT = sys.argv[1]


class Stdio:
    """`runbox mcp ARGS` over stdio, one request at a time."""

    def __init__(self, *args):
        self.proc = subprocess.Popen(
            [RUNBOX, "mcp", "--quiet", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env={**os.environ, **server_env()})
        self.next_id = 0

    def request(self, method, params, tasks=True):
        self.next_id += 1
        message, _ = stateless_request(method, params, self.next_id, tasks, "raw-tasks")
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            answer = json.loads(self.proc.stdout.readline())
            if answer.get("id") == self.next_id:
                return answer

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


class Http:
    """`runbox mcp --http` with stateless 2026-07-28 POSTs and their headers."""

    def __init__(self, *args):
        self.server = HttpServer(*args)
        self.client = httpx2.Client(timeout=120)
        self.next_id = 0

    def request(self, method, params, tasks=True):
        self.next_id += 1
        message, headers = stateless_request(method, params, self.next_id, tasks, "raw-tasks")
        r = self.client.post(self.server.url, json=message, headers=headers)
        if r.headers.get("content-type", "").startswith("text/event-stream"):
            events = [json.loads(line[5:]) for line in r.text.splitlines()
                      if line.startswith("data:") and line[5:].strip()]
            return next(e for e in events if e.get("id") == self.next_id)
        return r.json()

    def close(self):
        self.client.close()
        self.server.close()


def connect(*args):
    return Stdio(*args) if TRANSPORT == "stdio" else Http(*args)


def call(client, arguments, tasks=True):
    return client.request("tools/call", {"name": "run_code", "arguments": arguments}, tasks)


def get(client, task_id):
    answer = client.request("tasks/get", {"taskId": task_id})
    assert "result" in answer, answer
    return answer["result"]


def poll(client, task_id, until, deadline=120):
    """tasks/get until the status is one of `until`; every answer seen."""
    seen = []
    started = time.monotonic()
    while time.monotonic() - started < deadline:
        task = get(client, task_id)
        seen.append(task)
        if task["status"] in until:
            return seen
        time.sleep(0.2)
    raise AssertionError(f"task {task_id} still {seen[-1]['status']} after {deadline} s")


async def long_run():
    """A call longer than --max-timeout, from a client with tasks: answered with a task,
    polled (working, with the output so far), then completed with the very result a call
    returns; its TTL and poll interval as the contract says."""
    client = connect("--max-timeout", "2", "--task-after", "1")
    try:
        code = ("import time\nprint('step 1', flush=True)\ntime.sleep(10)\nprint('done')")
        started = time.monotonic()
        answer = call(client, {"runtime": "python", "code": code, "timeout_seconds": 30})
        created = answer["result"]
        assert created.get("resultType") == "task", answer
        # After --task-after's 1 s, long before the run's 10 s.
        assert 0.8 < time.monotonic() - started < 6, "answered after --task-after"
        task_id = created["taskId"]
        assert re.fullmatch(r"[0-9a-f]{32}", task_id), task_id
        assert created["status"] == "working", created
        assert created["ttlMs"] == 600_000 and created["pollIntervalMs"] > 0, created
        seen = poll(client, task_id, {"completed"})
        working = [t for t in seen if t["status"] == "working"]
        assert working, seen
        assert any("step 1" in (t.get("statusMessage") or "") for t in working), working
        assert all("running python for" in t["statusMessage"] for t in working), working
        result = seen[-1]["result"]
        out = result["structuredContent"]
        assert out["status"] == "completed" and out["stdout"] == "step 1\ndone\n", out
        assert out["duration_ms"] > 3500, "ran past the 2 s cap of clients without tasks"
        assert result["content"][0]["text"].startswith("status: completed"), result
        # It stays there for its TTL.
        assert get(client, task_id)["status"] == "completed"
    finally:
        client.close()


async def cancel():
    """tasks/cancel stops the run at once (within seconds, not the run's 60 s); the
    task settles as cancelled."""
    client = connect("--task-after", "0.5")
    try:
        answer = call(client, {"runtime": "python", "code": "while True:\n    pass",
                               "timeout_seconds": 60})
        task_id = answer["result"]["taskId"]
        started = time.monotonic()
        ack = client.request("tasks/cancel", {"taskId": task_id})
        assert "result" in ack, ack
        seen = poll(client, task_id, {"cancelled", "completed", "failed"}, deadline=5)
        assert seen[-1]["status"] == "cancelled", seen[-1]
        assert time.monotonic() - started < 5, time.monotonic() - started
        # The slot is free again: a quick call is answered at once, not as a task.
        quick = call(client, {"runtime": "python", "code": "print(1)"})
        assert quick["result"]["structuredContent"]["stdout"] == "1\n", quick
    finally:
        client.close()


async def quick_and_refused():
    """A call that ends before --task-after is answered as usual; a client without tasks
    keeps --max-timeout and gets no task; an unknown task id is an error."""
    client = connect("--max-timeout", "1", "--task-after", "5")
    try:
        quick = call(client, {"runtime": "python", "code": "print('hi')"})
        assert quick["result"].get("resultType", "complete") == "complete", quick
        assert quick["result"]["structuredContent"]["stdout"] == "hi\n", quick
        plain = call(client, {"runtime": "python", "code": "while True:\n    pass",
                              "timeout_seconds": 30}, tasks=False)
        out = plain["result"]["structuredContent"]
        assert out["status"] == "timeout" and out["duration_ms"] < 3000, out
        unknown = client.request("tasks/get", {"taskId": "0" * 32})
        assert "error" in unknown and "unknown task" in unknown["error"]["message"], unknown
        without = client.request("tasks/get", {"taskId": "0" * 32}, tasks=False)
        assert "error" in without, without
    finally:
        client.close()


async def in_a_session():
    """A long call in a session becomes a task too, and the session keeps its state."""
    client = connect("--task-after", "0.5")
    try:
        created = client.request("tools/call", {"name": "create_session",
                                                "arguments": {"runtime": "python"}})
        sid = created["result"]["structuredContent"]["session_id"]
        answer = call(client, {"session_id": sid, "timeout_seconds": 30,
                               "code": "import time\ntime.sleep(2)\nx = 42"})
        task_id = answer["result"]["taskId"]
        seen = poll(client, task_id, {"completed"})
        assert seen[-1]["result"]["structuredContent"]["session_id"] == sid, seen[-1]
        after = call(client, {"session_id": sid, "code": "print(x)"})
        assert after["result"]["structuredContent"]["stdout"] == "42\n", after
    finally:
        client.close()


async def ten_minutes():
    """A ten-minute python run (a long training loop, say) started as a task completes,
    and tasks/get fetches its result. Slow: run with `cargo test -- --ignored`."""
    client = connect("--max-timeout", "10", "--task-after", "2")
    try:
        code = ("import time\nstarted = time.time()\nsteps = 0\n"
                "while time.time() - started < 600:\n    time.sleep(1)\n    steps += 1\n"
                "    if steps % 60 == 0:\n        print(f'{steps // 60} min', flush=True)\n"
                "print('done after', steps, 'steps')")
        answer = call(client, {"runtime": "python", "code": code, "timeout_seconds": 900})
        task_id = answer["result"]["taskId"]
        seen = poll(client, task_id, {"completed", "failed", "cancelled"}, deadline=700)
        out = seen[-1]["result"]["structuredContent"]
        assert out["status"] == "completed", out
        assert out["stdout"].startswith("1 min\n") and "done after" in out["stdout"], out
        assert out["duration_ms"] >= 600_000, out
        print(f"ten_minutes: completed in {out['duration_ms'] / 1000:.1f} s, "
              f"{len(seen)} polls")
    finally:
        client.close()


ten_minutes.deadline = 800


if __name__ == "__main__":
    main({
        "ten_minutes": ten_minutes,
        "long_run": long_run,
        "cancel": cancel,
        "quick_and_refused": quick_and_refused,
        "in_a_session": in_a_session,
    })
