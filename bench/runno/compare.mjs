// Side-by-side timing of runbox and Runno (@runno/sandbox) on the same small programs.
//
//   node compare.mjs [ROUNDS]        (or ROUNDS=N in the environment; default 10)
//
// runbox is one long-lived `runbox mcp --quiet` process spoken to as a real MCP client
// (the TypeScript SDK's StdioClientTransport); each run is one `run_code` call, timed on
// the client's side as the whole round trip. Runno is `runCode()` from @runno/sandbox,
// in this process, timed around the call. Per program: one warm-up run on each side (not
// counted), then ROUNDS timed runs alternating between the two (the order flips every
// round so drift on a noisy machine hits both alike). Every run's stdout is checked
// against the expected output; a wrong or failed run is reported, never timed.
//
// Environment:
//   RUNBOX_BIN        the runbox binary   (default ../../target/release/runbox)
//   RUNBOX_CACHE_DIR  its cache directory (default ../../target/runbox-cache)
//   ROUNDS            timed rounds per program, when no argument is given
//   BENCH_ONLY        comma-separated program names to run (default all), e.g. "c-fib32"
//   SETTLE_MS         pause before every timed run (default 250), so that what the run
//                     before left behind (Runno's workers exiting and being collected,
//                     runbox re-starting a pre-started interpreter) does not land on it:
//                     calls from a model are seconds apart, not back to back

import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { execFileSync } from "node:child_process";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { runCode } from "@runno/sandbox";

const SETTLE_MS = Number(process.env.SETTLE_MS ?? 250);

const here = path.dirname(fileURLToPath(import.meta.url));
const RUNBOX_BIN = path.resolve(
  process.env.RUNBOX_BIN || path.join(here, "../../target/release/runbox"),
);
const RUNBOX_CACHE_DIR = path.resolve(
  process.env.RUNBOX_CACHE_DIR || path.join(here, "../../target/runbox-cache"),
);
const ROUNDS = Number.parseInt(process.argv[2] ?? process.env.ROUNDS ?? "10", 10);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) {
  console.error(`ROUNDS must be a positive integer, got ${process.argv[2] ?? process.env.ROUNDS}`);
  process.exit(2);
}
// Runno's C and C++ compile clang.wasm afresh on every run: tens of seconds.
const TIMEOUT_S = 120;

// ---------------------------------------------------------------------------------------
// The programs. `expect` is the exact stdout.

const PRIMES = `def primes(n):
    found = []
    for c in range(2, n):
        if all(c % p for p in found if p * p <= c):
            found.append(c)
    return found
print(len(primes(5000)))
`;

// `volatile` keeps the optimiser (both sides compile with -O2) from folding fib(32).
const FIB = `#include <stdio.h>
static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(void) {
    volatile int n = 32;
    printf("%d\\n", fib(n));
    return 0;
}
`;

const PROGRAMS = [
  { name: "hello-python", runtime: "python", code: 'print("hello, world")\n', expect: "hello, world\n" },
  { name: "hello-quickjs", runtime: "quickjs", code: 'console.log("hello, world");\n', expect: "hello, world\n" },
  { name: "hello-ruby", runtime: "ruby", code: 'puts "hello, world"\n', expect: "hello, world\n" },
  { name: "hello-php", runtime: "php-cgi", code: '<?php echo "hello, world\\n";\n', expect: "hello, world\n" },
  {
    name: "hello-c",
    runtime: "clang",
    code: '#include <stdio.h>\nint main(void) { puts("hello, world"); return 0; }\n',
    expect: "hello, world\n",
  },
  {
    name: "hello-cpp",
    runtime: "clangpp",
    code: '#include <iostream>\nint main() { std::cout << "hello, world" << std::endl; return 0; }\n',
    expect: "hello, world\n",
  },
  { name: "python-primes5000", runtime: "python", code: PRIMES, expect: "669\n" },
  { name: "c-fib32", runtime: "clang", code: FIB, expect: "2178309\n" },
  {
    name: "python-numpy",
    runtime: "python",
    code: "import numpy; print(numpy.percentile([1,2,3,4,5,6,7,8,9,10], 75))\n",
    expect: "7.75\n",
  },
];

// ---------------------------------------------------------------------------------------
// Helpers

const log = (...a) => console.error(...a);

