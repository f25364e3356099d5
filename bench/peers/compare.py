#!/usr/bin/env python3
"""Per-call floor of python `print("hello")`: runbox beside two PyPI Python sandboxes.

    target/peers-venv/bin/python bench/peers/compare.py [--rounds N] [--settle-ms MS]

(from the repository root; README.md beside this file says how to make the venv).

Contenders, all driven from this one process:

- runbox: one long-lived `runbox mcp --runtimes python` over stdio, spoken to with the
  official Python MCP SDK (`mcp.Client`). Each call is one `run_code` tools/call, timed
  in the client from sending the request to having the parsed result; the server's own
  `duration_ms` (from structuredContent) is kept beside it. Also a `run_code` inside a
  session (create_session once), and a `list_runtimes` call (no sandbox) as the floor of
  the transport + SDK.
- pyeryx (Eryx: CPython in wasmtime, in this process): `Sandbox.execute` on one Sandbox
  made once; a new `Sandbox()` + `execute` per call; `Session.execute` on one Session.
  Eryx's own `ExecuteResult.duration_ms` is kept beside the wall time.
- pydantic-monty (Monty: a Python-subset interpreter in Rust, run in a pool of `monty`
  worker subprocesses): per call `pool.checkout()` + `feed_run` + check-in (a fresh REPL
  on a pooled worker, the pool made once); and `feed_run` in one kept session.

Every timed call's stdout must be exactly "hello\\n"; a call that fails or prints
anything else is counted as a failure and not timed. Rounds run every contender once,
in an order shuffled per round (fixed seed), each call after a settle pause in which
the Python garbage collector runs; the collector is off during the timed calls.

Markdown tables go to stdout, progress to stderr. Exit status 1 if any runbox call failed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Awaitable, Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CODE = 'print("hello")\n'
EXPECT = "hello\n"


def now_ms() -> float:
    return time.perf_counter_ns() / 1e6


def pkg_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def nearest_rank(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def fmt(x: float | None) -> str:
    if x is None:
        return "—"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass
class Row:
    key: str
    system: str
    what: str
    own_timer: str | None  # what the second pair of columns is, if the system reports one
    call: Callable[[], Awaitable[tuple[str, float | None]]] | None = None
    wall: list[float] = field(default_factory=list)
    own: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    broken: str | None = None  # set when set-up or warm-up failed: the row is skipped


class Failed(Exception):
    pass


def check(stdout: str) -> None:
    if stdout != EXPECT:
        raise Failed(f"stdout was {stdout!r}")


# ---------------------------------------------------------------------------------------
# runbox over MCP


class Runbox:
    def __init__(self, binary: Path, cache_dir: Path) -> None:
        self.binary, self.cache_dir = binary, cache_dir
        self.client: Any = None
        self.session_id: str | None = None
        self.setup: dict[str, float] = {}
        self.python_version = "?"

    async def start(self) -> None:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        params = StdioServerParameters(
            command=str(self.binary),
            args=["--cache-dir", str(self.cache_dir), "--quiet", "mcp", "--runtimes", "python"],
        )
        t = now_ms()
        self.client = Client(params, read_timeout_seconds=120)
        await self.client.__aenter__()
        self.setup["spawn + MCP connect"] = now_ms() - t
        t = now_ms()
        tools = {tool.name: tool for tool in (await self.client.list_tools()).tools}
        self.setup["tools/list"] = now_ms() - t
        for name, needed in (("run_code", {"code", "runtime", "session_id"}), ("create_session", {"runtime"})):
            props = set((tools[name].input_schema or {}).get("properties", {}))
            if not needed <= props:
                raise RuntimeError(f"{name} takes {sorted(props)}, this script expects {sorted(needed)}")
        t = now_ms()
        stdout, own = await self.run({"runtime": "python", "code": CODE})
        check(stdout)
        self.setup["first run_code (round trip)"] = now_ms() - t
        self.setup["first run_code (server duration_ms)"] = own or float("nan")
        stdout, _ = await self.run({"runtime": "python", "code": "import sys; print(sys.version)"})
        self.python_version = stdout.strip().split(" [")[0] if stdout.strip() else "?"
        t = now_ms()
        created = await self.client.call_tool("create_session", {"runtime": "python"})
        if created.is_error:
            raise RuntimeError(f"create_session failed: {text_of(created)}")
        self.session_id = (created.structured_content or {}).get("session_id")
        if not self.session_id:
            raise RuntimeError(f"create_session gave no session_id: {text_of(created)}")
        self.setup["create_session"] = now_ms() - t

    async def run(self, args: dict[str, Any]) -> tuple[str, float | None]:
        result = await self.client.call_tool("run_code", args)
        if result.is_error:
            raise Failed(f"tool error: {text_of(result)[:300]}")
        sc = result.structured_content
        if sc is None:  # fall back to the readable text ("duration: 4.2 ms", "--- stdout ---")
            text = text_of(result)
            m = re.search(r"^duration: ([0-9.]+) ms$", text, re.M)
            out = text.split("--- stdout ---\n", 1)[1] if "--- stdout ---\n" in text else ""
            return out, float(m.group(1)) if m else None
        if sc.get("status") != "completed" or sc.get("exit_code") != 0:
            raise Failed(f"status {sc.get('status')}, exit {sc.get('exit_code')}: {sc.get('error') or sc.get('stderr')}")
        return sc.get("stdout", ""), sc.get("duration_ms")

    async def one_off(self) -> tuple[str, float | None]:
        return await self.run({"runtime": "python", "code": CODE})

    async def in_session(self) -> tuple[str, float | None]:
        return await self.run({"session_id": self.session_id, "code": CODE})

    async def floor(self) -> tuple[str, float | None]:
        # A tools/call that starts no sandbox: the same JSON-RPC, SDK and schema-checking
        # path as run_code. (`ping` is gone from the 2026-07-28 revision the SDK speaks.)
        result = await self.client.call_tool("list_runtimes", {})
        if result.is_error:
            raise Failed(f"tool error: {text_of(result)[:300]}")
        return EXPECT, None

    async def stop(self) -> None:
        if self.client is None:
            return
        try:
            if self.session_id:
                await self.client.call_tool("close_session", {"session_id": self.session_id})
        finally:
            await self.client.__aexit__(None, None, None)


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content or [])


# ---------------------------------------------------------------------------------------
# pyeryx (in process)


class Eryx:
    def __init__(self) -> None:
        self.setup: dict[str, float] = {}
        self.python_version = "?"
        self.eryx: Any = None
        self.sandbox: Any = None
        self.session: Any = None

    def start(self) -> None:
        t = now_ms()
        import eryx

        self.eryx = eryx
        self.setup["import eryx"] = now_ms() - t
        t = now_ms()
        self.sandbox = eryx.Sandbox()
        self.setup["first Sandbox()"] = now_ms() - t
        t = now_ms()
        check(self.sandbox.execute(CODE).stdout_text)
        self.setup["first Sandbox.execute"] = now_ms() - t
        self.python_version = self.sandbox.execute("import sys; print(sys.version)").stdout_text.strip()
        self.python_version = self.python_version.split(" [")[0]  # drop the long compiler line
        t = now_ms()
        self.session = eryx.Session()
        self.setup["Session()"] = now_ms() - t
        t = now_ms()
        check(self.session.execute(CODE).stdout_text)
        self.setup["first Session.execute"] = now_ms() - t

    @staticmethod
    def _result(r: Any) -> tuple[str, float | None]:
        return r.stdout_text, r.duration_ms

    async def warm_sandbox(self) -> tuple[str, float | None]:
        return self._result(self.sandbox.execute(CODE))

    async def new_sandbox(self) -> tuple[str, float | None]:
        return self._result(self.eryx.Sandbox().execute(CODE))

    async def in_session(self) -> tuple[str, float | None]:
        return self._result(self.session.execute(CODE))


# ---------------------------------------------------------------------------------------
# pydantic-monty (worker subprocesses)


class Monty:
    def __init__(self) -> None:
        self.setup: dict[str, float] = {}
        self.pm: Any = None
        self.pool: Any = None
        self.session: Any = None

    def start(self) -> None:
        t = now_ms()
        import pydantic_monty as pm

        self.pm = pm
        self.setup["import pydantic_monty"] = now_ms() - t
        t = now_ms()
        # Two workers: one held by the kept session, one for the per-call checkouts.
        self.pool = pm.Monty(min_processes=2, max_processes=2)
        self.pool.__enter__()
        self.setup["Monty() pool start (2 workers)"] = now_ms() - t
        t = now_ms()
        check(self.checkout_run()[0])
        self.setup["first checkout + feed_run"] = now_ms() - t
        self.session = self.pool.checkout()
        self.session.__enter__()

    def checkout_run(self) -> tuple[str, float | None]:
        out = self.pm.CollectString()
        with self.pool.checkout() as s:
            s.feed_run(CODE, print_callback=out)
        return out.output, None

    async def per_call(self) -> tuple[str, float | None]:
        return self.checkout_run()

    async def in_session(self) -> tuple[str, float | None]:
        out = self.pm.CollectString()
        self.session.feed_run(CODE, print_callback=out)
        return out.output, None

    def stop(self) -> None:
        if self.session is not None:
            self.session.__exit__(None, None, None)
        if self.pool is not None:
            self.pool.__exit__(None, None, None)


# ---------------------------------------------------------------------------------------


def make_rows(rb: Runbox, ex: Eryx, mo: Monty) -> list[Row]:
    return [
        Row("runbox", "runbox", "`run_code` (one-off run) over MCP stdio", "server `duration_ms`", rb.one_off),
        Row("runbox-session", "runbox", "`run_code` with `session_id` over MCP stdio", "server `duration_ms`", rb.in_session),
        Row("mcp-floor", "runbox", "`list_runtimes` over MCP stdio (transport + SDK floor, no run)", None, rb.floor),
        Row("eryx", "pyeryx", "`Sandbox.execute` on one Sandbox made once", "eryx `duration_ms`", ex.warm_sandbox),
        Row("eryx-new", "pyeryx", "`Sandbox()` + `execute` per call", "eryx `duration_ms`", ex.new_sandbox),
        Row("eryx-session", "pyeryx", "`Session.execute` on one Session", "eryx `duration_ms`", ex.in_session),
        Row("monty", "pydantic-monty", "`pool.checkout()` + `feed_run` per call (pool made once)", None, mo.per_call),
        Row("monty-session", "pydantic-monty", "`feed_run` in one kept session", None, mo.in_session),
    ]


# (runbox row, peer row): the ratio table
PAIRS = [
    ("runbox", "eryx"),
    ("runbox", "eryx-new"),
    ("runbox", "monty"),
    ("runbox-session", "eryx-session"),
    ("runbox-session", "monty-session"),
]


async def settle(ms: float) -> None:
    end = now_ms() + ms
    gc.collect()
    left = end - now_ms()
    if left > 0:
        await asyncio.sleep(left / 1000)


async def timed(row: Row) -> None:
    assert row.call is not None
    gc.disable()
    try:
        t = now_ms()
        stdout, own = await row.call()
        wall = now_ms() - t
    except Exception as e:  # noqa: BLE001 - every failure is a finding, reported under the table
        row.failures.append(f"{type(e).__name__}: {str(e)[:300]}")
        return
    finally:
        gc.enable()
    try:
        check(stdout)
    except Failed as e:
        row.failures.append(str(e))
        return
    row.wall.append(wall)
    if own is not None:
        row.own.append(own)


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", 250)))
    ap.add_argument("--warmup", type=int, default=int(os.environ.get("WARMUP", 5)))
    ap.add_argument("--settle-ms", type=float, default=float(os.environ.get("SETTLE_MS", 100)))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default=os.environ.get("BENCH_ONLY", ""), help="comma-separated row keys")
    ap.add_argument("--runbox-bin", type=Path, default=Path(os.environ.get("RUNBOX_BIN", REPO / "target/release/runbox")))
    ap.add_argument("--cache-dir", type=Path, default=Path(os.environ.get("RUNBOX_CACHE_DIR", REPO / "target/runbox-cache")))
    ap.add_argument("--json", type=Path, help="also write every sample to this file")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")

    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    load_before = os.getloadavg()
    rb, ex, mo = Runbox(args.runbox_bin, args.cache_dir), Eryx(), Monty()
    rows = make_rows(rb, ex, mo)
    only = {k.strip() for k in args.only.split(",") if k.strip()}
    if only:
        unknown = only - {r.key for r in rows}
        if unknown:
            ap.error(f"unknown rows {sorted(unknown)}; rows are {[r.key for r in rows]}")
        rows = [r for r in rows if r.key in only]
    systems = {r.system for r in rows}

    # One-time set-up, each system on its own so that one failing leaves the others.
    for system, start in (("runbox", rb.start), ("pyeryx", ex.start), ("pydantic-monty", mo.start)):
        if system not in systems:
            continue
        log(f"starting {system} ...")
        try:
            res = start()
            if asyncio.iscoroutine(res):
                await res
        except Exception as e:  # noqa: BLE001
            for r in rows:
                if r.system == system:
                    r.broken = f"set-up failed: {type(e).__name__}: {e}"
            log(f"  {system} set-up failed: {e}")

    for r in rows:
        if r.broken:
            continue
        for _ in range(args.warmup):
            await timed(r)
        if r.failures:
            r.broken = f"warm-up failed: {r.failures[0]}"
        r.wall.clear(), r.own.clear(), r.failures.clear()

    live = [r for r in rows if not r.broken]
    rng = random.Random(args.seed)
    log(f"{args.rounds} rounds of {len(live)} rows, {args.settle_ms:g} ms settle before each call")
    t0 = time.monotonic()
    for i in range(args.rounds):
        order = live[:]
        rng.shuffle(order)
        for r in order:
            await settle(args.settle_ms)
            await timed(r)
        if (i + 1) % 25 == 0 or i + 1 == args.rounds:
            meds = ", ".join(f"{r.key} {fmt(statistics.median(r.wall)) if r.wall else '-'}" for r in live)
            log(f"  round {i + 1}/{args.rounds} ({time.monotonic() - t0:.0f} s): {meds}")
    load_after = os.getloadavg()

    if "pydantic-monty" in systems:
        mo.stop()
    if "runbox" in systems:
        await rb.stop()

    # ------------------------------------------------------------------ report
    try:
        runbox_version = subprocess.run([str(args.runbox_bin), "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        runbox_version = "?"
    try:
        monty_bin = Path(sys.executable).parent / "monty"
        monty_version = subprocess.run([str(monty_bin), "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        monty_version = "?"

    print(f"## Python `print(\"hello\")` per call: runbox and peers\n")
    print(
        f"{started}; {os.cpu_count()} cores ({platform.machine()}), {platform.system()} {platform.release()}; "
        f"driver Python {platform.python_version()}; {args.rounds} rounds, {args.warmup} warm-up calls per row, "
        f"{args.settle_ms:g} ms settle before each call, order shuffled per round; "
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after.\n"
    )
    print("| system | package | guest Python |")
    print("| --- | --- | --- |")
    print(f"| runbox | {runbox_version} (`{args.runbox_bin}`), MCP SDK `mcp` {pkg_version('mcp')} | {rb.python_version} |")
    print(f"| pyeryx | pyeryx {pkg_version('pyeryx')} | {ex.python_version} |")
    print(
        f"| pydantic-monty | pydantic-monty {pkg_version('pydantic-monty')} "
        f"(client {pkg_version('pydantic-monty-client')}, {monty_version}) | Monty (a Python subset, not CPython) |"
    )
    print()
    print("| row | system | one call is | median ms | p95 ms | own timer | own median ms | own p95 ms | n |")
    print("| --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for r in rows:
        if r.broken or not r.wall:
            print(f"| {r.key} | {r.system} | {r.what} | FAIL | FAIL | | | | 0 |")
            continue
        own_m = fmt(statistics.median(r.own)) if r.own else "—"
        own_p = fmt(nearest_rank(r.own, 95)) if r.own else "—"
        print(
            f"| {r.key} | {r.system} | {r.what} | {fmt(statistics.median(r.wall))} | {fmt(nearest_rank(r.wall, 95))} "
            f"| {r.own_timer or '—'} | {own_m} | {own_p} | {len(r.wall)} |"
        )
    print()
    by = {r.key: r for r in rows}
    print("Ratios runbox/peer (above 1: runbox slower). Client = runbox's MCP round trip against the peer's")
    print("in-process call; server = runbox's own `duration_ms` against the same peer call.\n")
    print("| runbox row | peer row | client median | client p95 | server median | server p95 |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for a, b in PAIRS:
        ra, rb_ = by.get(a), by.get(b)
        if not ra or not rb_ or not ra.wall or not rb_.wall:
            continue
        pm_, pp = statistics.median(rb_.wall), nearest_rank(rb_.wall, 95)
        cells = [statistics.median(ra.wall) / pm_, nearest_rank(ra.wall, 95) / pp]
        if ra.own:
            cells += [statistics.median(ra.own) / pm_, nearest_rank(ra.own, 95) / pp]
        print(f"| {a} | {b} | " + " | ".join(f"{c:.2f}×" if c < 10 else f"{c:.0f}×" for c in cells) + " |")
    print()
    print("One-time set-up (ms, not in the table above):\n")
    for system, setup in (("runbox", rb.setup), ("pyeryx", ex.setup), ("pydantic-monty", mo.setup)):
        if setup:
            print(f"- {system}: " + "; ".join(f"{k} {fmt(v)}" for k, v in setup.items()))
    failed = [r for r in rows if r.broken or r.failures]
    if failed:
        print("\nFailures (not timed):")
        for r in failed:
            if r.broken:
                print(f"- {r.key}: {r.broken}")
            if r.failures:
                print(f"- {r.key}: {len(r.failures)} failed calls, first: {r.failures[0]}")

    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "started": started,
                    "args": {k: str(v) for k, v in vars(args).items()},
                    "rows": {r.key: {"wall_ms": r.wall, "own_ms": r.own, "failures": r.failures, "broken": r.broken} for r in rows},
                    "setup_ms": {"runbox": rb.setup, "pyeryx": ex.setup, "pydantic-monty": mo.setup},
                },
                indent=1,
            )
        )
    return 1 if any(r.system == "runbox" and (r.broken or r.failures) for r in rows) else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
