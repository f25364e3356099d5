"""First start on an empty cache: seconds from `runbox mcp`'s launch to each runtime's
first answered `run_code` call (bench/RESULTS.md, "First start on an empty cache").

    target/mcp-venv/bin/python bench/first_start.py [--runbox PATH] [--artifacts-from DIR]
        [--runtimes shell,quickjs,sqlite,python] [--timeout 600] [--keep DIR] [--settle]
        [--delay SECONDS]

The server gets a fresh cache directory: empty, so it fetches every artifact with pip and
npm and compiles everything; or, with --artifacts-from, holding only the verified
artifacts (`artifacts/<sha256>`) of an existing cache, so nothing is fetched but
everything is compiled (`compiled/`, `derived/`, `mounts/` and `packages/` are not
copied). The first calls are sent at once, each retried every 0.5 s until it completes
with the expected output; `list_runtimes` is polled every 5 s to show what is being
prepared. Prints a Markdown table, then JSON on the last line; exits 1 if a runtime did
not answer within --timeout.

With --delay, the first calls are sent only that many seconds after the start, as by a
user who asks later (the polling still starts at once); the first answers are still
counted from the start, and the table adds how long each waited after its call.

With --settle, once all have answered, `list_runtimes` is polled on until none of them
reports a `preparation` any more (python answers provisionally while its snapshot is
prepared), then each is called once more; a second table and the JSON add when each
settled and the run durations of its first and last call. Exits 1 too if one did not
settle within --timeout.
"""

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parent.parent
EXPECTED = "hello, world"
# The `hello` samples of plugins.toml; another runtime uses the sample list_runtimes gives.
HELLO = {
    "shell": "echo 'hello, world'",
    "quickjs": "console.log('hello, world')",
    "javascript": "console.log('hello, world')",
    "sqlite": "select 'hello, world';",
    "python": "print('hello, world')",
    "ruby": "puts 'hello, world'",
}
RETRY_SECONDS = 0.5
PROGRESS_SECONDS = 5.0
CALL_TIMEOUT = 40  # the most a client without tasks may ask; the call waits this long


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runbox", type=Path, default=REPO / "target/release/runbox")
    p.add_argument("--artifacts-from", type=Path, metavar="DIR",
                   help="a cache directory whose artifacts/ to copy in (nothing compiled)")
    p.add_argument("--runtimes", default="shell,quickjs,sqlite,python")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds from the start each runtime has to answer")
    p.add_argument("--keep", type=Path, metavar="DIR",
                   help="work in DIR (new or empty) and keep it: the cache and server.log")
    p.add_argument("--settle", action="store_true",
                   help="then wait until no preparation is reported, and call each once more")
    p.add_argument("--delay", type=float, default=0.0, metavar="SECONDS",
                   help="send the first calls only SECONDS after the start (default 0)")
    return p.parse_args()


def make_workdir(args) -> Path:
    if args.keep:
        if args.keep.exists() and any(args.keep.iterdir()):
            sys.exit(f"--keep {args.keep}: not empty")
        args.keep.mkdir(parents=True, exist_ok=True)
        return args.keep.resolve()
    return Path(tempfile.mkdtemp(prefix="runbox-first-start-"))


def copy_artifacts(source: Path, cache: Path):
    """Copies the verified artifacts (files named by their sha256) and nothing else."""
    src = source / "artifacts"
    if not src.is_dir():
        sys.exit(f"--artifacts-from {source}: no artifacts/ directory")
    dest = cache / "artifacts"
    dest.mkdir(parents=True)
    files = [f for f in src.iterdir() if f.is_file() and not f.name.startswith(".tmp-")]
    for f in files:
        shutil.copy2(f, dest / f.name)
    size = sum(f.stat().st_size for f in files) / 1e6
    print(f"copied {len(files)} artifacts ({size:.0f} MB) from {src}", flush=True)


def text_of(result) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content).strip()


