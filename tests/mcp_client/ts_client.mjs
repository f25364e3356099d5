// `runbox mcp` through the MCP TypeScript SDK's own client, as a JavaScript user calls it.
//
// Usage: node ts_client.mjs SCENARIO   (RUNBOX_BIN, RUNBOX_CACHE_DIR from the environment;
// the SDK installed under RUNBOX_NODE_PREFIX by tests/all/mcp.rs)
//
//   max_timeout  timeout_seconds 60 with the SDK's default 60 s request timeout: the
//                result (capped to the server's maximum, and saying so) arrives first
//   tasks        a client that declares the tasks extension (in its 2025-11-25
//                initialize, the SDK's own revision) gets a plain result it accepts, from
//                callTool and from the SDK's task API (experimental.tasks.callToolStream)

import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.RUNBOX_NODE_PREFIX, "noop.js"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

function fail(message) {
  console.error(`FAIL: ${message}`);
  process.exit(1);
}

async function connect(capabilities) {
  const client = new Client({ name: "runbox-ts-test", version: "0" }, { capabilities });
  const transport = new StdioClientTransport({
    command: process.env.RUNBOX_BIN,
    args: ["--quiet", "mcp", "--runtimes", "python"],
    env: { ...process.env, RUNBOX_CACHE_DIR: process.env.RUNBOX_CACHE_DIR },
    stderr: "inherit",
  });
  await client.connect(transport);
  // The output schema is known (and the SDK validates results against it).
  await client.listTools();
  return client;
}

function sleeper(seconds, timeout) {
  return {
    name: "run_code",
    arguments: {
      runtime: "python",
      code: `import time\ntime.sleep(${seconds})\nprint('slept ${seconds}')`,
      timeout_seconds: timeout,
    },
  };
}

async function maxTimeout() {
  const client = await connect({});
  const started = Date.now();
  // The SDK's default: 60 s, no progress.
  const result = await client.callTool(sleeper(100, 60));
  const took = (Date.now() - started) / 1000;
  const out = result.structuredContent;
  if (!out) fail(`no structured content: ${JSON.stringify(result)}`);
  if (out.status !== "timeout") fail(`status ${out.status}`);
  if (!/above this server's maximum: the run had 40 s/.test(out.notice ?? ""))
    fail(`no notice of the cap: ${JSON.stringify(out)}`);
  if (took >= 55) fail(`answered after ${took} s`);
  console.error(`max_timeout: answered ${out.status} after ${took.toFixed(1)} s: ${out.notice}`);
  await client.close();
}

async function tasks() {
  const client = await connect({ extensions: { "io.modelcontextprotocol/tasks": {} } });
  let started = Date.now();
  const result = await client.callTool(sleeper(7, 30));
  const out = result.structuredContent;
  if (result.resultType === "task" || !out) fail(`not a plain result: ${JSON.stringify(result)}`);
  if (out.stdout !== "slept 7\n") fail(`stdout ${JSON.stringify(out.stdout)}`);
  console.error(`tasks: callTool answered after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  started = Date.now();
  const messages = [];
  for await (const message of client.experimental.tasks.callToolStream(sleeper(7, 30))) {
    messages.push(message);
  }
  const last = messages.at(-1);
  if (last?.type !== "result") fail(`callToolStream ended with ${JSON.stringify(last)}`);
  if (last.result.structuredContent?.stdout !== "slept 7\n")
    fail(`callToolStream result ${JSON.stringify(last.result)}`);
  console.error(
    `tasks: callToolStream gave ${messages.map((m) => m.type).join(", ")} after ` +
      `${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  await client.close();
}

const scenarios = { max_timeout: maxTimeout, tasks };
const scenario = scenarios[process.argv[2]];
if (!scenario) fail(`unknown scenario ${process.argv[2]}; one of ${Object.keys(scenarios)}`);
await scenario();
console.error("ok");
