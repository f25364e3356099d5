// runbox's `fetch`, `Headers` and `Response` (docs/network.md). The sandbox has no
// sockets: the host makes every request, after checking it against the operator's network
// policy, through the device `/net/fetch` (`natives.netFetch`: one JSON request written,
// one JSON answer read). `prelude.js` loads this when a program first reads one of the
// globals.
//
//   const res = await fetch("https://api.example.com/v1/items", { headers: { Accept: "application/json" } });
//   if (res.ok) console.log((await res.json()).items.length);
//
// A request the host did not make (the policy refuses it, a limit, a timeout, a server
// that cannot be reached) rejects with a TypeError carrying the host's message, as
// `fetch` rejects on a network error. Bodies cross the device as base64, encoded and
// decoded natively.
//
// Called with the natives and the prelude's shared helpers; returns the globals.
(function (natives, shared) {
  "use strict";

  const { define, STDERR } = shared;
  const NO_NETWORK =
    "no network: this sandbox has no network (runbox was started without a network policy, --net-config); pass data in with `files` (or stdin) instead of downloading it";
  const custom = Symbol.for("nodejs.util.inspect.custom");
  const tagOf = (value) => Object.prototype.toString.call(value);

  // An object `inspect` shows as `NAME { …props }`.
  const shown = (name, props) => {
    const Shown = { [name]: function () {} }[name];
    return Object.assign(new Shown(), props);
  };

  // ---------------------------------------------------------------------------------------
  // Headers: names are compared without case (and kept in lower case), in the order they
  // were added; `get` joins the values of a name with ", ", and iteration is sorted by name
  // with each name once (`set-cookie` excepted), as the Fetch standard has it.
  const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
  const headerName = (name) => {
    name = String(name);
    if (!TOKEN.test(name)) throw new TypeError(`Headers: invalid header name: "${name}"`);
    return name.toLowerCase();
  };
  const headerValue = (value) => {
    value = String(value).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
    if (/[\0\r\n]/.test(value)) throw new TypeError(`Headers: invalid header value: "${value}"`);
    return value;
  };

  // What only this file reaches: a Headers' list of [name, value], a Response made from an
  // answer.
  let listOf;
  let answered;

  class Headers {
    #list = [];

    constructor(init = undefined) {
      if (init === undefined) return;
      if (init instanceof Headers) {
        this.#list = init.#list.map(([name, value]) => [name, value]);
        return;
      }
      if (init === null || (typeof init !== "object" && typeof init !== "function")) {
        throw new TypeError("Headers: the headers must be an object, an array of [name, value] pairs or a Headers");
      }
      if (typeof init[Symbol.iterator] === "function") {
        for (const pair of init) {
          const items = typeof pair === "string" || pair === null || typeof pair !== "object" ? null : [...pair];
          if (items === null || items.length !== 2) {
            throw new TypeError(`Headers: each header must be a [name, value] pair, not ${items === null ? typeof pair : `${items.length} items`}`);
          }
          this.append(items[0], items[1]);
        }
        return;
      }
      for (const name of Object.keys(init)) this.append(name, init[name]);
    }

    append(name, value) {
      this.#list.push([headerName(name), headerValue(value)]);
    }

    delete(name) {
      name = headerName(name);
      this.#list = this.#list.filter(([n]) => n !== name);
    }

    get(name) {
      name = headerName(name);
      const values = this.#list.filter(([n]) => n === name).map(([, v]) => v);
      return values.length === 0 ? null : values.join(", ");
    }

    getSetCookie() {
      return this.#list.filter(([n]) => n === "set-cookie").map(([, v]) => v);
    }

    has(name) {
      name = headerName(name);
      return this.#list.some(([n]) => n === name);
    }

    set(name, value) {
      name = headerName(name);
      value = headerValue(value);
      const i = this.#list.findIndex(([n]) => n === name);
      if (i === -1) {
        this.#list.push([name, value]);
      } else {
        this.#list[i] = [name, value];
        this.#list = this.#list.filter(([n], j) => n !== name || j <= i);
      }
    }

    forEach(callback, thisArg = undefined) {
      if (typeof callback !== "function") throw new TypeError("Headers.forEach: the callback must be a function");
      for (const [name, value] of this.#sorted()) callback.call(thisArg, value, name, this);
    }

    entries() {
      return this.#sorted()[Symbol.iterator]();
    }

    keys() {
      return this.#sorted().map(([name]) => name)[Symbol.iterator]();
    }

    values() {
      return this.#sorted().map(([, value]) => value)[Symbol.iterator]();
    }

    [Symbol.iterator]() {
      return this.entries();
    }

    #sorted() {
      const names = [...new Set(this.#list.map(([n]) => n))].sort();
      const out = [];
      for (const name of names) {
        if (name === "set-cookie") for (const value of this.getSetCookie()) out.push([name, value]);
        else out.push([name, this.get(name)]);
      }
      return out;
    }

    [custom]() {
      const names = [...new Set(this.#list.map(([n]) => n))].sort();
      return shown("Headers", Object.fromEntries(names.map((name) => [name, this.get(name)])));
    }

    static {
      listOf = (headers) => headers.#list;
    }
  }
  define(Headers.prototype, Symbol.toStringTag, "Headers");

  // ---------------------------------------------------------------------------------------
  // Bodies: what a request or a Response is made with, as text or bytes, with the
  // content-type it implies.
  const isURLSearchParams = (body) =>
    (typeof URLSearchParams === "function" && body instanceof URLSearchParams) || tagOf(body) === "[object URLSearchParams]";

  function extractBody(body, what) {
    if (typeof body === "string") return { text: body, type: "text/plain;charset=UTF-8" };
    if (isURLSearchParams(body)) return { text: String(body), type: "application/x-www-form-urlencoded;charset=UTF-8" };
    const tag = tagOf(body);
    if (tag === "[object ArrayBuffer]" || tag === "[object SharedArrayBuffer]") return { bytes: new Uint8Array(body) };
    if (ArrayBuffer.isView(body)) return { bytes: new Uint8Array(body.buffer, body.byteOffset, body.byteLength) };
    const kind = body === null ? "null" : typeof body === "object" ? `an object (${tag.slice(8, -1)})` : typeof body;
    throw new TypeError(`${what}: the body must be a string, an ArrayBuffer, a typed array or DataView, or URLSearchParams, not ${kind}`);
  }

  const bodyBytes = (extracted) => extracted.bytes || natives.encodeUtf8(extracted.text);

  // ---------------------------------------------------------------------------------------
  // Response.
  const NULL_BODY = [101, 103, 204, 205, 304];

  class Response {
    #status = 200;
    #statusText = "";
    #headers;
    #body = null; // a Uint8Array, or null for none
    #used = false;
    #url = "";
    #redirected = false;
    #type = "default";

    constructor(body = null, init = undefined) {
      init = init === undefined || init === null ? {} : init;
      if (init.status !== undefined) {
        const status = Number(init.status);
        if (!Number.isInteger(status) || status < 200 || status > 599) {
          throw new RangeError(`Response: the status must be an integer from 200 to 599, not ${init.status}`);
        }
        this.#status = status;
      }
      if (init.statusText !== undefined) this.#statusText = String(init.statusText);
      this.#headers = new Headers(init.headers);
      if (body !== null && body !== undefined) {
        if (NULL_BODY.includes(this.#status)) throw new TypeError(`Response: a response with status ${this.#status} cannot have a body`);
        const extracted = extractBody(body, "Response");
        this.#body = bodyBytes(extracted).slice();
        if (extracted.type && !this.#headers.has("content-type")) this.#headers.set("content-type", extracted.type);
      }
    }

    get ok() {
      return this.#status >= 200 && this.#status <= 299;
    }
    get status() {
      return this.#status;
    }
    get statusText() {
      return this.#statusText;
    }
    get headers() {
      return this.#headers;
    }
    get url() {
      return this.#url;
    }
    get redirected() {
      return this.#redirected;
    }
    get type() {
      return this.#type;
    }
    get bodyUsed() {
      return this.#used;
    }

    // The body's bytes, once.
    #consume() {
      if (this.#used) throw new TypeError("Body is unusable: Body has already been read");
      if (this.#body === null) return new Uint8Array(0);
      this.#used = true;
      const body = this.#body;
      this.#body = null;
      return body;
    }

    async arrayBuffer() {
      const bytes = this.#consume();
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    }
    async bytes() {
      return this.#consume();
    }
    async text() {
      return natives.decodeUtf8(this.#consume(), false, false);
    }
    async json() {
      return JSON.parse(natives.decodeUtf8(this.#consume(), false, false));
    }

    clone() {
      if (this.#used) throw new TypeError("Response.clone: Body has already been consumed.");
      const copy = new Response(null, { headers: this.#headers });
      copy.#status = this.#status;
      copy.#statusText = this.#statusText;
      copy.#body = this.#body === null ? null : this.#body.slice();
      copy.#url = this.#url;
      copy.#redirected = this.#redirected;
      copy.#type = this.#type;
      return copy;
    }

    static json(data, init = undefined) {
      const text = JSON.stringify(data);
      if (text === undefined) throw new TypeError("Response.json: the data is not serializable to JSON");
      const response = new Response(null, init);
      if (NULL_BODY.includes(response.#status)) throw new TypeError(`Response.json: a response with status ${response.#status} cannot have a body`);
      response.#body = natives.encodeUtf8(text);
      if (!response.#headers.has("content-type")) response.#headers.set("content-type", "application/json");
      return response;
    }

    [custom]() {
      return shown("Response", {
        status: this.#status,
        statusText: this.#statusText,
        headers: this.#headers,
        bodyUsed: this.#used,
        ok: this.ok,
        redirected: this.#redirected,
        type: this.#type,
        url: this.#url,
      });
    }

    static {
      // The Response of an answer of the device.
      answered = ({ status, statusText, headers, body, url, redirected }) => {
        const response = new Response();
        response.#status = status;
        response.#statusText = statusText;
        const list = listOf(response.#headers);
        for (const [name, value] of headers) list.push([String(name).toLowerCase(), String(value)]);
        response.#body = body;
        response.#url = url;
        response.#redirected = redirected;
        response.#type = "basic";
        return response;
      };
    }
  }
  define(Response.prototype, Symbol.toStringTag, "Response");

  // ---------------------------------------------------------------------------------------
  // fetch.
  const STANDARD_METHODS = ["DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"];
  const FORBIDDEN_METHODS = ["CONNECT", "TRACE", "TRACK"];
  const REDIRECT_STATUS = [301, 302, 303, 307, 308];
  const REDIRECT_MODES = ["follow", "manual", "error"];
  // Headers the host sets itself (a program's are left out, as a browser leaves them out).
  const HOST_HEADERS = ["host", "content-length", "connection", "transfer-encoding"];

  function normalizeMethod(method) {
    method = String(method);
    if (!TOKEN.test(method)) throw new TypeError(`fetch: '${method}' is not a valid HTTP method`);
    const upper = method.toUpperCase();
    if (FORBIDDEN_METHODS.includes(upper)) throw new TypeError(`fetch: '${method}' HTTP method is unsupported`);
    return STANDARD_METHODS.includes(upper) ? upper : method;
  }

  // The answer's headers: a list of [name, value] pairs (or an object of them).
  const answerHeaders = (headers) => {
    if (Array.isArray(headers)) return headers.filter((pair) => Array.isArray(pair) && pair.length === 2);
    if (headers !== null && typeof headers === "object") return Object.entries(headers);
    return [];
  };

  // One request, synchronously: the Response, or a thrown TypeError.
  function exchange(input, init) {
    let url;
    let method = "GET";
    let headers;
    let body = null;
    let redirect = "follow";
    if (input !== null && typeof input === "object" && typeof input.url === "string") {
      // A Request, or anything shaped like one.
      url = input.url;
      if (input.method !== undefined) method = input.method;
      if (input.headers !== undefined) headers = input.headers;
      if (typeof input.redirect === "string") redirect = input.redirect;
    } else {
      url = String(input);
    }
    if (init !== undefined && init !== null) {
      if (typeof init !== "object") throw new TypeError("fetch: the options (init) must be an object");
      if (init.method !== undefined) method = init.method;
      if (init.headers !== undefined) headers = init.headers;
      if (init.body !== undefined) body = init.body;
      if (init.redirect !== undefined) redirect = String(init.redirect);
    }
    method = normalizeMethod(method);
    if (!REDIRECT_MODES.includes(redirect)) {
      throw new TypeError(`fetch: redirect must be 'follow', 'manual' or 'error', not '${redirect}'`);
    }
    headers = new Headers(headers === null ? undefined : headers);
    const request = { method, url, headers: [], follow_redirects: redirect === "follow" };
    if (body !== null) {
      if (method === "GET" || method === "HEAD") throw new TypeError("fetch: a request with the GET or HEAD method cannot have a body");
      const extracted = extractBody(body, "fetch");
      if (extracted.type && !headers.has("content-type")) headers.append("content-type", extracted.type);
      if (extracted.text !== undefined) request.body = extracted.text;
      else request.body_base64 = natives.encodeBase64(extracted.bytes);
    }
    request.headers = listOf(headers).filter(([name]) => !HOST_HEADERS.includes(name));

    const text = natives.netFetch(JSON.stringify(request));
    if (text === null || text === undefined) throw new TypeError(NO_NETWORK);
    let answer;
    try {
      answer = JSON.parse(text);
    } catch (err) {
      answer = { ok: false, error: "unavailable", message: `the host's answer is not JSON: ${err.message}` };
    }
    if (answer === null || typeof answer !== "object") {
      answer = { ok: false, error: "unavailable", message: "the host's answer is not a JSON object" };
    }
    if (answer.ok !== true) {
      const kind = typeof answer.error === "string" ? answer.error : "unavailable";
      const message = typeof answer.message === "string" ? answer.message : `the request to ${url} failed`;
      // `not_allowed: …`: what kind of failure, then the host's words.
      const said = message.startsWith(`${kind}:`) ? message : `${kind}: ${message}`;
      throw new TypeError(said, { cause: { code: kind, message } });
    }

    let bytes;
    if (typeof answer.body_base64 === "string") {
      try {
        bytes = natives.decodeBase64(answer.body_base64);
      } catch {
        throw new TypeError(`unavailable: the host's answer from ${url} has a body that is not base64`);
      }
    } else if (typeof answer.body === "string") {
      bytes = natives.encodeUtf8(answer.body);
    } else {
      bytes = new Uint8Array(0);
    }
    const from = typeof answer.url === "string" && answer.url !== "" ? answer.url : url;
    if (answer.truncated === true) {
      natives.write(STDERR, `runbox: the answer from ${from} was cut at ${bytes.length} bytes (the network policy's answer cap)\n`);
    }
    const status = Number(answer.status) | 0;
    if (redirect === "error" && REDIRECT_STATUS.includes(status)) {
      throw new TypeError(`fetch: ${from} answered ${status} (a redirect) and the request's redirect mode is 'error'`);
    }
    return answered({
      status,
      statusText: typeof answer.reason === "string" ? answer.reason : "",
      headers: answerHeaders(answer.headers),
      body: bytes,
      url: from,
      redirected: answer.redirected === true,
    });
  }

  // `fetch(input, init)`: a promise of the Response.
  async function fetch(input, init = undefined) {
    return exchange(input, init);
  }

  return { fetch, Headers, Response };
});