async def first_answer(session, runtime, code, t0, deadline, answers, failures, runs):
    """Calls run_code until it completes with EXPECTED in stdout; records when."""
    attempts, first_call = 0, None
    while time.monotonic() < deadline:
        attempts += 1
        start = time.monotonic()
        args = {"runtime": runtime, "code": code, "timeout_seconds": CALL_TIMEOUT}
        try:
            result = await session.call_tool("run_code", args)
            sc = result.structured_content or {}
            ok = (not result.is_error and sc.get("status") == "completed"
                  and EXPECTED in (sc.get("stdout") or ""))
            why = text_of(result)
        except Exception as e:  # a protocol error: try again like any other failure
            ok, sc, why = False, {}, f"{type(e).__name__}: {e}"
        end = time.monotonic()
        first_call = first_call or end - start
        if ok:
            answers[runtime] = end - t0
            runs[runtime] = sc.get("duration_ms")
            print(f"[{end - t0:6.1f} s] {runtime} answered (attempt {attempts}; that call "
                  f"{end - start:.1f} s, its run {sc.get('duration_ms', 0):.0f} ms; "
                  f"first call {first_call:.1f} s)", flush=True)
            return
        failures[runtime] = why[:300]
        if "could not be prepared" in why:  # failed for good: no use retrying
            print(f"[{end - t0:6.1f} s] {runtime}: {why}", flush=True)
            return
        await asyncio.sleep(RETRY_SECONDS)


async def show_progress(session, runtimes, t0, answers):
    """Every PROGRESS_SECONDS: what the server says about each runtime's preparation."""
    while True:
        await asyncio.sleep(PROGRESS_SECONDS)
        await poll(session, runtimes, t0, answers)


async def poll(session, runtimes, t0, answers, settled=None):
    """Prints what the server says about each runtime's preparation; returns the listing
    (None if it failed). With `settled`, also shows an answered runtime's preparation and
    records when it reports none any more."""
    at = time.monotonic() - t0
    try:
        listing = await session.call_tool("list_runtimes", {})
        listed = {r["name"]: r for r in (listing.structured_content or {})["runtimes"]}
    except Exception as e:
        print(f"[{at:6.1f} s] list_runtimes failed: {e}", flush=True)
        return None
    for name in runtimes:
        prep = listed.get(name, {}).get("preparation")
        if name in answers:
            state = f"answered at {answers[name]:.1f} s"
            if settled is not None:
                if not prep:
                    settled.setdefault(name, at)
                state += f"; {prep}" if prep else f"; settled at {settled[name]:.1f} s"
        else:
            state = prep or "ready, not yet answered"
        print(f"[{at:6.1f} s] {name}: {state}", flush=True)
    # The others compete for the same cores: name those being worked on.
    busy = [n for n, r in listed.items() if n not in runtimes
            and r.get("preparation", "").startswith("preparing")
            and "waiting for its turn" not in r["preparation"]]
    if busy:
        print(f"[{at:6.1f} s] also preparing: {', '.join(busy)}", flush=True)
    return listed


async def settle(session, runtimes, codes, t0, deadline, answers, settled, after):
    """Polls until no answered runtime reports a preparation, then calls each once more."""
    answered = [r for r in runtimes if r in answers]
    while True:
        listed = await poll(session, runtimes, t0, answers, settled)
        if listed is not None and all(r in settled for r in answered):
            break
        if time.monotonic() + PROGRESS_SECONDS > deadline:
            print(f"[{time.monotonic() - t0:6.1f} s] not settled within the timeout", flush=True)
            break
        await asyncio.sleep(PROGRESS_SECONDS)
    for r in answered:
        args = {"runtime": r, "code": codes[r], "timeout_seconds": CALL_TIMEOUT}
        try:
            result = await session.call_tool("run_code", args)
            sc, why = result.structured_content or {}, text_of(result)
            if not result.is_error and sc.get("status") == "completed":
                after[r] = sc.get("duration_ms")
        except Exception as e:
            why = f"{type(e).__name__}: {e}"
        print(f"[{time.monotonic() - t0:6.1f} s] {r} called again: "
              + (f"its run {after[r]:.0f} ms" if r in after else why[:300]), flush=True)