function lastLine(text) {
  const lines = String(text ?? "").trim().split("\n");
  return lines[lines.length - 1].slice(0, 120);
}

function percentile(sorted, p) {
  // nearest rank
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

function median(sorted) {
  const n = sorted.length;
  return n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

function fmt(ms) {
  return ms >= 100 ? ms.toFixed(0) : ms.toFixed(1);
}

// ---------------------------------------------------------------------------------------
// runbox, over MCP stdio

if (!existsSync(RUNBOX_BIN)) {
  console.error(`runbox binary not found at ${RUNBOX_BIN}: build it (cargo build --release) or set RUNBOX_BIN`);
  process.exit(2);
}

const transport = new StdioClientTransport({
  command: RUNBOX_BIN,
  args: ["mcp", "--quiet", "--max-timeout", String(TIMEOUT_S)],
  env: { ...process.env, RUNBOX_CACHE_DIR },
  stderr: "inherit",
});
const client = new Client({ name: "runbox-vs-runno-bench", version: "0" });
await client.connect(transport);

async function runRunbox(prog) {
  const start = performance.now();
  let result;
  try {
    result = await client.callTool(
      { name: "run_code", arguments: { runtime: prog.runtime, code: prog.code, timeout_seconds: TIMEOUT_S } },
      undefined,
      // runbox sends progress every 2 s (also while a runtime is being prepared), so a
      // first call that has to compile a runtime does not hit the client's timeout.
      { timeout: (TIMEOUT_S + 30) * 1000, resetTimeoutOnProgress: true, onprogress: () => {} },
    );
  } catch (e) {
    return { ok: false, why: `MCP error: ${e.message}` };
  }
  const ms = performance.now() - start;
  const r = result.structuredContent;
  if (result.isError || !r) {
    return { ok: false, why: `tool error: ${lastLine(result.content?.[0]?.text)}` };
  }
  if (r.status !== "completed") return { ok: false, why: `${r.status}: ${lastLine(r.error)}` };
  if (r.exit_code !== 0) return { ok: false, why: `exit ${r.exit_code}: ${lastLine(r.stderr || r.stdout)}` };
  if (r.stdout !== prog.expect) return { ok: false, why: `wrong stdout ${JSON.stringify(r.stdout.slice(0, 80))}` };
  return { ok: true, ms, serverMs: r.duration_ms };
}

// The warm-up also waits out a runtime runbox has not compiled yet (a fresh cache, or a
// rebuilt runbox): such a call is a tool error saying the runtime "is still being
// prepared" once its own time limit has passed; the preparation goes on, so ask again.
// `runbox plugins fetch` beforehand avoids the wait.
const PREPARE_WAIT_MS = 30 * 60 * 1000;
async function warmRunbox(prog) {
  const start = performance.now();
  for (;;) {
    const r = await runRunbox(prog);
    if (r.ok || !/still being prepared/.test(r.why) || performance.now() - start > PREPARE_WAIT_MS) return r;
    log(`  runbox: runtime ${prog.runtime} is still being prepared, asking again…`);
  }
}

// ---------------------------------------------------------------------------------------
// Runno, in this process

// Runno's php-cgi is run without -q, so its stdout starts with the CGI headers
// ("X-Powered-By: …\r\nContent-type: …\r\n\r\n"); the program's own output follows them.
function runnoStdout(runtime, stdout) {
  if (runtime === "php-cgi") {
    const end = stdout.indexOf("\r\n\r\n");
    if (end >= 0 && /^X-Powered-By: PHP/.test(stdout)) return stdout.slice(end + 4);
  }
  return stdout;
}

async function runRunno(prog) {
  const start = performance.now();
  let timer;
  let r;
  try {
    // runCode's `timeout` covers the program's run only, not the clang/wasm-ld steps before
    // it (0.10.2 calls its prepare step without limits), so guard the whole call too.
    const guard = new Promise((resolve) => {
      timer = setTimeout(() => resolve({ resultType: "timeout", guard: true }), (TIMEOUT_S + 30) * 1000);
    });
    r = await Promise.race([runCode(prog.runtime, prog.code, { timeout: TIMEOUT_S }), guard]);
  } catch (e) {
    return { ok: false, why: `threw: ${e?.message ?? e}` };
  } finally {
    clearTimeout(timer);
  }
  const ms = performance.now() - start;
  if (r.resultType !== "complete") {
    const why = r.resultType === "crash" ? `crash: ${lastLine(r.error?.message)}` : r.resultType;
    return { ok: false, why };
  }
  if (r.exitCode !== 0) return { ok: false, why: `exit ${r.exitCode}: ${lastLine(r.stderr || r.stdout)}` };
  const out = runnoStdout(prog.runtime, r.stdout);
  if (out !== prog.expect) return { ok: false, why: `wrong stdout ${JSON.stringify(out.slice(0, 80))}` };
  return { ok: true, ms };
}

// ---------------------------------------------------------------------------------------
// The benchmark

const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(",").map((s) => s.trim())) : null;
const programs = only ? PROGRAMS.filter((p) => only.has(p.name)) : PROGRAMS;
if (programs.length === 0) {
  console.error(`BENCH_ONLY matched no program; the programs: ${PROGRAMS.map((p) => p.name).join(", ")}`);
  process.exit(2);
}

const SIDES = { runbox: runRunbox, runno: runRunno };
const rows = [];

for (const prog of programs) {
  const state = {};
  for (const [side, run] of Object.entries(SIDES)) {
    log(`${prog.name}: ${side} warm-up…`);
    const w = await (side === "runbox" ? warmRunbox(prog) : run(prog));
    state[side] = { times: [], failure: w.ok ? null : `warm-up failed: ${w.why}` };
    if (!w.ok) log(`  ${side}: ${state[side].failure}`);
    else log(`  ${side}: ${fmt(w.ms)} ms`);
  }
  for (let i = 0; i < ROUNDS; i++) {
    const order = i % 2 ? ["runbox", "runno"] : ["runno", "runbox"];
    const line = [];
    for (const side of order) {
      const s = state[side];
      if (s.failure) continue;
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      const r = await SIDES[side](prog);
      if (r.ok) {
        s.times.push(r.ms);
        line.push(`${side} ${fmt(r.ms)} ms`);
      } else {
        s.failure = `run ${i + 1} failed: ${r.why}`;
        line.push(`${side} ${s.failure}`);
      }
    }
    if (line.length) log(`  round ${i + 1}/${ROUNDS}: ${line.join(", ")}`);
  }
  rows.push({ prog, ...state });
}

await client.close();

// ---------------------------------------------------------------------------------------
// The table

function stats(s) {
  if (s.failure) return null;
  const sorted = [...s.times].sort((a, b) => a - b);
  return { median: median(sorted), p95: percentile(sorted, 95) };
}

let version = "?";
try {
  version = execFileSync(RUNBOX_BIN, ["--version"], { encoding: "utf8" }).trim();
} catch {}

const out = [];
out.push(
  `${new Date().toISOString()} · ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"}) · ` +
    `node ${process.version} · ${version} · @runno/sandbox 0.10.2 · ${ROUNDS} rounds after 1 warm-up each · ${SETTLE_MS} ms settle before each run`,
);
out.push("");
out.push("| program | runtime | runbox median (ms) | runbox p95 (ms) | Runno median (ms) | Runno p95 (ms) | Runno/runbox |");
out.push("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
const notes = [];
for (const { prog, runbox, runno } of rows) {
  const a = stats(runbox);
  const b = stats(runno);
  const cell = (st, side, key) => (st ? fmt(st[key]) : `FAIL${key === "median" ? ` (${side})` : ""}`);
  const ratio = a && b ? `${(b.median / a.median).toFixed(1)}×` : "—";
  out.push(
    `| ${prog.name} | ${prog.runtime} | ${cell(a, "runbox", "median")} | ${cell(a, "runbox", "p95")} | ` +
      `${cell(b, "Runno", "median")} | ${cell(b, "Runno", "p95")} | ${ratio} |`,
  );
  if (runbox.failure) notes.push(`- ${prog.name}, runbox: ${runbox.failure}`);
  if (runno.failure) notes.push(`- ${prog.name}, Runno: ${runno.failure}`);
}
if (notes.length) {
  out.push("");
  out.push("Failures (not timed):");
  out.push(...notes);
}
console.log(out.join("\n"));
// Exit explicitly: each Runno runCode() with a timeout leaves its timer pending (0.10.2
// never clears it), which would keep node alive for up to TIMEOUT_S after the last run.
process.exit(rows.some((r) => r.runbox.failure) ? 1 : 0);
