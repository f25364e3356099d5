// runbox's `runbox:tools` module: the tools of the MCP servers the operator named
// (docs/tools.md), as async functions. `prelude.js` loads this on first use.
//
//   import { everything, callTool, ToolError } from "runbox:tools";
//   const sum = await everything.add({ a: 2, b: 3 });
//
// Each export named after a server is an object whose methods are its tools, built from
// /tools/tools.json; a tool whose name is no identifier (`get-sum`) is also there as one
// (`get_sum`), and any other name is sent to the host as it is, which answers `not_allowed`
// with the allowed ones. A call resolves to the answer's `value` or rejects with a
// `ToolError`. The exchange itself is `natives.toolCall` (the device /tools/call).
//
// Called with the natives and the prelude's shared helpers; returns `load()`, which reads
// tools.json again and makes the module's exports.
(function (natives, shared) {
  "use strict";

  const { define } = shared;
  const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);

  // A call the host (or the tool) refused. `kind` is the answer's `error`: tool_error,
  // not_allowed, unknown_server, limit, unavailable or bad_request.
  class ToolError extends Error {
    constructor(kind, message, content, server, tool) {
      super(message);
      this.kind = kind;
      this.content = content;
      this.server = server;
      this.tool = tool;
    }
  }
  define(ToolError.prototype, "name", "ToolError");

  const unavailable = (message) => ({ ok: false, error: "unavailable", message });

  // One call, synchronously: the answer's value, or a thrown ToolError.
  function exchange(server, tool, args) {
    server = String(server);
    tool = String(tool);
    if (args === undefined || args === null) args = {};
    if (typeof args !== "object" || Array.isArray(args)) {
      throw new TypeError(`the arguments of ${server}.${tool} must be an object, not ${Array.isArray(args) ? "an array" : typeof args}`);
    }
    const text = natives.toolCall(JSON.stringify({ server, tool, arguments: args }));
    let answer;
    try {
      answer = JSON.parse(text);
    } catch (err) {
      answer = unavailable(`the host's answer is not JSON: ${err.message}`);
    }
    if (answer === null || typeof answer !== "object") answer = unavailable("the host's answer is not a JSON object");
    if (answer.ok === true) return answer.value;
    const kind = typeof answer.error === "string" ? answer.error : "unavailable";
    const message = typeof answer.message === "string" ? answer.message : `${server}.${tool} failed (${kind})`;
    throw new ToolError(kind, message, Array.isArray(answer.content) ? answer.content : [], server, tool);
  }

  // `callTool(server, tool, args)`: a promise of the tool's value.
  async function callTool(server, tool, args) {
    return exchange(server, tool, args);
  }

  // The name a tool is also reachable by as an identifier: `get-sum` → `get_sum`.
  const identifier = (name) => {
    const id = name.replace(/[^A-Za-z0-9_$]/g, "_");
    return /^[0-9]/.test(id) ? `_${id}` : id;
  };

  // Names no tool is looked up by when tools.json does not list them: what `await`,
  // JSON.stringify and inspection probe for.
  const probes = new Set(["then", "catch", "finally", "toJSON", "inspect", "prototype", "asymmetricMatch", "$$typeof"]);
  const isProbe = (target, key) => typeof key !== "string" || key in target || probes.has(key);

  function toolFunction(server, tool, info) {
    const fn = {
      [tool]: async function (args) {
        return exchange(server, tool, args);
      },
    }[tool];
    if (info) {
      if (typeof info.description === "string") define(fn, "description", info.description);
      if (info.inputSchema !== undefined) define(fn, "inputSchema", info.inputSchema);
      if (info.outputSchema !== undefined) define(fn, "outputSchema", info.outputSchema);
    }
    return fn;
  }

  // A server: its listed tools (enumerable, by their own names), their identifier
  // aliases, and any other name as a call the host judges.
  function makeServer(server, tools) {
    const target = {};
    const listed = tools.filter((t) => t !== null && typeof t === "object" && typeof t.name === "string");
    for (const t of listed) {
      Object.defineProperty(target, t.name, {
        value: toolFunction(server, t.name, t),
        writable: true,
        enumerable: true,
        configurable: true,
      });
    }
    for (const t of listed) {
      const id = identifier(t.name);
      if (!hasOwn(target, id)) define(target, id, target[t.name]);
    }
    return new Proxy(target, {
      get(target, key, receiver) {
        if (isProbe(target, key)) return Reflect.get(target, key, receiver);
        const fn = toolFunction(server, key);
        define(target, key, fn);
        return fn;
      },
    });
  }

  function readManifest() {
    const text = natives.toolsManifest();
    if (text === null || text === undefined) return {};
    try {
      const manifest = JSON.parse(text);
      const servers = manifest && manifest.servers;
      return servers !== null && typeof servers === "object" && !Array.isArray(servers) ? servers : {};
    } catch {
      return {};
    }
  }

  // The module's exports: each server, `callTool`, `ToolError`, and `default` (every
  // server, and any other name as a server the host judges).
  function load() {
    const servers = {};
    for (const [name, info] of Object.entries(readManifest())) {
      const tools = info !== null && typeof info === "object" && Array.isArray(info.tools) ? info.tools : [];
      Object.defineProperty(servers, name, { value: makeServer(name, tools), writable: true, enumerable: true, configurable: true });
    }
    const all = new Proxy(servers, {
      get(target, key, receiver) {
        if (isProbe(target, key)) return Reflect.get(target, key, receiver);
        const server = makeServer(key, []);
        define(target, key, server);
        return server;
      },
    });
    return { ...servers, callTool, ToolError, default: all };
  }

  return { load, ToolError, callTool, identifier };
});
