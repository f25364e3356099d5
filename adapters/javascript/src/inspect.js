// runbox's own value formatter: `util.inspect`, `util.format`, `console.table` and the text
// of errors nobody caught. It aims at the output Node.js prints for the same values, so that
// programs and their expected outputs carry over. It works in two steps: `describe` turns a
// value into a tree (text leaves, `key: value` pairs, bracketed lists), then `lay` writes
// the tree out, choosing for each list one line, one item a line, or columns of short items
// from the measured widths of its laid-out items. `prelude.js` loads this file on first use
// (a program printing only strings and numbers never does), so that a run does not pay for
// parsing it.
//
// Called with the natives and the prelude's shared helpers; returns its functions.
(function (natives, shared) {
  "use strict";

  const G = globalThis;
  const { PRELUDE } = shared;
  const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
  const isEnumerable = (o, k) => Object.prototype.propertyIsEnumerable.call(o, k);
  const plural = (n, word) => `${n} ${word}${n > 1 ? "s" : ""}`;
  const spaces = (n) => " ".repeat(Math.max(0, n));

  // ---------------------------------------------------------------------------------------
  // What a value is, asked of its internal slots: a built-in method or getter that throws on
  // anything else. This holds for objects of any realm and ignores a faked toStringTag.
  const accepts = (method) => (value) => {
    try {
      method.call(value);
      return true;
    } catch {
      return false;
    }
  };
  const protoGetter = (C, name) => Object.getOwnPropertyDescriptor(C.prototype, name).get;
  const TypedArray = Object.getPrototypeOf(Uint8Array);
  const typedArrayName = protoGetter(TypedArray, Symbol.toStringTag);
  const typedArrayLength = protoGetter(TypedArray, "length");
  const mapSize = protoGetter(Map, "size");
  const setSize = protoGetter(Set, "size");
  const regExpSource = protoGetter(RegExp, "source");

  const isMap = accepts(mapSize);
  const isSet = accepts(setSize);
  const isTypedArray = (v) => typedArrayName.call(v) !== undefined;
  const isArrayBuffer = accepts(protoGetter(ArrayBuffer, "byteLength"));
  const isSharedArrayBuffer =
    typeof SharedArrayBuffer === "function" ? accepts(protoGetter(SharedArrayBuffer, "byteLength")) : () => false;
  const isDataView = accepts(protoGetter(DataView, "byteLength"));
  const isDate = accepts(Date.prototype.getTime);
  const isRegExp = (v) => v !== RegExp.prototype && accepts(regExpSource)(v);
  const isWeakMap = accepts(WeakMap.prototype.has);
  const isWeakSet = accepts(WeakSet.prototype.has);
  const isPromise = (v) => natives.promiseState(v) !== undefined;
  const tagOf = (v) => Object.prototype.toString.call(v);
  const isError = (v) => tagOf(v) === "[object Error]" || v instanceof Error;
  const isArguments = (v) => tagOf(v) === "[object Arguments]";
  // Boxed primitives: `new Number(1)` prints as `[Number: 1]`.
  const boxes = [Number, String, Boolean, BigInt, Symbol].map((C) => [C.name, C.prototype.valueOf]);
  const functionKinds = new Map([
    [Object.getPrototypeOf(function* () {}), "GeneratorFunction"],
    [Object.getPrototypeOf(async function () {}), "AsyncFunction"],
    [Object.getPrototypeOf(async function* () {}), "AsyncGeneratorFunction"],
  ]);

  // ---------------------------------------------------------------------------------------
  // util.inspect, with Node's defaults.
  const custom = Symbol.for("nodejs.util.inspect.custom");
  const defaults = {
    depth: 2,
    breakLength: 80,
    compact: 3,
    maxArrayLength: 100,
    maxStringLength: 10000,
    showHidden: false,
    customInspect: true,
    sorted: false,
    colors: false,
  };

  function inspect(value, options) {
    const ctx = { ...defaults };
    if (options !== null && typeof options === "object") {
      for (const key of Object.keys(defaults)) if (options[key] !== undefined) ctx[key] = options[key];
    }
    for (const key of ["depth", "maxArrayLength", "maxStringLength"]) if (ctx[key] === null) ctx[key] = Infinity;
    // `open`: the objects being described (a repeat is a cycle); `refs`: the numbers of
    // the objects a cycle leads back to; `last`: the level of the list opened last.
    Object.assign(ctx, { open: [], refs: new Map(), last: 0 });
    return lay(describe(value, ctx, 0), 0, ctx);
  }
  inspect.custom = custom;
  inspect.defaultOptions = defaults;

  // Quoted as Node quotes: single quotes unless the string holds one, then double quotes or
  // backquotes; control characters, backslashes and lone surrogates escaped.
  const escapes = { 8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r", 39: "\\'", 92: "\\\\" };
  const unsafe = /[\x00-\x1f\x27\x5c\x7f-\x9f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
  const escapeChar = (c) => {
    const code = c.charCodeAt(0);
    if (escapes[code]) return escapes[code];
    return code > 0xff ? `\\u${code.toString(16)}` : `\\x${code.toString(16).toUpperCase().padStart(2, "0")}`;
  };
  function quote(str) {
    let q = "'";
    if (str.includes("'")) {
      if (!str.includes('"')) q = '"';
      else if (!str.includes("`") && !str.includes("${")) q = "`";
    }
    const body = str.replace(unsafe, (c) => (c === "'" && q !== "'" ? c : escapeChar(c)));
    return q + body + q;
  }

  const numberText = (n) => (Object.is(n, -0) ? "-0" : `${n}`);

  // Columns a string takes on a terminal: East Asian wide characters two, combining marks none.
  function width(str) {
    if (/^[\x20-\x7e]*$/.test(str)) return str.length;
    let w = 0;
    for (const ch of str) {
      const c = ch.codePointAt(0);
      if ((c >= 0x300 && c <= 0x36f) || (c >= 0x200b && c <= 0x200f)) continue;
      const wide =
        (c >= 0x1100 && c <= 0x115f) || (c >= 0x2e80 && c <= 0xa4cf && c !== 0x303f) ||
        (c >= 0xac00 && c <= 0xd7a3) || (c >= 0xf900 && c <= 0xfaff) || (c >= 0xfe30 && c <= 0xfe4f) ||
        (c >= 0xff00 && c <= 0xff60) || (c >= 0xffe0 && c <= 0xffe6) || (c >= 0x1f300 && c <= 0x1f64f) ||
        (c >= 0x1f900 && c <= 0x1f9ff) || (c >= 0x20000 && c <= 0x3fffd);
      w += wide ? 2 : 1;
    }
    return w;
  }

  // ---------------------------------------------------------------------------------------
  // Describing: a value becomes a tree. A node is one of
  //   "text"                             printed as it is;
  //   { string }                         a string value: quoted, split at its line ends if long;
  //   { block }                          text whose later lines follow the indentation (an
  //                                      error's stack, what a custom inspect returned);
  //   { left, sep, right }               `key: value`, `key => value`, `<rejected> value`;
  //   { base, open, close, items, … }    a list in brackets, after its `base` text if any.
  // `level` counts the lists around the value; past `depth` an object shows only its name.
  function describe(value, ctx, level) {
    if (typeof value === "string") return { string: value };
    if (typeof value === "number") return numberText(value);
    if (typeof value === "bigint") return `${value}n`;
    if (value === null || typeof value !== "object" && typeof value !== "function") return String(value);
    if (ctx.customInspect) {
      let fn;
      try {
        fn = value[custom];
      } catch {}
      if (typeof fn === "function" && fn !== inspect) {
        const depth = ctx.depth === Infinity ? null : ctx.depth - level;
        const options = { stylize: (text) => text };
        for (const key of Object.keys(defaults)) options[key] = ctx[key];
        const result = fn.call(value, depth, { ...options, depth }, inspect);
        if (result !== value) return typeof result === "string" ? { block: result } : describe(result, ctx, level);
      }
    }
    if (ctx.open.includes(value)) {
      if (!ctx.refs.has(value)) ctx.refs.set(value, ctx.refs.size + 1);
      return `[Circular *${ctx.refs.get(value)}]`;
    }
    return describeObject(value, ctx, level);
  }

  // `Foo`, `Foo [tag]`, `Map(2)`, `[Object: null prototype]`: what names an object.
  function label(name, tag, fallback, size = "") {
    const own = name === null ? `[${fallback}${size}: null prototype]` : `${name}${size}`;
    return tag !== "" && tag !== (name === null ? fallback : name) ? `${own} [${tag}]` : own;
  }

  function describeObject(value, ctx, level) {
    const name = constructorName(value);
    let tag;
    try {
      tag = value[Symbol.toStringTag];
    } catch {}
    // A tag that is an own enumerable property is shown with the other properties instead.
    if (typeof tag !== "string" || (tag !== "" && isEnumerable(value, Symbol.toStringTag))) tag = "";
    const shape = shapeOf(value, name, tag, ownKeys(value, ctx.showHidden), ctx, level);
    if (shape.open === undefined) return shape; // complete in itself
    if (level > ctx.depth) return name === null ? label(name, tag, "Object") : `[${label(name, tag, "Object")}]`;

    ctx.last = level + 1;
    ctx.open.push(value);
    let items;
    try {
      items = shape.items ? shape.items(level + 1) : [];
      for (const key of shape.keys) items.push(property(value, key, ctx, level + 1));
      for (const key of shape.hidden || []) {
        items.push(property(value, key, ctx, level + 1, { value: value[key], enumerable: false }));
      }
    } catch (err) {
      if (!(err instanceof RangeError || (err && err.name === "RuntimeLimitError"))) throw err;
      return `[${label(name, tag, "Object")}: Inspection interrupted prematurely. Maximum call stack size exceeded.]`;
    } finally {
      ctx.open.pop();
    }
    const ref = ctx.refs.get(value);
    const base = ref === undefined ? shape.base || "" : `<ref *${ref}>${shape.base ? ` ${shape.base}` : ""}`;
    // How far below this list the list opened last lies: Node keeps a list on one line
    // only if that is less than `compact` (3) levels.
    const below = ctx.last - (level + 1);
    // Arrays of numbers only align their columns to the right.
    const numeric = shape.arrayLike && items.every((_, i) => ["number", "bigint"].includes(typeof value[i]));
    return { base, open: shape.open, close: shape.close || "}", items, arrayLike: shape.arrayLike, below, numeric };
  }

  // What an object shows: text complete in itself, or `{ open, close, base, items, keys,
  // hidden, arrayLike }` for a list: `items(level)` makes its entries (elements, map
  // entries…), `keys` its own properties, `hidden` properties printed as `[name]: value`.
  function shapeOf(value, name, tag, keys, ctx, level) {
    const elements = (length, item) => (level) => {
      const items = [];
      for (let i = 0; i < Math.min(length, ctx.maxArrayLength); i++) items.push(item(i, level));
      if (length > ctx.maxArrayLength) items.push(`... ${plural(length - ctx.maxArrayLength, "more item")}`);
      return items;
    };
    if (Array.isArray(value)) {
      const length = value.length;
      const open = name !== "Array" || tag !== "" ? `${label(name, tag, "Array", `(${length})`)} [` : "[";
      keys = withoutIndices(keys, length);
      if (length === 0 && keys.length === 0) return `${open}]`;
      return { open, close: "]", keys, arrayLike: true, items: (level) => arrayItems(value, ctx, level) };
    }
    if (isSet(value) || isMap(value)) {
      const map = isMap(value);
      const size = (map ? mapSize : setSize).call(value);
      const open = `${label(name, tag, map ? "Map" : "Set", `(${size})`)} {`;
      if (size === 0 && keys.length === 0) return `${open}}`;
      let entries; // read when shown, not past the depth limit
      const at = (i) => (entries ??= [...(map ? Map.prototype.entries : Set.prototype.values).call(value)])[i];
      const entry = map
        ? (i, level) => ({ left: describe(at(i)[0], ctx, level), sep: " => ", right: describe(at(i)[1], ctx, level) })
        : (i, level) => describe(at(i), ctx, level);
      return { open, keys, items: elements(size, entry) };
    }
    if (isTypedArray(value)) {
      const length = typedArrayLength.call(value);
      const open = `${label(name, tag, typedArrayName.call(value), `(${length})`)} [`;
      keys = withoutIndices(keys, length);
      if (length === 0 && keys.length === 0) return `${open}]`;
      const item = (i) => (typeof value[i] === "bigint" ? `${value[i]}n` : numberText(value[i]));
      return { open, close: "]", keys, arrayLike: true, items: elements(length, item) };
    }
    const plain = (base) => ({ open: "{", keys, base });
    if (typeof value === "function") {
      if (!ctx.showHidden) keys = keys.filter((k) => k !== "prototype");
      return keys.length === 0 ? functionText(value, name, tag) : plain(functionText(value, name, tag));
    }
    if (isRegExp(value)) {
      const text = RegExp.prototype.toString.call(value);
      const base = name === "RegExp" && tag === "" ? text : `${label(name, tag, "RegExp")} ${text}`;
      keys = keys.filter((k) => k !== "lastIndex");
      return keys.length === 0 || level > ctx.depth ? base : plain(base);
    }
    if (isDate(value)) {
      const time = Date.prototype.getTime.call(value);
      const text = Number.isNaN(time) ? "Invalid Date" : Date.prototype.toISOString.call(value);
      const base = name === "Date" && tag === "" ? text : `${label(name, tag, "Date")} ${text}`;
      return keys.length === 0 ? base : plain(base);
    }
    if (isError(value)) {
      const text = errorText(value, name, keys);
      return keys.length === 0 ? { block: text } : plain(text);
    }
    const box = typeof value === "object" ? boxes.find(([, valueOf]) => accepts(valueOf)(value)) : undefined;
    if (box !== undefined) {
      const [type, valueOf] = box;
      const inner = valueOf.call(value);
      const kind = type === name ? type : `${type} (${name === null ? "null prototype" : name})`;
      const shown = typeof inner === "string" ? quote(inner) : describe(inner, ctx, level);
      let base = `[${kind}: ${shown}]`;
      if (tag !== "" && tag !== name) base += ` [${tag}]`;
      if (type === "String") keys = withoutIndices(keys, inner.length);
      return keys.length === 0 ? base : plain(base);
    }
    const open = (fallback) => `${label(name, tag, fallback)} {`;
    if (isArrayBuffer(value) || isSharedArrayBuffer(value)) {
      const type = isArrayBuffer(value) ? "ArrayBuffer" : "SharedArrayBuffer";
      return { open: open(type), keys, hidden: ["byteLength"], items: () => [bufferBytes(value, ctx)] };
    }
    if (isDataView(value)) return { open: open("DataView"), keys, hidden: ["byteLength", "byteOffset", "buffer"] };
    if (isPromise(value)) {
      const [state, result] = natives.promiseState(value);
      const settled = (level) => {
        const shown = describe(result, ctx, level);
        return state === 2 ? { left: "<rejected>", sep: " ", right: shown } : shown;
      };
      return { open: open("Promise"), keys, items: (level) => [state === 0 ? "<pending>" : settled(level)] };
    }
    if (isWeakMap(value) || isWeakSet(value)) {
      return { open: open(isWeakMap(value) ? "WeakMap" : "WeakSet"), keys, items: () => ["<items unknown>"] };
    }
    if (name === "Object" && isArguments(value)) {
      return keys.length === 0 ? "[Arguments] {}" : { open: "[Arguments] {", keys };
    }
    const head = name === "Object" && tag === "" ? "{" : open("Object");
    return keys.length === 0 ? `${head}}` : { open: head, keys };
  }

  // The elements of an array, a run of holes as one `<n empty items>`.
  function arrayItems(array, ctx, level) {
    const length = array.length;
    const items = [];
    let present; // the own indices, looked up at the first hole
    let next = 0;
    let i = 0;
    while (i < length && items.length < ctx.maxArrayLength) {
      if (hasOwn(array, i)) {
        items.push(slot(array, i, ctx, level));
        i++;
        continue;
      }
      present ??= Object.keys(array).filter(isIndex).map(Number);
      while (next < present.length && present[next] <= i) next++;
      const end = next < present.length ? Math.min(present[next], length) : length;
      items.push(`<${plural(end - i, "empty item")}>`);
      i = end;
    }
    if (i < length) items.push(`... ${plural(length - i, "more item")}`);
    return items;
  }

  function bufferBytes(buffer, ctx) {
    let bytes;
    try {
      bytes = new Uint8Array(buffer);
    } catch {
      return "(detached)";
    }
    const shown = Math.min(bytes.length, ctx.maxArrayLength);
    const hex = Array.from(bytes.subarray(0, shown), (b) => b.toString(16).padStart(2, "0")).join(" ");
    const more = bytes.length > shown ? ` ... ${plural(bytes.length - shown, "more byte")}` : "";
    return `[Uint8Contents]: <${hex}${more}>`;
  }

  // `key: value`, with the key as Node writes it: bare if it is an identifier, quoted if
  // not, in brackets if it is a symbol or not enumerable.
  function property(obj, key, ctx, level, desc = Object.getOwnPropertyDescriptor(obj, key)) {
    desc ??= { value: obj[key], enumerable: true };
    const right = slot(obj, key, ctx, level, desc);
    let left;
    if (typeof key === "symbol") left = `[${String(key).replace(unsafe, escapeChar)}]`;
    else if (key === "__proto__") left = "['__proto__']";
    else {
      left = /^[a-zA-Z_][a-zA-Z_0-9]*$/.test(key) ? `${key}` : quote(`${key}`);
      if (desc.enumerable === false) left = `[${left}]`;
    }
    return { left, sep: ": ", right };
  }

  // A property's value; an accessor shows as what it has, `[Getter]`, `[Setter]` or both.
  function slot(obj, key, ctx, level, desc = Object.getOwnPropertyDescriptor(obj, key)) {
    if (desc === undefined || desc.value !== undefined) return describe(desc ? desc.value : obj[key], ctx, level);
    if (desc.get !== undefined) return desc.set !== undefined ? "[Getter/Setter]" : "[Getter]";
    return desc.set !== undefined ? "[Setter]" : "undefined";
  }

  function ownKeys(value, showHidden) {
    const names = showHidden ? Object.getOwnPropertyNames(value) : Object.keys(value);
    const symbols = Object.getOwnPropertySymbols(value).filter((s) => showHidden || isEnumerable(value, s));
    return names.concat(symbols);
  }

  const isIndex = (key) => typeof key === "string" && /^(0|[1-9][0-9]*)$/.test(key) && Number(key) < 4294967295;
  // Own keys list the indices first, so the others follow the last index.
  function withoutIndices(keys, length) {
    let start = Math.min(length, keys.length);
    while (start > 0 && !isIndex(keys[start - 1])) start--;
    return keys.slice(start).filter((k) => !isIndex(k));
  }

  // The name of the nearest constructor on the prototype chain the object is an instance
  // of (`Foo` for `new Foo()`), or null for an object without a prototype.
  function constructorName(obj) {
    if (Object.getPrototypeOf(obj) === null) return null;
    for (let o = obj; o !== null; o = Object.getPrototypeOf(o)) {
      let ctor;
      try {
        ctor = Object.getOwnPropertyDescriptor(o, "constructor")?.value;
        if (typeof ctor === "function" && ctor.name !== "" && obj instanceof ctor) return String(ctor.name);
      } catch {}
    }
    return "Object";
  }

  function functionText(fn, name, tag) {
    const own = typeof fn.name === "string" ? fn.name : "";
    const suffix = tag !== "" && tag !== name ? ` [${tag}]` : "";
    // Boa prints a class's source as native code; unlike a function's, a class's
    // `prototype` is read-only, and built-in constructors are globals.
    const prototype = Object.getOwnPropertyDescriptor(fn, "prototype");
    if (
      prototype !== undefined &&
      prototype.writable === false &&
      Function.prototype.toString.call(fn).includes("[native code]") &&
      !(own !== "" && G[own] === fn)
    ) {
      const parent = Object.getPrototypeOf(fn);
      const extend =
        typeof parent === "function" && parent !== Function.prototype ? ` extends ${parent.name || "(anonymous)"}` : "";
      const kind = name !== "Function" && name !== null ? ` [${name}]` : "";
      return `[class ${own || "(anonymous)"}${extend}${kind}${suffix}]`;
    }
    const type = functionKinds.get(Object.getPrototypeOf(fn)) || "Function";
    let text = `[${type}${name === null ? " (null prototype)" : ""}${own === "" ? " (anonymous)" : `: ${own}`}]`;
    if (name !== null && name !== type && name !== "Function") text += ` ${name}`;
    return text + suffix;
  }

  // ---------------------------------------------------------------------------------------
  // Errors. Boa's `stack` holds only the frames, so an error prints as `toString()` and
  // its frames (the prelude's left out); one without frames as `[Error: message]`.
  function errorString(err) {
    try {
      return Error.prototype.toString.call(err);
    } catch {
      return "Error";
    }
  }

  // The frames of an error's stack, without the prelude's; null for a stack the program
  // set itself, starting with its own first line.
  function stackFrames(err) {
    let stack;
    try {
      stack = err.stack;
    } catch {}
    if (typeof stack !== "string") return [];
    const lines = stack.split("\n").filter((line) => line.trim() !== "");
    if (lines.length !== 0 && !/^\s+at /.test(lines[0])) return null;
    return lines.filter((line) => !line.includes(PRELUDE));
  }

  // The text an error prints as. Takes out of `keys` what that text shows already, and adds
  // `cause` and `errors`, which Node shows even when they are not enumerable.
  function errorText(err, name, keys) {
    const frames = stackFrames(err);
    let text;
    if (frames === null) {
      text = String(err.stack).trimEnd();
    } else {
      text = errorString(err);
      // `class MyError extends Error` without a `name` of its own: `MyError [Error]: …`.
      const errName = err.name === undefined ? "Error" : String(err.name);
      if (name !== null && name !== errName && name !== "Error" && !text.startsWith(name) && text.startsWith(errName)) {
        text = `${name} [${errName}]${text.slice(errName.length)}`;
      }
      text = frames.length === 0 ? `[${text}]` : `${text}\n${frames.join("\n")}`;
    }
    for (const key of ["name", "message", "stack"]) {
      const index = keys.indexOf(key);
      if (index !== -1 && typeof err[key] === "string" && text.includes(err[key])) keys.splice(index, 1);
    }
    if ("cause" in err && !keys.includes("cause")) keys.push("cause");
    if (Array.isArray(err.errors) && !keys.includes("errors")) keys.push("errors");
    return text;
  }

  // ---------------------------------------------------------------------------------------
  // Laying out: a node, at an indentation, becomes text. A list's items are laid out first
  // (at two more spaces), and their widths decide how the list is written.
  function lay(node, indent, ctx) {
    if (typeof node === "string") return node;
    if (node.string !== undefined) return stringText(node.string, indent, ctx);
    if (node.block !== undefined) return node.block.replaceAll("\n", `\n${spaces(indent)}`);
    if (node.sep !== undefined) return lay(node.left, indent, ctx) + node.sep + lay(node.right, indent, ctx);
    if (ctx.compact === true) return layLegacy(node, indent, ctx);

    const parts = node.items.map((item) => lay(item, indent + 2, ctx));
    if (ctx.sorted && !node.arrayLike) parts.sort(typeof ctx.sorted === "function" ? ctx.sorted : undefined);
    const base = node.base.replaceAll("\n", `\n${spaces(indent)}`);
    const head = base === "" ? node.open : `${base} ${node.open}`;
    let lines = parts;
    if (typeof ctx.compact === "number" && ctx.compact >= 1) {
      if (node.arrayLike && parts.length > 6) lines = columns(parts, node.numeric, indent, ctx) || parts;
      // One line if it fits (Node counts 10 more columns than the line takes) and the
      // innermost list opened last is less than `compact` levels down.
      const length = indent + base.length + node.open.length + 10 + parts.reduce((sum, p) => sum + p.length + 2, 0);
      const fits = length <= ctx.breakLength && !base.includes("\n") && !parts.some((p) => p.includes("\n"));
      if (lines === parts && node.below < ctx.compact && fits) return `${head} ${parts.join(", ")} ${node.close}`;
    }
    const newline = `\n${spaces(indent)}`;
    return `${head}${newline}  ${lines.join(`,${newline}  `)}${newline}${node.close}`;
  }

  // A long string with line breaks is written a line a piece, joined by `+`.
  function stringText(str, indent, ctx) {
    let more = "";
    if (str.length > ctx.maxStringLength) {
      more = `... ${plural(str.length - ctx.maxStringLength, "more character")}`;
      str = str.slice(0, Math.max(0, ctx.maxStringLength));
    }
    if (ctx.compact !== true && str.length > 16 && str.length > ctx.breakLength - indent - 4) {
      return str.split(/(?<=\n)/).map(quote).join(` +\n${spaces(indent + 2)}`) + more;
    }
    return quote(str) + more;
  }

  // More than six short items of an array are written in columns, as many as Node would
  // choose: about sqrt(2.5 × item width × items) / item width, at most 15 and 4 × compact,
  // and no more than fit in the break length. Undefined when the items are too wide.
  function columns(parts, numeric, indent, ctx) {
    // A `... more items` line stays on its own.
    const count = parts.length > ctx.maxArrayLength ? parts.length - 1 : parts.length;
    const widths = parts.slice(0, count).map(width);
    const cell = Math.max(...widths) + 2; // with its ", "
    const total = widths.reduce((sum, w) => sum + w + 2, 0);
    if (cell * 3 + indent >= ctx.breakLength || (total / cell <= 5 && cell > 8)) return undefined;
    const unit = Math.max(cell - 3 - Math.sqrt(cell - total / parts.length), 1);
    const across = Math.min(
      Math.round(Math.sqrt(2.5 * unit * count) / unit),
      Math.floor((ctx.breakLength - indent) / cell),
      ctx.compact * 4,
      15,
    );
    if (across <= 1) return undefined;
    const columnWidth = [];
    for (let c = 0; c < across; c++) {
      let w = 0;
      for (let i = c; i < count; i += across) w = Math.max(w, widths[i]);
      columnWidth.push(w + 2);
    }
    const lines = [];
    for (let start = 0; start < count; start += across) {
      const end = Math.min(start + across, count);
      let line = "";
      for (let i = start; i < end; i++) {
        const last = i === end - 1;
        const text = last ? parts[i] : `${parts[i]}, `;
        const pad = spaces(columnWidth[i - start] - (last ? 2 : 0) - width(text));
        line += numeric ? pad + text : last ? text : text + pad;
      }
      lines.push(line);
    }
    if (count < parts.length) lines.push(parts[count]);
    return lines;
  }

  // `compact: true`, Node's older layout: everything on one line if it fits, else each
  // entry on its own line with the closing bracket after the last.
  function layLegacy(node, indent, ctx) {
    const step = node.arrayLike ? 2 : 3;
    const parts = node.items.map((item) => {
      if (item.sep !== ": " || node.arrayLike) return lay(item, indent + step, ctx);
      const value = lay(item.right, indent + step, ctx);
      return `${item.left}:${value.length > ctx.breakLength ? `\n${spaces(indent + step)}` : " "}${value}`;
    });
    if (ctx.sorted && !node.arrayLike) parts.sort(typeof ctx.sorted === "function" ? ctx.sorted : undefined);
    const base = node.base ? ` ${node.base}` : "";
    const total = parts.reduce((sum, p) => sum + p.length + 1, 0);
    if (total <= ctx.breakLength && !base.includes("\n")) {
      return `${node.open}${base} ${parts.join(", ")} ${node.close}`;
    }
    const start = base === "" && node.open.length === 1 ? " " : `${base}\n${spaces(indent + 2)}`;
    return `${node.open}${start}${parts.join(`,\n${spaces(indent + 2)}`)} ${node.close}`;
  }

  // ---------------------------------------------------------------------------------------
  // util.format: `%s %d %i %f %j %o %O %c` each take the next argument, `%%` is a percent
  // sign; the arguments left over follow, separated by spaces (strings as they are).
  function format(...args) {
    let next = 0;
    let text = "";
    if (typeof args[0] === "string") {
      next = 1;
      text =
        args.length === 1
          ? args[0]
          : args[0].replace(/%([sdifjoOc%])/g, (spec, letter) => {
              if (letter === "%") return "%";
              return next < args.length ? formatOne(letter, args[next++]) : spec;
            });
    }
    for (; next < args.length; next++) {
      const arg = args[next];
      text += `${next === 0 ? "" : " "}${typeof arg === "string" ? arg : inspect(arg)}`;
    }
    return text;
  }

  function formatOne(letter, arg) {
    const asNumber = (convert) =>
      typeof arg === "bigint" ? `${arg}n` : typeof arg === "symbol" ? "NaN" : numberText(convert(arg));
    switch (letter) {
      case "s":
        if (typeof arg === "number" || typeof arg === "bigint") return asNumber(Number);
        if (arg !== null && typeof arg === "object" && !printsItself(arg)) return inspect(arg, { depth: 0 });
        return String(arg);
      case "d":
        return asNumber(Number);
      case "i":
        return asNumber(Number.parseInt);
      case "f":
        return typeof arg === "symbol" ? "NaN" : numberText(Number.parseFloat(arg));
      case "j":
        try {
          return JSON.stringify(arg);
        } catch {
          return "[Circular]";
        }
      case "o":
        return inspect(arg, { showHidden: true, depth: 4 });
      case "O":
        return inspect(arg);
      default: // %c: CSS, which a terminal has no use for
        return "";
    }
  }

  // Whether `%s` should print an object with its own `toString` rather than inspect it.
  const builtIns = [Object, Error, Array, Function, Date, RegExp, Number, String, Boolean, BigInt, Symbol];
  const builtInToStrings = new Set(builtIns.map((C) => C.prototype.toString));
  function printsItself(obj) {
    for (let o = obj; o !== null; o = Object.getPrototypeOf(o)) {
      const desc = Object.getOwnPropertyDescriptor(o, "toString");
      if (desc !== undefined) return !builtInToStrings.has(desc.value);
    }
    return false;
  }

  // ---------------------------------------------------------------------------------------
  // console.table: a row per entry of `data`, a column per key of the rows (or per name in
  // `properties`), and `Values` for the rest.
  function renderTable(data, properties) {
    const cell = (v) => {
      const wide = v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length > 2;
      return inspect(v, { depth: wide ? -1 : 0, maxArrayLength: 3, breakLength: Infinity });
    };
    const map = isMap(data);
    const set = isSet(data);
    const entries = map
      ? Array.from(Map.prototype.entries.call(data), ([k, v], i) => [String(i), v, cell(k)])
      : set
        ? Array.from(Set.prototype.values.call(data), (v, i) => [String(i), v])
        : Object.keys(data).map((k) => [k, data[k]]);
    const columns = new Map();
    for (const key of properties || []) columns.set(key, []);
    const values = [];
    entries.forEach(([, row], r) => {
      // A map's or set's entries are values whole; a primitive is one unless columns are named.
      if (map || set || row === null || typeof row !== "object") {
        if (!properties) values[r] = cell(row);
        return;
      }
      for (const key of properties || Object.keys(row)) {
        if (!columns.has(key)) columns.set(key, []);
        if (hasOwn(row, key)) columns.get(key)[r] = cell(row[key]);
      }
    });
    const head = [map || set ? "(iteration index)" : "(index)"];
    const body = [entries.map(([index]) => index)];
    if (map) {
      head.push("Key");
      body.push(entries.map((e) => e[2]));
    }
    for (const [key, column] of columns) {
      head.push(String(key));
      body.push(column);
    }
    if (values.length !== 0) {
      head.push("Values");
      body.push(values);
    }
    const rows = entries.map((_, r) => body.map((column) => column[r] ?? ""));
    const widths = head.map((h, c) => Math.max(width(h), ...rows.map((row) => width(row[c]))) + 2);
    const rule = (left, middle, right) => left + widths.map((w) => "─".repeat(w)).join(middle) + right;
    const line = (row) => `│${row.map((text, c) => ` ${text}${spaces(widths[c] - 1 - width(text))}`).join("│")}│`;
    return [rule("┌", "┬", "┐"), line(head), rule("├", "┼", "┤"), ...rows.map(line), rule("└", "┴", "┘")].join("\n");
  }

  // What standard error shows for an exception nobody caught.
  function uncaught(value, inPromise) {
    let text = inspect(value);
    // An error without a stack (a SyntaxError) needs no brackets here.
    if (value !== null && typeof value === "object" && isError(value)) {
      const bracketed = `[${errorString(value)}]`;
      if (text.startsWith(bracketed)) text = text.slice(1, bracketed.length - 1) + text.slice(bracketed.length);
    }
    return `Uncaught ${inPromise ? "(in promise) " : ""}${text}\n`;
  }

  return {
    inspect,
    format,
    renderTable,
    stackFrames,
    uncaught,
    types: { isPromise, isDate, isRegExp, isMap, isSet, isTypedArray, isArrayBuffer, isNativeError: isError },
  };
});
