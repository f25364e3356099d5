// runbox's `util.inspect` and `util.format` (after Node.js's lib/internal/util/inspect.js),
// and what else needs them: `console.table`, the stack frames of errors. `prelude.js`
// loads this on first use (a program printing only strings and numbers never does), so
// that a run does not pay for parsing it.
//
// Called with the natives and the prelude's shared helpers; returns its functions.
(function (natives, shared) {
  "use strict";

  const G = globalThis;
  const { PRELUDE } = shared;

  // ---------------------------------------------------------------------------------------
  // Type checks by brand (they hold for objects from any realm and ignore a faked
  // Symbol.toStringTag).
  const brand = (fn) => (value) => {
    try {
      fn(value);
      return true;
    } catch {
      return false;
    }
  };
  const getter = (proto, name) => Object.getOwnPropertyDescriptor(proto, name).get;
  const mapSize = getter(Map.prototype, "size");
  const setSize = getter(Set.prototype, "size");
  const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype);
  const typedArrayTag = getter(TypedArrayPrototype, Symbol.toStringTag);
  const typedArrayLength = getter(TypedArrayPrototype, "length");
  const arrayBufferLength = getter(ArrayBuffer.prototype, "byteLength");
  const sharedBufferLength =
    typeof SharedArrayBuffer === "function" ? getter(SharedArrayBuffer.prototype, "byteLength") : null;
  const dataViewLength = getter(DataView.prototype, "byteLength");
  const regExpSource = getter(RegExp.prototype, "source");
  const objectToString = Object.prototype.toString;
  const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);

  const isMap = brand((v) => mapSize.call(v));
  const isSet = brand((v) => setSize.call(v));
  const isTypedArray = (v) => typedArrayTag.call(v) !== undefined;
  const isArrayBuffer = brand((v) => arrayBufferLength.call(v));
  const isSharedArrayBuffer = sharedBufferLength ? brand((v) => sharedBufferLength.call(v)) : () => false;
  const isDataView = brand((v) => dataViewLength.call(v));
  const isDate = brand((v) => Date.prototype.getTime.call(v));
  const isRegExp = (v) => v !== RegExp.prototype && brand((x) => regExpSource.call(x))(v);
  const isWeakMap = brand((v) => WeakMap.prototype.has.call(v, {}));
  const isWeakSet = brand((v) => WeakSet.prototype.has.call(v, {}));
  const isPromise = (v) => natives.promiseState(v) !== undefined;
  const isError = (v) => objectToString.call(v) === "[object Error]" || v instanceof Error;
  const isArguments = (v) => objectToString.call(v) === "[object Arguments]";
  const boxed = [
    ["Number", brand((v) => Number.prototype.valueOf.call(v)), (v) => Number.prototype.valueOf.call(v)],
    ["String", brand((v) => String.prototype.valueOf.call(v)), (v) => String.prototype.valueOf.call(v)],
    ["Boolean", brand((v) => Boolean.prototype.valueOf.call(v)), (v) => Boolean.prototype.valueOf.call(v)],
    ["BigInt", brand((v) => BigInt.prototype.valueOf.call(v)), (v) => BigInt.prototype.valueOf.call(v)],
    ["Symbol", brand((v) => Symbol.prototype.valueOf.call(v)), (v) => Symbol.prototype.valueOf.call(v)],
  ];
  const GeneratorFunction = Object.getPrototypeOf(function* () {});
  const AsyncFunction = Object.getPrototypeOf(async function () {});
  const AsyncGeneratorFunction = Object.getPrototypeOf(async function* () {});

  // ---------------------------------------------------------------------------------------
  // util.inspect, after Node.js's (lib/internal/util/inspect.js) with its defaults: depth 2,
  // breakLength 80, compact 3, at most 100 array items.
  const customInspect = Symbol.for("nodejs.util.inspect.custom");
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
  const kObjectType = 0;
  const kArrayExtrasType = 1;

  function inspect(value, options) {
    const ctx = {
      ...defaults,
      budget: {},
      indentationLvl: 0,
      seen: [],
      currentDepth: 0,
      circular: undefined,
    };
    if (options !== null && typeof options === "object") {
      for (const key of Object.keys(defaults)) if (options[key] !== undefined) ctx[key] = options[key];
    }
    if (ctx.depth === null) ctx.depth = Infinity;
    if (ctx.maxArrayLength === null) ctx.maxArrayLength = Infinity;
    if (ctx.maxStringLength === null) ctx.maxStringLength = Infinity;
    return formatValue(ctx, value, 0);
  }
  inspect.custom = customInspect;
  inspect.defaultOptions = defaults;

  const meta = [];
  for (let i = 0; i < 0x20; i++) meta[i] = "\\x" + i.toString(16).toUpperCase().padStart(2, "0");
  meta[8] = "\\b";
  meta[9] = "\\t";
  meta[10] = "\\n";
  meta[12] = "\\f";
  meta[13] = "\\r";
  meta[39] = "\\'";
  meta[92] = "\\\\";
  for (let i = 0x7f; i <= 0x9f; i++) meta[i] = "\\x" + i.toString(16).toUpperCase();

  function strEscape(str) {
    let quote = "'";
    if (str.includes("'")) {
      if (!str.includes('"')) quote = '"';
      else if (!str.includes("`") && !str.includes("${")) quote = "`";
    }
    let result = "";
    let last = 0;
    for (let i = 0; i < str.length; i++) {
      const code = str.charCodeAt(i);
      const escaped =
        code === 39 ? (quote === "'" ? "\\'" : undefined) : code < 0xa0 ? meta[code] : undefined;
      if (escaped !== undefined) {
        result += str.slice(last, i) + escaped;
        last = i + 1;
      } else if (code >= 0xd800 && code <= 0xdfff) {
        const next = str.charCodeAt(i + 1);
        if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          i++;
        } else {
          result += str.slice(last, i) + "\\u" + code.toString(16).toUpperCase();
          last = i + 1;
        }
      }
    }
    return quote + result + str.slice(last) + quote;
  }

  function formatNumber(n) {
    return Object.is(n, -0) ? "-0" : `${n}`;
  }

  function formatPrimitive(ctx, value) {
    switch (typeof value) {
      case "string": {
        let trailer = "";
        if (value.length > ctx.maxStringLength) {
          const remaining = value.length - ctx.maxStringLength;
          value = value.slice(0, ctx.maxStringLength);
          trailer = `... ${remaining} more character${remaining > 1 ? "s" : ""}`;
        }
        if (ctx.compact !== true && value.length > 16 && value.length > ctx.breakLength - ctx.indentationLvl - 4) {
          return (
            value
              .split(/(?<=\n)/)
              .map((line) => strEscape(line))
              .join(` +\n${" ".repeat(ctx.indentationLvl + 2)}`) + trailer
          );
        }
        return strEscape(value) + trailer;
      }
      case "number":
        return formatNumber(value);
      case "bigint":
        return `${value}n`;
      case "symbol":
        return symbolToString(value);
      default:
        return String(value);
    }
  }

  function symbolToString(symbol) {
    const description = symbol.description;
    return description === undefined ? "Symbol()" : `Symbol(${description})`;
  }

  function formatValue(ctx, value, recurseTimes, typedArray) {
    if (value === null) return "null";
    if (typeof value !== "object" && typeof value !== "function") return formatPrimitive(ctx, value);
    if (ctx.customInspect) {
      let custom;
      try {
        custom = value[customInspect];
      } catch {}
      if (typeof custom === "function" && custom !== inspect) {
        const depth = ctx.depth === Infinity ? null : ctx.depth - recurseTimes;
        const result = custom.call(value, depth, { ...ctx, depth }, inspect);
        if (result !== value) {
          if (typeof result !== "string") return formatValue(ctx, result, recurseTimes);
          return result.replaceAll("\n", `\n${" ".repeat(ctx.indentationLvl)}`);
        }
      }
    }
    if (ctx.seen.includes(value)) {
      let index = 1;
      if (ctx.circular === undefined) {
        ctx.circular = new Map([[value, index]]);
      } else {
        index = ctx.circular.get(value);
        if (index === undefined) {
          index = ctx.circular.size + 1;
          ctx.circular.set(value, index);
        }
      }
      return `[Circular *${index}]`;
    }
    return formatRaw(ctx, value, recurseTimes, typedArray);
  }

  function getConstructorName(obj) {
    let proto = obj;
    let first = true;
    while (proto !== null && proto !== undefined) {
      let descriptor;
      try {
        descriptor = Object.getOwnPropertyDescriptor(proto, "constructor");
      } catch {}
      if (
        descriptor !== undefined &&
        typeof descriptor.value === "function" &&
        descriptor.value.name !== "" &&
        isInstanceof(obj, descriptor.value)
      ) {
        return String(descriptor.value.name);
      }
      proto = Object.getPrototypeOf(proto);
      if (first && proto === null) return null;
      first = false;
    }
    return "Object";
  }

  function isInstanceof(object, constructor) {
    try {
      return object instanceof constructor;
    } catch {
      return false;
    }
  }

  function getPrefix(constructor, tag, fallback, size = "") {
    if (constructor === null) {
      if (tag !== "" && fallback !== tag) return `[${fallback}${size}: null prototype] [${tag}] `;
      return `[${fallback}${size}: null prototype] `;
    }
    if (tag !== "" && constructor !== tag) return `${constructor}${size} [${tag}] `;
    return `${constructor}${size} `;
  }

  const isIndex = (key) => /^(0|[1-9][0-9]*)$/.test(key) && Number(key) < 4294967295;

  function getKeys(value, showHidden) {
    let keys;
    const symbols = Object.getOwnPropertySymbols(value);
    if (showHidden) {
      keys = Object.getOwnPropertyNames(value);
      if (symbols.length !== 0) keys.push(...symbols);
    } else {
      keys = Object.keys(value);
      for (const symbol of symbols) {
        if (Object.prototype.propertyIsEnumerable.call(value, symbol)) keys.push(symbol);
      }
    }
    return keys;
  }

  function getFunctionBase(value, constructor, tag) {
    const prototype = Object.getOwnPropertyDescriptor(value, "prototype");
    const source = Function.prototype.toString.call(value);
    const name = typeof value.name === "string" ? value.name : "";
    // Boa prints classes as native code; a class's `prototype` is read-only, a function's
    // is not, and built-in constructors are globals.
    if (
      prototype !== undefined &&
      prototype.writable === false &&
      source.includes("[native code]") &&
      !(name !== "" && G[name] === value)
    ) {
      let base = `[class ${name === "" ? "(anonymous)" : name}`;
      const parent = Object.getPrototypeOf(value);
      if (parent !== Function.prototype && parent !== null && typeof parent === "function") {
        base += ` extends ${parent.name || "(anonymous)"}`;
      }
      if (constructor !== "Function" && constructor !== null) base += ` [${constructor}]`;
      if (tag !== "" && constructor !== tag) base += ` [${tag}]`;
      return base + "]";
    }
    let type = "Function";
    const proto = Object.getPrototypeOf(value);
    if (proto === GeneratorFunction) type = "GeneratorFunction";
    else if (proto === AsyncFunction) type = "AsyncFunction";
    else if (proto === AsyncGeneratorFunction) type = "AsyncGeneratorFunction";
    let base = `[${type}`;
    if (constructor === null) base += " (null prototype)";
    base += name === "" ? " (anonymous)" : `: ${name}`;
    base += "]";
    if (constructor !== type && constructor !== null && constructor !== "Function") base += ` ${constructor}`;
    if (tag !== "" && constructor !== tag) base += ` [${tag}]`;
    return base;
  }

  function errorToString(err) {
    try {
      return Error.prototype.toString.call(err);
    } catch {
      return "Error";
    }
  }

  // The frames of Boa's `stack` (it has no header line, unlike V8's), without the prelude's.
  function stackFrames(err) {
    let stack;
    try {
      stack = err.stack;
    } catch {}
    if (typeof stack !== "string") return [];
    const lines = stack.split("\n").filter((line) => line.trim() !== "");
    // A stack set by the program itself that already starts with its message.
    if (lines.length !== 0 && !/^\s+at /.test(lines[0])) return null;
    return lines.filter((line) => !line.includes(PRELUDE));
  }

  function formatError(err, constructor, tag, ctx, keys) {
    let stack;
    const frames = stackFrames(err);
    if (frames === null) {
      stack = String(err.stack).trimEnd();
    } else {
      stack = errorToString(err);
      // `class MyError extends Error` without its own `name`: show the class too.
      const name = err.name === undefined ? "Error" : String(err.name);
      if (constructor !== null && constructor !== name && !stack.startsWith(constructor) && constructor !== "Error" && stack.startsWith(name)) {
        stack = `${constructor} [${name}]${stack.slice(name.length)}`;
      }
      stack = frames.length === 0 ? `[${stack}]` : `${stack}\n${frames.join("\n")}`;
    }
    for (const key of ["name", "message", "stack"]) {
      const index = keys.indexOf(key);
      if (index !== -1) {
        const v = err[key];
        if (typeof v === "string" && stack.includes(v)) keys.splice(index, 1);
      }
    }
    if ("cause" in err && !keys.includes("cause")) keys.push("cause");
    if (Array.isArray(err.errors) && !keys.includes("errors")) keys.push("errors");
    if (ctx.indentationLvl !== 0) stack = stack.replaceAll("\n", `\n${" ".repeat(ctx.indentationLvl)}`);
    return stack;
  }

  function formatRaw(ctx, value, recurseTimes, typedArray) {
    let keys;
    const constructor = getConstructorName(value);
    let tag;
    try {
      tag = value[Symbol.toStringTag];
    } catch {}
    if (typeof tag !== "string" || (tag !== "" && Object.prototype.propertyIsEnumerable.call(value, Symbol.toStringTag))) {
      tag = "";
    }
    let base = "";
    let formatter = () => [];
    let braces;
    let noIterator = true;
    let extrasType = kObjectType;
    const filterKeys = (v) => getKeys(v, ctx.showHidden);

    if (Symbol.iterator in value || constructor === null) {
      noIterator = false;
      if (Array.isArray(value)) {
        const prefix = constructor !== "Array" || tag !== "" ? getPrefix(constructor, tag, "Array", `(${value.length})`) : "";
        keys = filterKeys(value).filter((k) => typeof k !== "string" || !isIndex(k));
        if (ctx.showHidden) keys = keys.filter((k) => k !== "length");
        braces = [`${prefix}[`, "]"];
        if (value.length === 0 && keys.length === 0) return `${braces[0]}]`;
        extrasType = kArrayExtrasType;
        formatter = formatArray;
      } else if (isSet(value)) {
        const size = setSize.call(value);
        const prefix = getPrefix(constructor, tag, "Set", `(${size})`);
        keys = filterKeys(value);
        formatter = formatSet;
        if (size === 0 && keys.length === 0) return `${prefix}{}`;
        braces = [`${prefix}{`, "}"];
      } else if (isMap(value)) {
        const size = mapSize.call(value);
        const prefix = getPrefix(constructor, tag, "Map", `(${size})`);
        keys = filterKeys(value);
        formatter = formatMap;
        if (size === 0 && keys.length === 0) return `${prefix}{}`;
        braces = [`${prefix}{`, "}"];
      } else if (isTypedArray(value)) {
        keys = filterKeys(value).filter((k) => typeof k !== "string" || !isIndex(k));
        const size = typedArrayLength.call(value);
        const prefix = getPrefix(constructor, tag, typedArrayTag.call(value), `(${size})`);
        braces = [`${prefix}[`, "]"];
        if (size === 0 && keys.length === 0) return `${braces[0]}]`;
        formatter = (ctx, v) => formatTypedArray(ctx, v, size);
        extrasType = kArrayExtrasType;
      } else {
        noIterator = true;
      }
    }
    if (noIterator) {
      keys = filterKeys(value);
      braces = ["{", "}"];
      if (constructor === "Object") {
        if (isArguments(value)) braces[0] = "[Arguments] [";
        else if (tag !== "") braces[0] = `${getPrefix(constructor, tag, "Object")}{`;
        if (isArguments(value)) {
          braces[1] = "]";
          extrasType = kArrayExtrasType;
          keys = keys.filter((k) => typeof k !== "string" || !isIndex(k));
          formatter = formatArray;
          if (value.length === 0 && keys.length === 0) return "[Arguments] []";
        } else if (keys.length === 0) {
          return `${braces[0]}}`;
        }
      } else if (typeof value === "function") {
        base = getFunctionBase(value, constructor, tag);
        keys = keys.filter((k) => k !== "prototype");
        if (keys.length === 0) return base;
      } else if (isRegExp(value)) {
        base = RegExp.prototype.toString.call(value);
        const prefix = getPrefix(constructor, tag, "RegExp");
        if (prefix !== "RegExp ") base = `${prefix}${base}`;
        keys = keys.filter((k) => k !== "lastIndex");
        if (keys.length === 0 || recurseTimes > ctx.depth) return base;
      } else if (isDate(value)) {
        base = Number.isNaN(Date.prototype.getTime.call(value))
          ? Date.prototype.toString.call(value)
          : Date.prototype.toISOString.call(value);
        const prefix = getPrefix(constructor, tag, "Date");
        if (prefix !== "Date ") base = `${prefix}${base}`;
        if (keys.length === 0) return base;
      } else if (isError(value)) {
        base = formatError(value, constructor, tag, ctx, keys);
        if (keys.length === 0) return base;
      } else if (isArrayBuffer(value) || isSharedArrayBuffer(value)) {
        const type = isArrayBuffer(value) ? "ArrayBuffer" : "SharedArrayBuffer";
        const prefix = getPrefix(constructor, tag, type);
        if (typedArray === undefined) {
          formatter = formatArrayBuffer;
        } else if (keys.length === 0) {
          return prefix + `{ byteLength: ${formatNumber(value.byteLength)} }`;
        }
        braces[0] = `${prefix}{`;
        keys.unshift("byteLength");
      } else if (isDataView(value)) {
        braces[0] = `${getPrefix(constructor, tag, "DataView")}{`;
        keys.unshift("byteLength", "byteOffset", "buffer");
      } else if (isPromise(value)) {
        braces[0] = `${getPrefix(constructor, tag, "Promise")}{`;
        formatter = formatPromise;
      } else if (isWeakSet(value)) {
        braces[0] = `${getPrefix(constructor, tag, "WeakSet")}{`;
        formatter = () => ["<items unknown>"];
      } else if (isWeakMap(value)) {
        braces[0] = `${getPrefix(constructor, tag, "WeakMap")}{`;
        formatter = () => ["<items unknown>"];
      } else {
        const box = typeof value === "object" ? boxed.find(([, is]) => is(value)) : undefined;
        if (box !== undefined) {
          const [type, , unbox] = box;
          const primitive = unbox(value);
          let text = `[${type}`;
          if (type !== constructor) text += constructor === null ? " (null prototype)" : ` (${constructor})`;
          text += `: ${formatPrimitive({ ...defaults, compact: true, indentationLvl: 0 }, primitive)}]`;
          if (tag !== "" && tag !== constructor) text += ` [${tag}]`;
          if (type === "String") keys = keys.filter((k) => typeof k !== "string" || !isIndex(k));
          base = text;
          if (keys.length === 0) return base;
        } else {
          if (keys.length === 0) return `${getPrefix(constructor, tag, "Object")}{}`;
          braces[0] = `${getPrefix(constructor, tag, "Object")}{`;
        }
      }
    }

    if (recurseTimes > ctx.depth) {
      let name = getPrefix(constructor, tag, "Object").slice(0, -1);
      if (constructor !== null) name = `[${name}]`;
      return name;
    }
    recurseTimes += 1;
    ctx.seen.push(value);
    ctx.currentDepth = recurseTimes;
    let output;
    try {
      output = formatter(ctx, value, recurseTimes);
      for (const key of keys) output.push(formatProperty(ctx, value, recurseTimes, key, extrasType));
    } catch (err) {
      ctx.seen.pop();
      if (err instanceof RangeError || (err && err.name === "RuntimeLimitError")) {
        return `[${getPrefix(constructor, tag, "Object").slice(0, -1)}: Inspection interrupted prematurely. Maximum call stack size exceeded.]`;
      }
      throw err;
    }
    if (ctx.circular !== undefined) {
      const index = ctx.circular.get(value);
      if (index !== undefined) {
        const reference = `<ref *${index}>`;
        base = base === "" ? reference : `${reference} ${base}`;
      }
    }
    ctx.seen.pop();
    if (ctx.sorted) {
      const comparator = ctx.sorted === true ? undefined : ctx.sorted;
      if (extrasType === kObjectType) output.sort(comparator);
    }
    return reduceToSingleString(ctx, output, base, braces, extrasType, recurseTimes, value);
  }

  function formatProperty(ctx, value, recurseTimes, key, type) {
    let name;
    let str;
    let extra = " ";
    const desc = Object.getOwnPropertyDescriptor(value, key) || { value: value[key], enumerable: true };
    if (desc.value !== undefined) {
      const diff = ctx.compact !== true || type !== kObjectType ? 2 : 3;
      ctx.indentationLvl += diff;
      str = formatValue(ctx, desc.value, recurseTimes);
      if (diff === 3 && ctx.breakLength < str.length) extra = `\n${" ".repeat(ctx.indentationLvl)}`;
      ctx.indentationLvl -= diff;
    } else if (desc.get !== undefined) {
      str = desc.set !== undefined ? "[Getter/Setter]" : "[Getter]";
    } else if (desc.set !== undefined) {
      str = "[Setter]";
    } else {
      str = "undefined";
    }
    if (type === kArrayExtrasType) return str;
    if (typeof key === "symbol") name = `[${symbolToString(key).replace(/[\x00-\x1f\x27\x5c\x7f-\x9f]/g, (c) => meta[c.charCodeAt(0)])}]`;
    else if (key === "__proto__") name = "['__proto__']";
    else if (desc.enumerable === false) name = `[${/^[a-zA-Z_][a-zA-Z_0-9]*$/.test(key) ? key : strEscape(key)}]`;
    else if (/^[a-zA-Z_][a-zA-Z_0-9]*$/.test(key)) name = key;
    else name = strEscape(key);
    return `${name}:${extra}${str}`;
  }

  function remainingText(remaining) {
    return `... ${remaining} more item${remaining > 1 ? "s" : ""}`;
  }

  function formatArray(ctx, value, recurseTimes) {
    const length = value.length;
    const output = [];
    let i = 0;
    let shown = 0;
    while (i < length && shown < ctx.maxArrayLength) {
      if (!hasOwn(value, i)) {
        let holes = 0;
        while (i < length && !hasOwn(value, i)) {
          holes++;
          i++;
        }
        output.push(`<${holes} empty item${holes > 1 ? "s" : ""}>`);
      } else {
        output.push(formatProperty(ctx, value, recurseTimes, i, kArrayExtrasType));
        i++;
      }
      shown++;
    }
    const remaining = length - i;
    if (remaining > 0) output.push(remainingText(remaining));
    return output;
  }

  function formatTypedArray(ctx, value, length) {
    const max = Math.min(Math.max(0, ctx.maxArrayLength), length);
    const output = [];
    for (let i = 0; i < max; i++) {
      const element = value[i];
      output.push(typeof element === "bigint" ? `${element}n` : formatNumber(element));
    }
    if (length > max) output.push(remainingText(length - max));
    return output;
  }

  function formatArrayBuffer(ctx, value) {
    let bytes;
    try {
      bytes = new Uint8Array(value);
    } catch {
      return ["(detached)"];
    }
    const shown = Math.min(50, bytes.length);
    let hex = "";
    for (let i = 0; i < shown; i++) hex += (i ? " " : "") + bytes[i].toString(16).padStart(2, "0");
    const remaining = bytes.length - shown;
    if (remaining > 0) hex += ` ... ${remaining} more byte${remaining > 1 ? "s" : ""}`;
    return [`[Uint8Contents]: <${hex}>`];
  }

  function formatSet(ctx, value, recurseTimes) {
    const output = [];
    ctx.indentationLvl += 2;
    let shown = 0;
    const size = setSize.call(value);
    for (const v of Set.prototype.values.call(value)) {
      if (shown++ >= ctx.maxArrayLength) break;
      output.push(formatValue(ctx, v, recurseTimes));
    }
    if (size > ctx.maxArrayLength) output.push(remainingText(size - ctx.maxArrayLength));
    ctx.indentationLvl -= 2;
    return output;
  }

  function formatMap(ctx, value, recurseTimes) {
    const output = [];
    ctx.indentationLvl += 2;
    let shown = 0;
    const size = mapSize.call(value);
    for (const [k, v] of Map.prototype.entries.call(value)) {
      if (shown++ >= ctx.maxArrayLength) break;
      output.push(`${formatValue(ctx, k, recurseTimes)} => ${formatValue(ctx, v, recurseTimes)}`);
    }
    if (size > ctx.maxArrayLength) output.push(remainingText(size - ctx.maxArrayLength));
    ctx.indentationLvl -= 2;
    return output;
  }

  function formatPromise(ctx, value, recurseTimes) {
    const [state, result] = natives.promiseState(value);
    if (state === 0) return ["<pending>"];
    ctx.indentationLvl += 2;
    const str = formatValue(ctx, result, recurseTimes);
    ctx.indentationLvl -= 2;
    return [state === 2 ? `<rejected> ${str}` : str];
  }

  function groupArrayElements(ctx, output, value) {
    let totalLength = 0;
    let maxLength = 0;
    let outputLength = output.length;
    if (ctx.maxArrayLength < output.length) outputLength--;
    const separatorSpace = 2;
    const dataLen = new Array(outputLength);
    for (let i = 0; i < outputLength; i++) {
      const len = output[i].length;
      dataLen[i] = len;
      totalLength += len + separatorSpace;
      if (maxLength < len) maxLength = len;
    }
    const actualMax = maxLength + separatorSpace;
    if (actualMax * 3 + ctx.indentationLvl < ctx.breakLength && (totalLength / actualMax > 5 || maxLength <= 6)) {
      const averageBias = Math.sqrt(actualMax - totalLength / output.length);
      const biasedMax = Math.max(actualMax - 3 - averageBias, 1);
      const columns = Math.min(
        Math.round(Math.sqrt(2.5 * biasedMax * outputLength) / biasedMax),
        Math.floor((ctx.breakLength - ctx.indentationLvl) / actualMax),
        ctx.compact * 4,
        15,
      );
      if (columns <= 1) return output;
      const tmp = [];
      const maxLineLength = [];
      for (let i = 0; i < columns; i++) {
        let lineLength = 0;
        for (let j = i; j < output.length; j += columns) {
          if (dataLen[j] > lineLength) lineLength = dataLen[j];
        }
        maxLineLength.push(lineLength + separatorSpace);
      }
      let padStart = true;
      if (value !== undefined) {
        for (let i = 0; i < output.length; i++) {
          if (typeof value[i] !== "number" && typeof value[i] !== "bigint") {
            padStart = false;
            break;
          }
        }
      }
      for (let i = 0; i < outputLength; i += columns) {
        const max = Math.min(i + columns, outputLength);
        let str = "";
        let j = i;
        for (; j < max - 1; j++) {
          const cell = `${output[j]}, `;
          str += padStart ? cell.padStart(maxLineLength[j - i], " ") : cell.padEnd(maxLineLength[j - i], " ");
        }
        if (padStart) {
          str += output[j].padStart(maxLineLength[j - i] - separatorSpace, " ");
        } else {
          str += output[j];
        }
        tmp.push(str);
      }
      if (ctx.maxArrayLength < output.length) tmp.push(output[outputLength]);
      output = tmp;
    }
    return output;
  }

  function isBelowBreakLength(ctx, output, start, base) {
    let totalLength = output.length + start;
    if (totalLength + output.length > ctx.breakLength) return false;
    for (const entry of output) {
      totalLength += entry.length;
      if (totalLength > ctx.breakLength) return false;
    }
    return base === "" || !base.includes("\n");
  }

  function reduceToSingleString(ctx, output, base, braces, extrasType, recurseTimes, value) {
    if (ctx.compact !== true) {
      if (typeof ctx.compact === "number" && ctx.compact >= 1) {
        const entries = output.length;
        if (extrasType === kArrayExtrasType && entries > 6) output = groupArrayElements(ctx, output, value);
        if (ctx.currentDepth - recurseTimes < ctx.compact && entries === output.length) {
          const start = output.length + ctx.indentationLvl + braces[0].length + base.length + 10;
          if (isBelowBreakLength(ctx, output, start, base)) {
            const joined = output.join(", ");
            if (!joined.includes("\n")) return `${base ? `${base} ` : ""}${braces[0]} ${joined} ${braces[1]}`;
          }
        }
      }
      const indentation = `\n${" ".repeat(ctx.indentationLvl)}`;
      return `${base ? `${base} ` : ""}${braces[0]}${indentation}  ${output.join(`,${indentation}  `)}${indentation}${braces[1]}`;
    }
    if (isBelowBreakLength(ctx, output, 0, base)) {
      return `${braces[0]}${base ? ` ${base}` : ""} ${output.join(", ")} ${braces[1]}`;
    }
    const indentation = " ".repeat(ctx.indentationLvl);
    const ln = base === "" && braces[0].length === 1 ? " " : `${base ? ` ${base}` : ""}\n${indentation}  `;
    return `${braces[0]}${ln}${output.join(`,\n${indentation}  `)} ${braces[1]}`;
  }

  function hasBuiltInToString(value) {
    let proto = value;
    while (proto !== null) {
      const descriptor = Object.getOwnPropertyDescriptor(proto, "toString");
      if (descriptor !== undefined) {
        return descriptor.value === Object.prototype.toString || descriptor.value === Error.prototype.toString ||
          descriptor.value === Array.prototype.toString || descriptor.value === Function.prototype.toString ||
          descriptor.value === Date.prototype.toString || descriptor.value === RegExp.prototype.toString;
      }
      proto = Object.getPrototypeOf(proto);
    }
    return true;
  }

  // util.format: printf-like `%s %d %i %f %j %o %O %c %%`, then the rest inspected.
  function format(...args) {
    const first = args[0];
    let a = 0;
    let str = "";
    let join = "";
    if (typeof first === "string") {
      if (args.length === 1) return first;
      let lastPos = 0;
      let tempStr;
      for (let i = 0; i < first.length - 1; i++) {
        if (first.charCodeAt(i) !== 37) continue;
        const next = first.charCodeAt(++i);
        if (a + 1 !== args.length) {
          switch (next) {
            case 115: {
              const arg = args[++a];
              if (typeof arg === "number") tempStr = formatNumber(arg);
              else if (typeof arg === "bigint") tempStr = `${arg}n`;
              else if (typeof arg !== "object" || arg === null || !hasBuiltInToString(arg)) tempStr = String(arg);
              else tempStr = inspect(arg, { depth: 0 });
              break;
            }
            case 106:
              try {
                tempStr = JSON.stringify(args[++a]);
              } catch {
                tempStr = "[Circular]";
              }
              break;
            case 100: {
              const arg = args[++a];
              if (typeof arg === "bigint") tempStr = `${arg}n`;
              else if (typeof arg === "symbol") tempStr = "NaN";
              else tempStr = formatNumber(Number(arg));
              break;
            }
            case 79:
              tempStr = inspect(args[++a]);
              break;
            case 111:
              tempStr = inspect(args[++a], { showHidden: true, depth: 4 });
              break;
            case 105: {
              const arg = args[++a];
              if (typeof arg === "bigint") tempStr = `${arg}n`;
              else if (typeof arg === "symbol") tempStr = "NaN";
              else tempStr = formatNumber(Number.parseInt(arg));
              break;
            }
            case 102: {
              const arg = args[++a];
              tempStr = typeof arg === "symbol" ? "NaN" : formatNumber(Number.parseFloat(arg));
              break;
            }
            case 99:
              a += 1;
              tempStr = "";
              break;
            case 37:
              str += first.slice(lastPos, i);
              lastPos = i + 1;
              continue;
            default:
              continue;
          }
          if (lastPos !== i - 1) str += first.slice(lastPos, i - 1);
          str += tempStr;
          lastPos = i + 1;
        } else if (next === 37) {
          str += first.slice(lastPos, i);
          lastPos = i + 1;
        }
      }
      if (lastPos !== 0) {
        a++;
        join = " ";
        if (lastPos < first.length) str += first.slice(lastPos);
      }
    }
    while (a < args.length) {
      const value = args[a];
      str += join;
      str += typeof value !== "string" ? inspect(value) : value;
      join = " ";
      a++;
    }
    return str;
  }


  function renderTable(data, properties) {
    const cell = (v) => {
      const depth = v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length > 2 ? -1 : 0;
      return inspect(v, { depth, maxArrayLength: 3, breakLength: Infinity });
    };
    const indexKeys = [];
    const columns = new Map();
    const values = [];
    let hasValues = false;
    const entries = isMap(data)
      ? [...data].map(([k, v], i) => [i, v, k])
      : isSet(data)
        ? [...data].map((v, i) => [i, v])
        : Object.keys(data).map((k) => [k, data[k]]);
    const isMapData = isMap(data);
    entries.forEach(([key, row, mapKey], r) => {
      indexKeys.push(isMapData ? cell(mapKey) : String(key));
      if (row !== null && typeof row === "object") {
        for (const k of properties || Object.keys(row)) {
          if (!columns.has(k)) columns.set(k, []);
          if (hasOwn(row, k)) columns.get(k)[r] = cell(row[k]);
        }
      } else {
        values[r] = cell(row);
        hasValues = true;
      }
    });
    const head = [isMapData ? "(iteration index)" : "(index)"];
    const cols = [indexKeys.map((k, i) => (isMapData ? String(i) : k))];
    if (isMapData) {
      head.push("Key");
      cols.push(indexKeys);
    }
    for (const [k, col] of columns) {
      head.push(k);
      cols.push(col);
    }
    if (hasValues) {
      head.push("Values");
      cols.push(values);
    }
    const rows = indexKeys.map((_, r) => cols.map((c) => (c[r] === undefined ? "" : c[r])));
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)) + 2);
    const line = (l, m, r) => l + widths.map((w) => "─".repeat(w)).join(m) + r;
    const renderRow = (row) => "│" + row.map((c, i) => ` ${c.padEnd(widths[i] - 2)} `).join("│") + "│";
    return [line("┌", "┬", "┐"), renderRow(head), line("├", "┼", "┤"), ...rows.map(renderRow), line("└", "┴", "┘")].join("\n");
  }

  // What standard error shows for an exception nobody caught.
  function uncaught(value, inPromise) {
    let text = inspect(value);
    // An error without a stack (a SyntaxError) needs no brackets here.
    if (value !== null && typeof value === "object" && isError(value)) {
      const bracketed = `[${errorToString(value)}]`;
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
