"""Three replicas of `runbox mcp --http` behind HAProxy on loopback, configured by
deploy/haproxy/generate, driven by the MCP Python SDK through the balancer
(docs/scale-out.md). Usage: scale_out.py cluster (RUNBOX_TEST_CLIENT: auto or legacy).

What must hold: sessions made through the balancer spread over the replicas and every
later call reaches the replica that owns its session; tasks and linked resources are
fetched through the balancer; a drained replica finishes what it has under way while new
sessions go elsewhere, and exits 0; a replica killed with SIGKILL takes only its own
sessions with it (their calls get a tool error naming it), and the rest keeps working;
stateless calls spread.
"""

import os
import re
import signal
import socket
import subprocess
import tempfile
import time

from contextlib import AsyncExitStack

import anyio
import httpx2

from mcp.shared.exceptions import MCPError as McpError

from harness import (CLIENT, HttpServer, check_tool_error, eventually, http_session, main,
                     stateless_request, text_of)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GENERATE = os.path.join(REPO, "deploy", "haproxy", "generate")
# Where tests/all/scale_out.rs found (or installed) HAProxy.
HAPROXY = os.environ.get("RUNBOX_HAPROXY", "haproxy")
IDS = ["r0", "r1", "r2"]
WORK = tempfile.mkdtemp(prefix="runbox-scale-out-")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_of(url):
    return int(re.search(r":(\d+)/", url).group(1))


