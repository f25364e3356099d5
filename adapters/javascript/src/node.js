// runbox's Node.js modules: `Buffer`, `TextEncoder`/`TextDecoder`, `events`,
// `process.stdin`, `readline`, `fs` and `util`. `prelude.js` loads this on first use.
//
// Called with the natives and the prelude's shared helpers; returns its objects.
(function (natives, shared) {
  "use strict";

  const { define, STDOUT } = shared;
  const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
  const byteLength = (proto) => Object.getOwnPropertyDescriptor(proto, "byteLength").get;
  const brand = (get) => (value) => {
    try {
      get.call(value);
      return true;
    } catch {
      return false;
    }
  };
  const isArrayBuffer = brand(byteLength(ArrayBuffer.prototype));
  const isSharedArrayBuffer =
    typeof SharedArrayBuffer === "function" ? brand(byteLength(SharedArrayBuffer.prototype)) : () => false;

  // ---------------------------------------------------------------------------------------
  // TextEncoder and TextDecoder, for UTF-8 (the encoding of everything here).
  const utf8Labels = ["utf-8", "utf8", "unicode-1-1-utf-8"];
  class TextEncoder {
    get encoding() {
      return "utf-8";
    }
    encode(input = "") {
      return natives.encodeUtf8(String(input));
    }
    encodeInto(input, destination) {
      const bytes = natives.encodeUtf8(String(input));
      let written = bytes.length;
      if (written > destination.length) {
        // Whole characters only.
        written = destination.length;
        while (written > 0 && (bytes[written] & 0xc0) === 0x80) written--;
      }
      destination.set(bytes.subarray(0, written));
      return { read: decoderForCount.decode(bytes.subarray(0, written)).length, written };
    }
  }
  class TextDecoder {
    constructor(label = "utf-8", options = {}) {
      if (!utf8Labels.includes(String(label).trim().toLowerCase())) {
        throw new RangeError(`The "${label}" encoding is not supported`);
      }
      define(this, "_fatal", !!options.fatal);
      define(this, "_ignoreBOM", !!options.ignoreBOM);
    }
    get encoding() {
      return "utf-8";
    }
    get fatal() {
      return this._fatal;
    }
    get ignoreBOM() {
      return this._ignoreBOM;
    }
    decode(input = new Uint8Array(0)) {
      const bytes = isArrayBuffer(input) || isSharedArrayBuffer(input)
        ? new Uint8Array(input)
        : new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
      return natives.decodeUtf8(bytes, this._fatal, this._ignoreBOM);
    }
  }
  const decoderForCount = new TextDecoder();

  // ---------------------------------------------------------------------------------------
  // Buffer: a Uint8Array that decodes as text (enough for `readFileSync(...).toString()`).
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const normalizeEncoding = (encoding) => {
    const e = String(encoding === undefined || encoding === null ? "utf8" : encoding).toLowerCase();
    if (e === "utf8" || e === "utf-8") return "utf8";
    if (e === "latin1" || e === "binary" || e === "ascii") return "latin1";
    if (e === "hex" || e === "base64" || e === "base64url") return e;
    throw new TypeError(`Unknown encoding: ${encoding}`);
  };
  class Buffer extends Uint8Array {
    static from(value, encodingOrOffset, length) {
      if (typeof value === "string") {
        const encoding = normalizeEncoding(encodingOrOffset);
        if (encoding === "utf8") return Buffer.wrap(encoder.encode(value));
        if (encoding === "latin1") return Buffer.wrap(Uint8Array.from(value, (c) => c.charCodeAt(0) & 0xff));
        if (encoding === "hex") {
          const bytes = new Buffer(value.length >> 1);
          for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(value.substr(i * 2, 2), 16);
          return bytes;
        }
        let b64 = value.replace(/-/g, "+").replace(/_/g, "/").replace(/[^A-Za-z0-9+/]/g, "");
        while (b64.length % 4) b64 += "=";
        return Buffer.wrap(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
      }
      if (isArrayBuffer(value) || isSharedArrayBuffer(value)) {
        return new Buffer(value, encodingOrOffset || 0, length === undefined ? value.byteLength - (encodingOrOffset || 0) : length);
      }
      return Buffer.wrap(Uint8Array.from(value));
    }
    static wrap(bytes) {
      return new Buffer(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    }
    static alloc(size, fill) {
      const buffer = new Buffer(size);
      if (fill !== undefined) buffer.fill(typeof fill === "string" ? fill.charCodeAt(0) : fill);
      return buffer;
    }
    static allocUnsafe(size) {
      return new Buffer(size);
    }
    static isBuffer(value) {
      return value instanceof Buffer;
    }
    static byteLength(value, encoding) {
      return typeof value === "string" ? Buffer.from(value, encoding).length : value.byteLength;
    }
    static concat(list, totalLength) {
      const length = totalLength === undefined ? list.reduce((n, b) => n + b.length, 0) : totalLength;
      const result = new Buffer(length);
      let offset = 0;
      for (const b of list) {
        result.set(b.subarray(0, Math.max(0, length - offset)), offset);
        offset += b.length;
        if (offset >= length) break;
      }
      return result;
    }
    toString(encoding, start = 0, end = this.length) {
      const bytes = this.subarray(start, end);
      const e = normalizeEncoding(encoding);
      if (e === "utf8") return decoder.decode(bytes);
      if (e === "latin1") return String.fromCharCode(...bytes);
      if (e === "hex") return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
      let binary = "";
      for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      const b64 = btoa(binary);
      return e === "base64" ? b64 : b64.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    }
    toJSON() {
      return { type: "Buffer", data: Array.from(this) };
    }
    [Symbol.for("nodejs.util.inspect.custom")]() {
      const shown = Array.from(this.subarray(0, 50), (b) => b.toString(16).padStart(2, "0")).join(" ");
      const more = this.length > 50 ? ` ... ${this.length - 50} more byte${this.length > 51 ? "s" : ""}` : "";
      return `<Buffer ${shown}${more}>`;
    }
    equals(other) {
      return this.length === other.length && this.every((b, i) => b === other[i]);
    }
    write(string, offset = 0) {
      const bytes = encoder.encode(string);
      this.set(bytes.subarray(0, this.length - offset), offset);
      return Math.min(bytes.length, this.length - offset);
    }
    slice(start, end) {
      return this.subarray(start, end);
    }
    subarray(start, end) {
      const view = Uint8Array.prototype.subarray.call(this, start, end);
      return new Buffer(view.buffer, view.byteOffset, view.byteLength);
    }
  }

  // ---------------------------------------------------------------------------------------
  // Standard input: the whole of it is there from the start.

  // A minimal EventEmitter (`events`), enough for `process.stdin` and `readline`.
  class EventEmitter {
    constructor() {
      define(this, "_events", new Map());
    }
    on(name, listener) {
      if (!this._events.has(name)) this._events.set(name, []);
      this._events.get(name).push(listener);
      if (typeof this._listening === "function") this._listening(name);
      return this;
    }
    addListener(name, listener) {
      return this.on(name, listener);
    }
    once(name, listener) {
      const wrapper = (...args) => {
        this.off(name, wrapper);
        listener.apply(this, args);
      };
      wrapper.listener = listener;
      return this.on(name, wrapper);
    }
    off(name, listener) {
      const list = this._events.get(name);
      if (list) {
        const i = list.findIndex((l) => l === listener || l.listener === listener);
        if (i !== -1) list.splice(i, 1);
      }
      return this;
    }
    removeListener(name, listener) {
      return this.off(name, listener);
    }
    removeAllListeners(name) {
      if (name === undefined) this._events.clear();
      else this._events.delete(name);
      return this;
    }
    emit(name, ...args) {
      const list = this._events.get(name);
      if (!list || list.length === 0) {
        if (name === "error") throw args[0];
        return false;
      }
      for (const listener of [...list]) listener.apply(this, args);
      return true;
    }
    listenerCount(name) {
      return (this._events.get(name) || []).length;
    }
  }

  // `process.stdin`: 'data' (once, the whole input), then 'end' and 'close', emitted
  // after the program's synchronous part once a listener asks for them.
  function makeStdin() {
    const stdin = new EventEmitter();
    let scheduled = false;
    let encoding = null;
    define(stdin, "_listening", (name) => {
      if (scheduled || (name !== "data" && name !== "end" && name !== "readable" && name !== "close")) return;
      scheduled = true;
      setTimeout(() => {
        const bytes = natives.readStdinBytes();
        if (bytes.length !== 0) {
          const chunk = encoding ? Buffer.wrap(bytes).toString(encoding) : Buffer.wrap(bytes);
          stdin.emit("data", chunk);
        }
        stdin.emit("end");
        stdin.emit("close");
      }, 0);
    });
    stdin.fd = 0;
    stdin.isTTY = false;
    stdin.setEncoding = (e) => {
      encoding = normalizeEncoding(e);
      return stdin;
    };
    stdin.resume = () => stdin;
    stdin.pause = () => stdin;
    stdin.read = () => {
      const bytes = natives.readStdinBytes();
      if (bytes.length === 0) return null;
      return encoding ? Buffer.wrap(bytes).toString(encoding) : Buffer.wrap(bytes);
    };
    stdin[Symbol.asyncIterator] = async function* () {
      const bytes = natives.readStdinBytes();
      if (bytes.length !== 0) yield encoding ? Buffer.wrap(bytes).toString(encoding) : Buffer.wrap(bytes);
    };
    return stdin;
  }

  // `readline.createInterface({ input: process.stdin })`: 'line' for each line of the
  // input, then 'close'; `for await (const line of rl)`; `rl.question()`.
  const readline = {
    createInterface(options) {
      const rl = new EventEmitter();
      let scheduled = false;
      let closed = false;
      const nextLine = () => natives.readLine();
      define(rl, "_listening", (name) => {
        if (scheduled || (name !== "line" && name !== "close")) return;
        scheduled = true;
        setTimeout(() => {
          let line;
          while (!closed && (line = nextLine()) !== null) rl.emit("line", line);
          rl.close();
        }, 0);
      });
      rl.close = () => {
        if (closed) return;
        closed = true;
        rl.emit("close");
      };
      rl.question = (query, optionsOrCallback, maybeCallback) => {
        const callback = typeof optionsOrCallback === "function" ? optionsOrCallback : maybeCallback;
        natives.write(STDOUT, String(query));
        const line = nextLine();
        setTimeout(() => callback(line === null ? "" : line), 0);
      };
      rl.setPrompt = () => {};
      rl.prompt = () => {};
      rl.pause = () => rl;
      rl.resume = () => rl;
      rl.write = (data) => {
        if (options && options.output && typeof options.output.write === "function") options.output.write(data);
      };
      rl[Symbol.asyncIterator] = async function* () {
        let line;
        while (!closed && (line = nextLine()) !== null) yield line;
      };
      return rl;
    },
  };
  readline.promises = {
    createInterface(options) {
      const rl = readline.createInterface(options);
      const question = rl.question;
      rl.question = (query) => new Promise((resolve) => question(query, resolve));
      return rl;
    },
  };

  // ---------------------------------------------------------------------------------------
  // fs: synchronous files in the sandbox (and fd 0, 1, 2 for the standard streams).
  const encodingOf = (options) =>
    typeof options === "string" ? options : options && typeof options === "object" ? options.encoding : undefined;
  const isStdin = (path) => path === 0 || path === "/dev/stdin";
  const fsCall = (fn) =>
    function (...args) {
      try {
        return fn.apply(this, args);
      } catch (err) {
        const match = err instanceof Error && /^(E[A-Z]+): .*?, (\w+)(?: '(.*)')?$/.exec(err.message);
        if (match) {
          err.code = match[1];
          err.syscall = match[2];
          if (match[3] !== undefined) err.path = match[3];
        }
        throw err;
      }
    };
  const pathString = (path) => {
    if (typeof URL === "function" && path instanceof URL) return decodeURIComponent(path.pathname);
    if (ArrayBuffer.isView(path)) return decoder.decode(path);
    return String(path);
  };
  class Stats {
    constructor(raw) {
      Object.assign(this, {
        size: raw.size,
        mode: raw.isDirectory ? 0o40755 : 0o100644,
        mtimeMs: raw.mtimeMs,
        mtime: new Date(raw.mtimeMs),
      });
      define(this, "_dir", raw.isDirectory);
      define(this, "_file", raw.isFile);
    }
    isFile() {
      return this._file;
    }
    isDirectory() {
      return this._dir;
    }
    isSymbolicLink() {
      return false;
    }
  }
  const fs = {
    readFileSync: fsCall((path, options) => {
      const encoding = encodingOf(options);
      const bytes = isStdin(path) ? natives.readStdinBytes() : natives.readFile(pathString(path));
      const buffer = Buffer.wrap(bytes);
      return encoding ? buffer.toString(encoding) : buffer;
    }),
    writeFileSync: fsCall((path, data, options) => {
      const bytes = toBytes(data, encodingOf(options));
      if (path === 1 || path === 2) natives.write(path, bytes);
      else natives.writeFile(pathString(path), bytes, !!(options && options.flag === "a"));
    }),
    appendFileSync: fsCall((path, data, options) => {
      const bytes = toBytes(data, encodingOf(options));
      if (path === 1 || path === 2) natives.write(path, bytes);
      else natives.writeFile(pathString(path), bytes, true);
    }),
    existsSync: (path) => {
      try {
        return natives.exists(pathString(path));
      } catch {
        return false;
      }
    },
    readdirSync: fsCall((path, options) => {
      const names = natives.readdir(pathString(path)).sort();
      if (options && options.withFileTypes) {
        const dir = pathString(path).replace(/\/$/, "");
        return names.map((name) => {
          const stats = new Stats(natives.stat(`${dir}/${name}`));
          return { name, isFile: () => stats.isFile(), isDirectory: () => stats.isDirectory(), isSymbolicLink: () => false };
        });
      }
      return names;
    }),
    mkdirSync: fsCall((path, options) => {
      natives.mkdir(pathString(path), !!(options && options.recursive));
    }),
    rmSync: fsCall((path, options) => {
      natives.remove(pathString(path), !!(options && options.recursive), !!(options && options.force));
    }),
    rmdirSync: fsCall((path, options) => {
      natives.remove(pathString(path), !!(options && options.recursive), false);
    }),
    unlinkSync: fsCall((path) => {
      natives.remove(pathString(path), false, false);
    }),
    renameSync: fsCall((from, to) => {
      natives.rename(pathString(from), pathString(to));
    }),
    copyFileSync: fsCall((from, to) => {
      natives.writeFile(pathString(to), natives.readFile(pathString(from)), false);
    }),
    statSync: fsCall((path) => new Stats(natives.stat(pathString(path)))),
  };
  fs.lstatSync = fs.statSync;
  fs.promises = {};
  for (const [name, fn] of Object.entries(fs)) {
    if (!name.endsWith("Sync")) continue;
    const base = name.slice(0, -4);
    fs.promises[base] = async (...args) => fn(...args);
    fs[base] = (...args) => {
      const callback = typeof args[args.length - 1] === "function" ? args.pop() : null;
      let result;
      let error = null;
      try {
        result = fn(...args);
      } catch (err) {
        error = err;
      }
      if (callback) {
        setTimeout(() => (base === "exists" ? callback(result) : callback(error, result)), 0);
      }
    };
  }


  // Any binary data as a Uint8Array over the same bytes.
  function toBytes(data, encoding) {
    if (typeof data === "string") return Buffer.from(data, encoding);
    if (isArrayBuffer(data) || isSharedArrayBuffer(data)) return new Uint8Array(data);
    if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    return Buffer.from(String(data));
  }

  const util = {
    get inspect() {
      return shared.inspectModule().inspect;
    },
    get format() {
      return shared.inspectModule().format;
    },
    isDeepStrictEqual: (a, b) => {
      const { inspect } = shared.inspectModule();
      return inspect(a, { depth: Infinity }) === inspect(b, { depth: Infinity });
    },
    promisify: (fn) => (...args) =>
      new Promise((resolve, reject) => fn(...args, (err, value) => (err ? reject(err) : resolve(value)))),
    get types() {
      return shared.inspectModule().types;
    },
    TextEncoder,
    TextDecoder,
  };

  return {
    Buffer,
    TextEncoder,
    TextDecoder,
    EventEmitter,
    makeStdin,
    readline,
    fs,
    util,
    toBytes,
  };
});