async def measure(args, runtimes, cache: Path, log_path: Path):
    # Every variable but RUNBOX_* (a bundled-artifacts dir would skip the fetch).
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNBOX_")}
    env["RUNBOX_LOG"] = os.environ.get("RUNBOX_LOG", "runbox=info")
    params = StdioServerParameters(command=str(args.runbox),
                                   args=["mcp", "--cache-dir", str(cache)], env=env)
    answers, failures, runs, settled, after = {}, {}, {}, {}, {}
    with open(log_path, "w") as log:
        t0 = time.monotonic()
        deadline = t0 + args.timeout
        async with stdio_client(params, errlog=log) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                print(f"[{time.monotonic() - t0:6.1f} s] initialized", flush=True)
                # Runtimes without a HELLO program: the server's own sample.
                samples = {}
                if any(r not in HELLO for r in runtimes):
                    listing = await session.call_tool("list_runtimes", {})
                    samples = {r["name"]: r.get("sample", "")
                               for r in listing.structured_content["runtimes"]}
                codes = {r: HELLO.get(r) or samples.get(r, "") for r in runtimes}
                progress = asyncio.create_task(show_progress(session, runtimes, t0, answers))
                await asyncio.sleep(max(0, t0 + args.delay - time.monotonic()))
                calls = [asyncio.create_task(first_answer(
                    session, r, codes[r], t0, deadline, answers, failures, runs))
                    for r in runtimes]
                _, pending = await asyncio.wait(calls, timeout=max(0, deadline - time.monotonic()))
                for task in [*pending, progress]:
                    task.cancel()
                await asyncio.gather(*pending, progress, return_exceptions=True)
                if args.settle:
                    await settle(session, runtimes, codes, t0, deadline, answers, settled,
                                 after)
    return answers, failures, runs, settled, after


def main():
    args = parse_args()
    runtimes = [r.strip() for r in args.runtimes.split(",") if r.strip()]
    if not 0 <= args.delay < args.timeout:
        sys.exit(f"--delay {args.delay}: must be at least 0 and below --timeout")
    if not args.runbox.is_file():
        sys.exit(f"no runbox binary at {args.runbox}")
    if (args.runbox.parent / "artifacts").is_dir():
        print(f"note: {args.runbox.parent / 'artifacts'} exists: runbox copies artifacts "
              "from it instead of fetching them", flush=True)
    work = make_workdir(args)
    cache, log_path = work / "cache", work / "server.log"
    cache.mkdir()
    if args.artifacts_from:
        copy_artifacts(args.artifacts_from, cache)
    print(f"cache {cache}\nserver log {log_path}", flush=True)
    try:
        answers, failures, runs, settled, after = asyncio.run(
            measure(args, runtimes, cache, log_path))
        missing = [r for r in runtimes if r not in answers]
        for r in missing:
            print(f"{r}: no answer; last: {failures.get(r, '(no reply)')}")
        if missing and log_path.exists():
            tail = log_path.read_text().splitlines()[-15:]
            print("server log, last lines:\n" + "\n".join(tail))
        delayed = args.delay > 0
        if delayed:
            print(f"\nfirst calls sent {args.delay:g} s after the start; "
                  "first answers counted from the start")
        print("\n| runtime | seconds to first answer |"
              + (" waited after the call (s) |" if delayed else "")
              + "\n| --- | --- |" + (" --- |" if delayed else ""))
        for r in runtimes:
            if r in answers:
                print(f"| `{r}` | {answers[r]:.1f} |"
                      + (f" {answers[r] - args.delay:.1f} |" if delayed else ""))
            else:
                print(f"| `{r}` | no answer within {args.timeout:.0f} s |"
                      + (" - |" if delayed else ""))
        first = {r: round(answers[r], 1) if r in answers else None for r in runtimes}
        extra = {"delay": args.delay} if delayed else {}
        if not args.settle:
            print(json.dumps({**first, **extra}))
        else:
            fmt = lambda d, r, f: format(d[r], f) if d.get(r) is not None else "-"
            print("\n| runtime | first answer (s) | its run (ms) | settled (s) "
                  "| run after (ms) |\n| --- | --- | --- | --- | --- |")
            for r in runtimes:
                print(f"| `{r}` | {fmt(answers, r, '.1f')} | {fmt(runs, r, '.0f')} "
                      f"| {fmt(settled, r, '.1f')} | {fmt(after, r, '.0f')} |")
            pick = lambda d, n: {r: round(d[r], n) if d.get(r) is not None else None
                                 for r in runtimes}
            print(json.dumps({"first": first, "settled": pick(settled, 1),
                              "first_run_ms": pick(runs, None),
                              "settled_run_ms": pick(after, None), **extra}))
            missing += [r for r in runtimes if r in answers and r not in settled]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