class Balancer:
    """HAProxy in the foreground with the configuration deploy/haproxy/generate writes."""

    def __init__(self, replicas):
        self.port = free_port()
        self.admin = os.path.join(WORK, "haproxy.sock")
        servers = [f"{rid}=127.0.0.1:{port_of(r.url)}" for rid, r in replicas.items()]
        config = subprocess.run(
            [GENERATE, "--listen", f"127.0.0.1:{self.port}", "--admin-socket", self.admin,
             *servers],
            check=True, capture_output=True, text=True).stdout
        path = os.path.join(WORK, "haproxy.cfg")
        with open(path, "w") as f:
            f.write(config)
        # Its log (one line per request, with the replica it went to) is shown on failure.
        self.log = os.path.join(WORK, "haproxy.log")
        self.proc = subprocess.Popen([HAPROXY, "-db", "-f", path],
                                     stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.all_up()

    def all_up(self):
        """Waits until HAProxy sees every replica UP: on a loaded machine a replica's
        /readyz can miss its 2 s check, and HAProxy rightly sends new work elsewhere
        until it answers again."""
        self.wait_for(lambda s: all(s.get(rid) == "UP" for rid in IDS), "all replicas UP")

    def command(self, line):
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(self.admin)
            s.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := s.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def states(self, backend="runbox"):
        """Each server's status in `backend` (`UP`, `DOWN`, ...): `runbox` takes new
        work (a draining replica leaves it), `runbox-owner` what names a replica's
        handle (a draining replica stays in it until it exits)."""
        try:
            csv = self.command("show stat")
        except OSError:
            return {}
        header = None
        states = {}
        for line in csv.splitlines():
            if line.startswith("# "):
                header = line[2:].split(",")
            elif line and header:
                row = dict(zip(header, line.split(",")))
                if row["pxname"] == backend and row["svname"] in IDS:
                    states[row["svname"]] = row["status"].split(" ")[0]
        return states

    def wait_for(self, condition, what, timeout=30, backend="runbox"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"haproxy ended: {open(self.log).read()}"
            states = self.states(backend)
            if condition(states):
                return
            time.sleep(0.1)
        raise AssertionError(f"HAProxy never saw {what}: {self.states()}")

    def events(self):
        """What HAProxy said besides its request lines: servers going DOWN or UP, and why."""
        return [line for line in open(self.log) if not line.startswith("127.0.0.1:")]

    async def spread(self, conns, count, make):
        """`make(conn, i)` (its result's first item a session id) through the balancer
        until there are `count` sessions and each replica owns one, each made while
        HAProxy sees every replica UP."""
        made = []
        for i in range(3 * count):
            if len(made) >= count and {owner(m[0]) for m in made} == set(IDS):
                return made
            self.all_up()
            made.append(await make(conns[i % len(conns)], i))
        raise AssertionError(f"sessions did not spread: {[m[0] for m in made]}; "
                             f"HAProxy said: {self.events()}")

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def metric(url, name, labels=""):
    """A sample of a replica's /metrics (0 when absent), summed over its label sets
    containing `labels`."""
    base = url.rsplit("/mcp", 1)[0]
    page = httpx2.get(f"{base}/metrics", timeout=10).text
    total = 0.0
    for line in page.splitlines():
        m = re.match(r"^(\w+)(\{[^}]*\})? (\S+)$", line)
        if m and m.group(1) == name and labels in (m.group(2) or ""):
            total += float(m.group(3))
    return total


def owner(handle):
    return handle.split(".", 1)[0]


async def create(session, runtime="python"):
    result = await session.call_tool("create_session", {"runtime": runtime})
    assert not result.is_error, text_of(result)
    return result.structured_content["session_id"]


async def run(session, code, session_id=None, runtime="python", timeout=30):
    arguments = {"code": code, "timeout_seconds": timeout}
    if session_id:
        arguments["session_id"] = session_id
    else:
        arguments["runtime"] = runtime
    return await session.call_tool("run_code", arguments)


async def check_output(session, code, expected, session_id=None):
    result = await run(session, code, session_id)
    assert not result.is_error, text_of(result)
    content = result.structured_content
    assert content["status"] == "completed" and content["stdout"] == expected, content
    return content


def raw_call(url, method, params):
    """One stateless 2026-07-28 request through the balancer, with the headers such a
    client sends (the tasks extension has no SDK client yet)."""
    message, headers = stateless_request(method, params, client="scale-out")
    answer = httpx2.post(url, json=message, headers=headers, timeout=60)
    assert answer.status_code == 200, (answer.status_code, answer.text)
    return answer.json()


def routed_by_body(balancer, method, params):
    """The replica the balancer sent a request to that names its handle only in the
    body (no routing header). runbox itself then refuses it (a client of the current
    revision must send the headers), so HAProxy's log says where it went."""
    message, headers = stateless_request(method, params, client="scale-out")
    headers.pop("Mcp-Name", None)
    headers.pop("Mcp-Param-Session", None)
    before = open(balancer.log).read().count("POST /mcp")
    answer = httpx2.post(balancer.url, json=message, headers=headers, timeout=60)
    assert answer.status_code == 400 and "header" in answer.text, answer.text
    deadline = time.monotonic() + 5
    while True:
        lines = [line for line in open(balancer.log) if "POST /mcp" in line]
        if len(lines) > before:
            break
        assert time.monotonic() < deadline, "HAProxy logged no request"
        time.sleep(0.05)
    return re.search(r" runbox(?:-owner)?/(r\d) ", lines[-1]).group(1)


async def tasks_through_the_balancer(balancer, sessions):
    """A long run answered as a task; tasks/get through the balancer reaches its replica;
    so does a request naming a handle only in its body."""
    lb_url = balancer.url
    sid = sessions[1]
    answer = raw_call(lb_url, "tools/call", {"name": "run_code", "arguments": {
        "session_id": sid, "code": "import time\ntime.sleep(5.5)\nprint('task', x)",
        "timeout_seconds": 30}})
    task = answer["result"]
    assert task.get("resultType") == "task", answer
    task_id = task["taskId"]
    assert owner(task_id) == owner(sid), (task_id, sid)
    deadline = time.monotonic() + 60
    while True:
        got = raw_call(lb_url, "tasks/get", {"taskId": task_id})["result"]
        if got["status"] != "working":
            break
        assert time.monotonic() < deadline, got
        await anyio.sleep(0.5)
    assert got["status"] == "completed", got
    content = got["result"]["structuredContent"]
    assert content["stdout"] == "task 1\n", content
    for sid in sessions:
        went = routed_by_body(balancer, "tools/call", {"name": "run_code", "arguments": {
            "session_id": sid, "code": "print(x)"}})
        assert went == owner(sid), (went, sid)
    assert routed_by_body(balancer, "tasks/get", {"taskId": task_id}) == owner(task_id)


async def scenario_cluster():
    replicas = {rid: HttpServer("--replica-id", rid, "--drain-timeout", "60",
                                "--task-after", "2") for rid in IDS}
    balancer = None
    try:
        balancer = Balancer(replicas)
        lb = balancer.url
        clients = 6 if CLIENT == "legacy" else 1
        # Sessions through the balancer: a legacy client stays on the replica of its
        # protocol session, so it takes several clients to spread; a 2026-07-28 client's
        # every call is balanced on its own.
        async with AsyncExitStack() as stack:
            conns = [await stack.enter_async_context(http_session(lb)) for _ in range(clients)]

            async def make(conn, _):
                sid = await create(conn)
                assert re.fullmatch(r"r[012]\.[0-9a-f]{32}", sid), sid
                return sid, conn

            # (client, session_id)
            sessions = [(conn, sid) for sid, conn in await balancer.spread(conns, 6, make)]
            for rid, replica in replicas.items():
                held = metric(replica.url, "runbox_sessions")
                assert held == sum(owner(s) == rid for _, s in sessions), (rid, held)

            # Every later call reaches the session's owner: state set then read back.
            for i, (conn, sid) in enumerate(sessions):
                await check_output(conn, f"x = {i}", "", sid)
            for i, (conn, sid) in enumerate(sessions):
                await check_output(conn, "print(x)", f"{i}\n", sid)

            # A linked resource (a long output) read back through the balancer.
            conn, sid = sessions[0]
            content = (await run(conn, "print('y' * 100000)", sid)).structured_content
            uri = content["output_uri"]
            assert uri and uri.startswith(f"runbox://{owner(sid)}."), content
            read = await conn.read_resource(uri)
            assert read.contents[0].text == "y" * 100000 + "\n", len(read.contents[0].text)

            # Stateless calls spread over the replicas.
            before = {rid: metric(r.url, "runbox_runs_total") for rid, r in replicas.items()}
            for i in range(12):
                conn = conns[i % clients]
                balancer.all_up()
                await check_output(conn, f"print({i} * 2)", f"{i * 2}\n")
            spread = {rid: metric(r.url, "runbox_runs_total") - before[rid]
                      for rid, r in replicas.items()}
            assert sum(spread.values()) == 12 and all(n > 0 for n in spread.values()), spread

            # A request for another replica's session, sent straight to a replica, is a
            # tool error naming the owner.
            sid0 = sessions[0][1]
            other = next(rid for rid in IDS if rid != owner(sid0))
            async with http_session(replicas[other].url) as direct:
                result = await run(direct, "print(x)", sid0)
                check_tool_error(result, f"belongs to replica `{owner(sid0)}`",
                                 f"this is replica `{other}`")

            if CLIENT == "auto":
                await tasks_through_the_balancer(balancer, [s for _, s in sessions])

            # Drain one replica while a call runs in one of its sessions.
            drained = owner(sessions[0][1])
            conn, sid = sessions[0]
            proc = replicas[drained].proc
            base = replicas[drained].url.rsplit("/mcp", 1)[0]
            long_call = {}

            async def slow():
                long_call["result"] = await run(
                    conn, "import time\ntime.sleep(15)\nprint('still', x)", sid)

            async with anyio.create_task_group() as group:
                group.start_soon(slow)
                await anyio.sleep(1)
                proc.send_signal(signal.SIGTERM)
                # (The 15 s call outlasts what follows on a loaded machine: the draining
                # replica must still be there for the last check.)
                ready = eventually(
                    lambda: (r := httpx2.get(f"{base}/readyz", timeout=5)).status_code == 503 and r)
                assert ready and "draining" in ready.text, "/readyz never said it drains"
                balancer.wait_for(lambda s: s.get(drained) != "UP", f"{drained} out of rotation")
                # New sessions go elsewhere, and nothing fails meanwhile.
                for i in range(4):
                    c = conns[i % clients]
                    # A legacy client whose protocol session is on the draining replica
                    # stays there (its stateless calls still work); new sessions come
                    # from the others.
                    new = await run_or_create(c, drained)
                    if new:
                        sessions.append((c, new))
                for i in range(6):
                    await check_output(conns[i % clients], "print('ok')", "ok\n")
                # Straight to the draining replica, create_session says it drains.
                async with http_session(replicas[drained].url) as direct:
                    refused = await direct.call_tool("create_session", {"runtime": "python"})
                    check_tool_error(refused, "is draining")
            result = long_call["result"]
            assert not result.is_error, text_of(result)
            assert result.structured_content["stdout"] == "still 0\n", result.structured_content
        # The drained replica exits 0 once its work is done.
        assert proc.wait(timeout=60) == 0, proc.returncode
        balancer.wait_for(lambda s: s.get(drained) == "DOWN", f"{drained} gone",
                          backend="runbox-owner")

        # Kill another replica outright: only what it held fails, saying so; the rest
        # keeps working. (A handshake-era client's MCP connection lives on one replica,
        # so for one held by the killed replica the connection is what fails.)
        async with AsyncExitStack() as stack:
            live = [rid for rid in IDS if rid != drained]
            conns = [await stack.enter_async_context(http_session(lb)) for _ in range(clients)]
            fresh = []  # (client, session_id)
            for i in range(4):
                conn = conns[i % clients]
                fresh.append((conn, await create(conn)))
            assert {owner(s) for _, s in fresh} == set(live), fresh
            for i, (conn, sid) in enumerate(fresh):
                await check_output(conn, f"x = {i}", "", sid)
            killed = owner(fresh[0][1])
            replicas[killed].proc.kill()
            replicas[killed].proc.wait()
            survivor = next(rid for rid in live if rid != killed)
            for i, (conn, sid) in enumerate(fresh):
                if owner(sid) != killed:
                    await check_output(conn, "print(x)", f"{i}\n", sid)
                elif CLIENT == "auto":
                    result = await run(conn, "print(x)", sid)
                    check_tool_error(result, f"belongs to replica `{killed}`")
                else:
                    try:
                        await run(conn, "print(x)", sid)
                        raise AssertionError("a connection held by a killed replica worked")
                    except McpError as e:
                        assert f"belongs to replica `{killed}`" in str(e), e
            # Stateless calls and new sessions keep working.
            working = [c for c, s in fresh if owner(s) != killed]
            for i in range(4):
                await check_output(working[i % len(working)], f"print({i})", f"{i}\n")
            async with http_session(lb) as conn:
                sid = await create(conn)
                assert owner(sid) == survivor, sid
                await check_output(conn, "print(7)", "7\n", sid)
    finally:
        if balancer:
            balancer.close()
        for replica in replicas.values():
            if replica.proc.poll() is None:
                replica.proc.kill()
                replica.proc.wait()


async def run_or_create(conn, drained):
    """create_session through the balancer while `drained` drains: a session elsewhere.
    A legacy client whose protocol session is on the drained replica gets the draining
    tool error instead (its protocol session is pinned there); `None` then."""
    result = await conn.call_tool("create_session", {"runtime": "python"})
    if CLIENT == "legacy" and result.is_error:
        check_tool_error(result, f"replica `{drained}` is draining")
        return None
    assert not result.is_error, text_of(result)
    sid = result.structured_content["session_id"]
    assert owner(sid) != drained, sid
    return sid


scenario_cluster.deadline = 300


async def scenario_durable():
    """Replicas sharing a session store: the sessions of a drained replica continue on
    the others, their state intact, through the balancer (docs/scale-out.md)."""
    store = tempfile.mkdtemp(prefix="runbox-shared-store-", dir=WORK)
    replicas = {rid: HttpServer("--replica-id", rid, "--session-store", store,
                                "--drain-timeout", "30") for rid in IDS}
    balancer = None
    try:
        balancer = Balancer(replicas)
        lb = balancer.url
        clients = 6 if CLIENT == "legacy" else 1
        async with AsyncExitStack() as stack:
            conns = [await stack.enter_async_context(http_session(lb)) for _ in range(clients)]

            async def make(conn, i):
                sid = await create(conn)
                result = await run(conn, f"import random\nx = {i}\nr = random.random()\nprint(r)", sid)
                assert not result.is_error, text_of(result)
                return sid, i, result.structured_content["stdout"]

            sessions = await balancer.spread(conns, 6, make)
        drained = owner(sessions[0][0])
        replicas[drained].proc.send_signal(signal.SIGTERM)
        assert replicas[drained].proc.wait(timeout=60) == 0, replicas[drained].proc.returncode
        balancer.wait_for(lambda s: s.get(drained) == "DOWN", f"{drained} gone",
                          backend="runbox-owner")
        # New connections (a handshake-era client's old one was held by the drained
        # replica): every session answers with its state, the drained replica's from
        # another replica, which resumed it from the store.
        async with AsyncExitStack() as stack:
            conns = [await stack.enter_async_context(http_session(lb)) for _ in range(clients)]
            # (A handshake-era connection is pinned to one replica, so it reaches only
            # that replica's sessions and those whose replica is gone.)
            reachable = [s for s in sessions if CLIENT == "auto" or owner(s[0]) == drained]
            for rounds in range(2):
                for n, (sid, i, r) in enumerate(reachable):
                    content = await check_output(conns[n % clients], "print(x)\nprint(r)",
                                                 f"{i}\n{r}", sid)
                    assert content.get("notice") is None, content
            moved = [sid for sid, _, _ in sessions if owner(sid) == drained]
            assert moved, sessions
            if CLIENT == "auto":
                # Each session lives on one replica: a moved one was resumed once, where
                # the balancer keeps sending it.
                resumed = sum(metric(r.url, "runbox_sessions") for rid, r in replicas.items()
                              if rid != drained)
                assert resumed == len(sessions), resumed
    finally:
        if balancer:
            balancer.close()
        for replica in replicas.values():
            if replica.proc.poll() is None:
                replica.proc.kill()
                replica.proc.wait()


scenario_durable.deadline = 300

main({"cluster": scenario_cluster, "durable": scenario_durable},
     label=f"scale out ({CLIENT} client) ")
