// runbox's JavaScript globals, evaluated once in every new interpreter before any program.
//
// It is called with the native primitives of `engine.rs` (`natives`) and returns the hooks
// the engine calls around each program. The larger parts, `inspect.js` (formatting
// objects) and `node.js` (Buffer, fs, readline, …), are loaded on first use: Boa parses
// slowly, and most programs need neither. It defines what a program sees besides the
// language itself: `console` (formatted like Node.js's `util.inspect`), `process`,
// `require` for a few Node.js modules (`fs`, `readline`, `util`, `events`), `Buffer`,
// `readStdin()`, `exit()`, `print()`, and QuickJS's `std` and `scriptArgs` for programs
// written for the `quickjs` runtime. `require("runbox:tools")` (and the module of that name)
// is `tools.js`, the tools of code mode; `fetch`, `Headers` and `Response` are `fetch.js`,
// the network the host reaches for a program (docs/network.md).
(function (natives) {
  "use strict";

  const G = globalThis;
  // What the prelude's own stack frames carry (`engine.rs` names its sources so).
  const PRELUDE = "(runbox:";
  const define = (object, name, value) =>
    Object.defineProperty(object, name, { value, writable: true, configurable: true, enumerable: false });

  // The lazily loaded parts, and what they share with this one.
  const lazy = (name) => {
    let exports;
    return () => (exports === undefined ? (exports = natives.load(name)(natives, shared)) : exports);
  };
  const shared = { define, PRELUDE, STDOUT: 1, STDERR: 2 };
  const inspectModule = (shared.inspectModule = lazy("inspect"));
  const nodeModule = (shared.nodeModule = lazy("node"));
  const toolsModule = lazy("tools");
  const fetchModule = lazy("fetch");
  // A global that loads its part when first read. It stays an accessor: Boa 0.22 caches a
  // global's lookup at each place that reads it, and a place that once read it through
  // its getter goes on calling that slot as a getter after the property became a data
  // property (`for (…) Buffer.from(…)` in a module called the class `Buffer` the second
  // time round).
  const lazyGlobal = (name, get) => {
    let value;
    let loaded = false;
    Object.defineProperty(G, name, {
      configurable: true,
      enumerable: false,
      get() {
        if (!loaded) {
          value = get();
          loaded = true;
        }
        return value;
      },
      set(replacement) {
        value = replacement;
        loaded = true;
      },
    });
  };

  // `console.log`'s text: strings and numbers joined by spaces without loading `inspect`.
  function format(...args) {
    let text = "";
    for (let i = 0; i < args.length; i++) {
      const value = args[i];
      const type = typeof value;
      if (i !== 0) text += " ";
      if (type === "string") {
        if (i === 0 && args.length > 1 && value.includes("%")) return inspectModule().format(...args);
        text += value;
      } else if (type === "number") {
        text += Object.is(value, -0) ? "-0" : `${value}`;
      } else if (type === "boolean" || value === undefined || value === null) {
        text += `${value}`;
      } else if (type === "bigint") {
        text += `${value}n`;
      } else {
        return inspectModule().format(...args);
      }
    }
    return text;
  }
  const inspect = (...args) => inspectModule().inspect(...args);

  // ---------------------------------------------------------------------------------------
  // Output.
  const STDOUT = 1;
  const STDERR = 2;
  const write = (fd, data) => {
    if (typeof data === "string") natives.write(fd, data);
    else natives.write(fd, nodeModule().toBytes(data));
    return true;
  };

  let groupIndent = "";
  const counts = new Map();
  const timers = new Map();
  const print = (fd, args) => {
    let text = format(...args);
    if (groupIndent !== "") text = groupIndent + text.replaceAll("\n", `\n${groupIndent}`);
    natives.write(fd, text + "\n");
  };
  const console = {
    log: (...args) => print(STDOUT, args),
    info: (...args) => print(STDOUT, args),
    debug: (...args) => print(STDOUT, args),
    error: (...args) => print(STDERR, args),
    warn: (...args) => print(STDERR, args),
    trace: (...args) => {
      const err = new Error(format(...args));
      const frames = inspectModule().stackFrames(err) || [];
      print(STDERR, [`Trace${args.length ? ": " + err.message : ""}${frames.length ? "\n" + frames.join("\n") : ""}`]);
    },
    dir: (value, options) => print(STDOUT, [inspect(value, { customInspect: false, ...options })]),
    dirxml: (...args) => print(STDOUT, args),
    assert: (condition, ...args) => {
      if (condition) return;
      if (args.length === 0) print(STDERR, ["Assertion failed"]);
      else if (typeof args[0] === "string") print(STDERR, [`Assertion failed: ${args[0]}`, ...args.slice(1)]);
      else print(STDERR, ["Assertion failed:", ...args]);
    },
    count: (label = "default") => {
      label = `${label}`;
      const count = (counts.get(label) || 0) + 1;
      counts.set(label, count);
      print(STDOUT, [`${label}: ${count}`]);
    },
    countReset: (label = "default") => {
      counts.delete(`${label}`);
    },
    group: (...args) => {
      if (args.length) print(STDOUT, args);
      groupIndent += "  ";
    },
    groupEnd: () => {
      groupIndent = groupIndent.slice(0, -2);
    },
    time: (label = "default") => {
      timers.set(`${label}`, natives.now());
    },
    timeLog: (label = "default", ...args) => {
      const start = timers.get(`${label}`);
      if (start === undefined) return print(STDERR, [`Warning: No such label '${label}' for console.timeLog()`]);
      print(STDOUT, [`${label}: ${formatTime(natives.now() - start)}`, ...args]);
    },
    timeEnd: (label = "default") => {
      const start = timers.get(`${label}`);
      if (start === undefined) return print(STDERR, [`Warning: No such label '${label}' for console.timeEnd()`]);
      timers.delete(`${label}`);
      print(STDOUT, [`${label}: ${formatTime(natives.now() - start)}`]);
    },
    table: (data, properties) => {
      if (data === null || typeof data !== "object") return print(STDOUT, [data]);
      print(STDOUT, [inspectModule().renderTable(data, properties)]);
    },
  };
  console.groupCollapsed = console.group;
  const formatTime = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(3)}s` : `${ms.toFixed(3)}ms`);

  // ---------------------------------------------------------------------------------------
  // process, the globals, require.
  const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
  let argv = [];
  // This program's `process.stdin` (a new one for each program of a session).
  let stdin;
  const exit = (code) => {
    if (code === undefined || code === null) code = process.exitCode;
    natives.exit(code === undefined || code === null ? 0 : Number(code) | 0);
  };
  // The run's environment, read when first used (a network policy's secret placeholders
  // are in it, docs/network.md).
  let env;
  const process = {
    argv,
    get env() {
      return env === undefined ? (env = natives.environ()) : env;
    },
    set env(value) {
      env = value;
    },
    platform: "wasi",
    versions: { boa: natives.version },
    exitCode: undefined,
    exit,
    cwd: () => "/",
    stdout: { write: (data) => write(STDOUT, data), isTTY: false, fd: 1 },
    stderr: { write: (data) => write(STDERR, data), isTTY: false, fd: 2 },
    get stdin() {
      return stdin === undefined ? (stdin = nodeModule().makeStdin()) : stdin;
    },
    nextTick: (fn, ...args) => queueMicrotask(() => fn(...args)),
    hrtime: Object.assign(
      (previous) => {
        const ns = BigInt(Math.round(natives.now() * 1e6));
        let s = Number(ns / 1000000000n);
        let n = Number(ns % 1000000000n);
        if (previous) {
          s -= previous[0];
          n -= previous[1];
          if (n < 0) {
            s--;
            n += 1e9;
          }
        }
        return [s, n];
      },
      { bigint: () => BigInt(Math.round(natives.now() * 1e6)) },
    ),
    uptime: () => natives.now() / 1000,
    memoryUsage: () => ({ rss: 0, heapTotal: 0, heapUsed: 0, external: 0 }),
    on: () => process,
    once: () => process,
  };
  const modules = {
    fs: () => nodeModule().fs,
    "fs/promises": () => nodeModule().fs.promises,
    readline: () => nodeModule().readline,
    "readline/promises": () => nodeModule().readline.promises,
    util: () => nodeModule().util,
    events: () => {
      const { EventEmitter } = nodeModule();
      return Object.assign(EventEmitter, { EventEmitter });
    },
    process: () => process,
    buffer: () => ({ Buffer: nodeModule().Buffer }),
    // The tools of code mode (`tools.js`): `import { everything } from "runbox:tools"`.
    "runbox:tools": () => toolsModule().load(),
  };
  function require(name) {
    const id = String(name).replace(/^node:/, "");
    if (hasOwn(modules, id)) return modules[id]();
    const err = new Error(`Cannot find module '${name}'`);
    err.code = "MODULE_NOT_FOUND";
    throw err;
  }

  const std = {
    in: {
      readAsString: () => natives.readStdin(),
      getline: () => natives.readLine(),
    },
    out: { puts: (s) => natives.write(STDOUT, String(s)), flush: () => {} },
    err: { puts: (s) => natives.write(STDERR, String(s)), flush: () => {} },
    exit,
    loadFile: (path) => {
      try {
        return natives.decodeUtf8(natives.readFile(String(path)), false, false);
      } catch {
        return null;
      }
    },
    writeFile: (path, data) =>
      natives.writeFile(String(path), typeof data === "string" ? data : nodeModule().toBytes(data), false),
    getenv: () => undefined,
  };

  if (typeof Error.captureStackTrace !== "function") {
    define(Error, "captureStackTrace", (target) => {
      const stack = new Error().stack;
      try {
        Object.defineProperty(target, "stack", { value: stack, writable: true, configurable: true });
      } catch {}
    });
  }
  define(G, "setImmediate", (fn, ...args) => setTimeout(fn, 0, ...args));
  define(G, "clearImmediate", (id) => clearTimeout(id));
  if (typeof G.performance === "undefined") define(G, "performance", { now: () => natives.now(), timeOrigin: Date.now() });
  define(G, "console", console);
  define(G, "process", process);
  define(G, "require", require);
  lazyGlobal("Buffer", () => nodeModule().Buffer);
  lazyGlobal("TextEncoder", () => nodeModule().TextEncoder);
  lazyGlobal("TextDecoder", () => nodeModule().TextDecoder);
  // The network (`fetch.js`): the host makes the requests its policy allows.
  lazyGlobal("fetch", () => fetchModule().fetch);
  if (typeof G.Headers === "undefined") lazyGlobal("Headers", () => fetchModule().Headers);
  if (typeof G.Response === "undefined") lazyGlobal("Response", () => fetchModule().Response);
  define(G, "readStdin", () => natives.readStdin());
  define(G, "exit", exit);
  define(G, "print", (...args) => print(STDOUT, args));
  define(G, "std", std);
  define(G, "global", G);
  define(G, "module", { exports: {} });
  define(G, "exports", G.module.exports);
  define(G, "__filename", "/main.js");
  define(G, "__dirname", "/");

  // The hooks the engine calls around each program.
  return {
    // Before a program: its arguments, a fresh exit code.
    begin(args) {
      argv = ["boa", "/main.js", ...args];
      process.argv = argv;
      process.exitCode = undefined;
      define(G, "scriptArgs", ["main.js", ...args]);
      groupIndent = "";
      stdin = undefined;
    },
    // The exit code a program that ran to its end asked for with `process.exitCode`.
    exitCode() {
      const code = process.exitCode;
      return code === undefined || code === null ? 0 : Number(code) | 0;
    },
    // What standard error shows for an exception nobody caught.
    uncaught: (value, inPromise) => inspectModule().uncaught(value, inPromise),
  };
});
