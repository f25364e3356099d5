// `runbox mcp` seen by the MCP TypeScript SDK's client, with its schemas checked by AJV in
// strict mode (what the MCP Inspector and the SDK use): every tool's input and output
// schema must compile without a warning, and every structured result must validate.
//
// Usage: node validate_schemas.mjs   (RUNBOX_BIN, RUNBOX_CACHE_DIR from the environment;
// the SDK installed under RUNBOX_NODE_PREFIX by tests/all/mcp.rs)

import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.RUNBOX_NODE_PREFIX, "noop.js"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const Ajv2020 = require("ajv/dist/2020").default;
const addFormats = require("ajv-formats").default ?? require("ajv-formats");

// Whatever AJV or the SDK says about a schema is a failure: clients print these to users.
const complaints = [];
for (const level of ["warn", "error", "log"]) {
  const original = console[level].bind(console);
  console[level] = (...args) => {
    complaints.push(`console.${level}: ${args.map(String).join(" ")}`);
    original(...args);
  };
}

function strictAjv() {
  const ajv = new Ajv2020({
    strict: true,
    // `"type": ["integer", "null"]` is standard JSON Schema; strict mode wants it allowed.
    allowUnionTypes: true,
    allErrors: true,
    logger: {
      log: (m) => complaints.push(`ajv log: ${m}`),
      warn: (m) => complaints.push(`ajv warn: ${m}`),
      error: (m) => complaints.push(`ajv error: ${m}`),
    },
  });
  addFormats(ajv);
  // The 2026-07-28 MCP revision's header mirroring: clients of that revision know it.
  ajv.addKeyword({ keyword: "x-mcp-header", schemaType: "string" });
  return ajv;
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const transport = new StdioClientTransport({
  command: process.env.RUNBOX_BIN,
  args: ["mcp", "--quiet", "--runtimes", "python,quickjs"],
  env: { ...process.env },
  stderr: "inherit",
});
const client = new Client({ name: "runbox-schema-check", version: "0" });
await client.connect(transport);

const { tools } = await client.listTools();
check(
  JSON.stringify(tools.map((t) => t.name).sort()) ===
    JSON.stringify([
      "close_session", "create_session", "fork_session", "list_runtimes", "run_code",
    ]),
  `tools: ${tools.map((t) => t.name)}`,
);
const validators = {};
for (const tool of tools) {
  const ajv = strictAjv();
  for (const [what, schema] of [["input", tool.inputSchema], ["output", tool.outputSchema]]) {
    check(schema, `${tool.name} has no ${what} schema`);
    try {
      const validate = ajv.compile(schema);
      if (what === "output") validators[tool.name] = validate;
    } catch (e) {
      throw new Error(`${tool.name}'s ${what} schema fails AJV strict mode: ${e.message}`);
    }
    console.error(`ok: ${tool.name} ${what} schema compiles in strict mode`);
  }
}

const calls = [
  ["list_runtimes", {}],
  ["run_code", { runtime: "python", code: "print(6 * 7)" }],
  ["run_code", { runtime: "quickjs", code: "throw new Error('boom')" }],
  ["run_code", { runtime: "python", code: "while True: pass", timeout_seconds: 0.5 }],
  [
    "run_code",
    {
      runtime: "python",
      code: "open('out.txt', 'w').write(open('in.txt').read())",
      files: [{ path: "in.txt", content: "aGk=", encoding: "base64" }],
    },
  ],
  // Every optional field at once, and an output long enough to be linked.
  [
    "run_code",
    {
      runtime: "python",
      code: "import sys\nprint(sys.stdin.read(), open('in.txt').read())\nprint('y' * 100000)",
      stdin: "hello",
      timeout_seconds: 5,
      files: [{ path: "in.txt", content: "A" }],
    },
  ],
  ["create_session", { runtime: "quickjs" }],
  ["create_session", { runtime: "python" }],
];
let sessionId = null;
for (let [name, args] of calls) {
  // The SDK validates structured content against the output schema itself, and throws
  // when it does not match.
  const result = await client.callTool({ name, arguments: args });
  check(!result.isError, `${name} ${JSON.stringify(args)}: ${JSON.stringify(result)}`);
  const validate = validators[name];
  check(
    validate(result.structuredContent),
    `${name}'s result does not match its schema: ${JSON.stringify(validate.errors)}`,
  );
  console.error(`ok: ${name} result validates (${JSON.stringify(args).slice(0, 40)})`);
  const uri = result.structuredContent?.output_uri;
  if (uri) {
    // A linked output reads back whole.
    const read = await client.readResource({ uri });
    check(read.contents[0].text.length === 100009, `read ${uri}: ${read.contents[0].text.length}`);
    const link = result.content.find((c) => c.type === "resource_link");
    check(link && link.uri === uri, `no resource_link for ${uri}`);
    console.error(`ok: the linked output reads back (${uri})`);
  }
  if (name === "create_session") {
    sessionId = result.structuredContent.session_id;
    const code = args.runtime === "python" ? "kept = 1" : "var kept = 1";
    calls.push(["run_code", { session_id: sessionId, code, stdin: "x",
                              timeout_seconds: 5, files: [{ path: "s.txt", content: "s" }] }]);
    // A session of a snapshot runtime forks.
    if (args.runtime === "python") {
      calls.push(["fork_session", { session_id: sessionId, count: 2 }]);
    }
    calls.push(["close_session", { session_id: sessionId }]);
  }
}

await client.close();
const relevant = complaints.filter((c) => !c.startsWith("console.error: ok:"));
check(relevant.length === 0, `complaints:\n${relevant.join("\n")}`);
console.error("ok: no complaints");
