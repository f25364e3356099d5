# runbox's python module, part 2 of 3 (after runtimes/python/_runbox.py, before
# _runbox_runs.py): the parts run in order in one namespace, joined for the snapshot
# (plugins.toml's `program` list), one by one for the stand-in served before it.

# The network (docs/network.md): with a network policy (`--net-config`) the host makes the
# requests a program asks for, through the device /net/fetch, which works like
# /tools/call: one JSON request written, one JSON answer read. urllib.request's openers
# (urlopen and everything built on it) and a `requests` of runbox's own, when the real one
# is not installed, are bound to it.
import base64 as _base64, http as _http, http.client as _http_client
import urllib.error as _urllib_error, urllib.request as _urllib_request, urllib.response as _urllib_response

_NET_FETCH = "/net/fetch"
_NO_NET = ("no network: this sandbox has no network (runbox was started without a network "
           "policy, --net-config); pass data in with `files` (or stdin) instead of downloading it")
# Headers the host sets itself.
_NET_OWN_HEADERS = frozenset(("host", "content-length", "connection", "transfer-encoding"))

def _net_fetch(request):
    # One request (a dict) through the device, and its answer. An exchange that fails, or
    # no device at all (no network policy), is a failed answer of its own.
    data = _json.dumps(request).encode()
    try:
        with open(_NET_FETCH, "r+b", buffering=0) as device:
            view = memoryview(data)
            while view:
                view = view[device.write(view):]
            answer = device.readall()
    except OSError as e:
        # `/net` is read-only: opening a file it lacks for writing is not permitted.
        if isinstance(e, FileNotFoundError) or not os.path.exists(_NET_FETCH):
            return {"ok": False, "error": "unavailable", "message": _NO_NET}
        return {"ok": False, "error": "unavailable", "message": f"the request through {_NET_FETCH} failed: {e}"}
    try:
        return _json.loads(answer)
    except ValueError:
        said = "an answer that is not JSON" if answer else "no answer"
        return {"ok": False, "error": "unavailable", "message": f"the request through {_NET_FETCH} gave {said}"}

def _net_body(data):
    # A request's body as bytes: bytes-like, text (UTF-8), a file object or an iterable of
    # those, read whole (the device takes one body).
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode()
    if hasattr(data, "read"):
        return _net_body(data.read()) or b""
    try:
        return bytes(memoryview(data))
    except TypeError:
        return b"".join(_net_body(chunk) for chunk in data)

def _net_request(method, url, headers, body, follow_redirects=True):
    request = {"method": method, "url": url, "follow_redirects": follow_redirects,
               "headers": [[str(name), str(value)] for name, value in headers
                           if str(name).lower() not in _NET_OWN_HEADERS]}
    if body is not None:
        request["body_base64"] = _base64.b64encode(body).decode("ascii")
    return request

def _net_answer(answer, url):
    # An answer's headers (name, value pairs) and body; a body the policy cut is said so
    # on stderr.
    headers = answer.get("headers") or []
    if isinstance(headers, dict):
        headers = headers.items()
    headers = [(str(name), str(value)) for name, value in headers]
    if answer.get("body_base64"):
        body = _base64.b64decode(answer["body_base64"])
    else:
        body = (answer.get("body") or "").encode()
    if answer.get("truncated"):
        print(f"runbox: the answer from {answer.get('url') or url} was cut at {len(body)} bytes "
              "(the network policy's answer cap)", file=sys.stderr)
    return headers, body

class _NetResponse(_urllib_response.addinfourl):
    # What urlopen returns for http and https: as urllib hands back http.client's
    # HTTPResponse (`msg` is the reason, `headers` an HTTPMessage).
    version = 11

    def getheader(self, name, default=None):
        values = self.headers.get_all(name)
        return ", ".join(values) if values else default

    def getheaders(self):
        return self.headers.items()

def _urllib_open(req):
    # One urllib Request through the device. The host follows redirects: the answer is
    # the last one. A request not made is a URLError (its reason a TimeoutError when the
    # run's deadline or the policy's timeout ended it).
    url = req.full_url.partition("#")[0]
    answer = _net_fetch(_net_request(req.get_method(), url, req.header_items(), _net_body(req.data)))
    if not answer.get("ok"):
        message = answer.get("message") or answer.get("error") or "the request was not made"
        raise _urllib_error.URLError(TimeoutError(message) if answer.get("error") == "timeout" else message)
    pairs, body = _net_answer(answer, url)
    headers = _http_client.HTTPMessage()
    for name, value in pairs:
        headers[name] = value
    status = int(answer.get("status") or 0)
    response = _NetResponse(io.BytesIO(body), headers, answer.get("url") or url, status)
    response.reason = response.msg = answer.get("reason") or _http_client.responses.get(status, "")
    return response

# HTTPSHandler is there only with the ssl module (not in this sandbox).
_URLLIB_HANDLERS = (_urllib_request.HTTPHandler, getattr(_urllib_request, "HTTPSHandler", None))

class NetHandler(*[handler for handler in _URLLIB_HANDLERS if handler]):
    # urllib's handler of http and https here (build_opener leaves out its own for it).
    def __init__(self, debuglevel=None, context=None, check_hostname=None):
        _urllib_request.AbstractHTTPHandler.__init__(self, debuglevel)

    def http_open(self, req):
        return _urllib_open(req)

    https_open = http_open
    http_request = https_request = _urllib_request.AbstractHTTPHandler.do_request_

def _net_build_opener(build_opener):
    @functools.wraps(build_opener)
    def wrapper(*handlers):
        if not any(isinstance(h, NetHandler) or isinstance(h, type) and issubclass(h, NetHandler)
                   for h in handlers):
            handlers += (NetHandler,)
        return build_opener(*handlers)
    return wrapper

# Every opener has the handler (urlopen builds one again after urlcleanup); an
# HTTPHandler of a program's own (one given to build_opener, a subclass) reaches the
# device too; and where there is no HTTPSHandler, it is this one.
_urllib_request.build_opener = _net_build_opener(_urllib_request.build_opener)
_urllib_request.AbstractHTTPHandler.do_open = lambda self, http_class, req, **kwargs: _urllib_open(req)
if not hasattr(_urllib_request, "HTTPSHandler"):
    _urllib_request.HTTPSHandler = NetHandler
_urllib_request.install_opener(_urllib_request.build_opener())

_REQUESTS_DOC = """runbox's stand-in for `requests` (the real package is not installed here).

Every request goes through the device /net/fetch: the host makes it, under the network
policy runbox was started with (docs/network.md; /net/README.md says what is reachable),
and follows redirects itself. request/get/post/put/patch/delete/head/options, Session (with
headers, cookies, auth, params), Response (status_code, ok, reason, url, headers, content,
text, encoding, json(), raise_for_status(), iter_content(), iter_lines(), cookies) and the
exceptions of requests.exceptions. A request not made raises ConnectionError (Timeout on a
timeout) with the host's message. `timeout` is the policy's own (limits.timeout_ms), TLS
is verified by the host (`verify`, `cert` and `proxies` are ignored), and a body arrives
whole (`stream` changes nothing).
"""

def _requests_modules():
    # The modules of runbox's `requests`: {module name: its namespace}.
    from collections.abc import Mapping, MutableMapping
    from http.cookies import CookieError, SimpleCookie
    from urllib.parse import urlencode, urlsplit, unquote
    import datetime, zlib

    class CaseInsensitiveDict(MutableMapping):
        def __init__(self, data=None, **kwargs):
            self._store = {}
            self.update(data or {}, **kwargs)

        def __setitem__(self, key, value):
            self._store[key.lower()] = (key, value)

        def __getitem__(self, key):
            return self._store[key.lower()][1]

        def __delitem__(self, key):
            del self._store[key.lower()]

        def __iter__(self):
            return (key for key, _ in self._store.values())

        def __len__(self):
            return len(self._store)

        def lower_items(self):
            return ((key, value[1]) for key, value in self._store.items())

        def __eq__(self, other):
            if not isinstance(other, Mapping):
                return NotImplemented
            return dict(self.lower_items()) == dict(CaseInsensitiveDict(other).lower_items())

        def copy(self):
            return CaseInsensitiveDict(self._store.values())

        def __repr__(self):
            return repr(dict(self.items()))

    class RequestsCookieJar(dict):
        def set(self, name, value, **kwargs):
            if value is None:
                self.pop(name, None)
            else:
                self[name] = value

        def get_dict(self, domain=None, path=None):
            return dict(self)

    class RequestException(IOError):
        def __init__(self, *args, response=None, request=None):
            super().__init__(*args)
            self.response = response
            self.request = request if request is not None else getattr(response, "request", None)

    class HTTPError(RequestException): pass
    class ConnectionError(RequestException): pass
    class Timeout(RequestException): pass
    class ConnectTimeout(ConnectionError, Timeout): pass
    class ReadTimeout(Timeout): pass
    class TooManyRedirects(RequestException): pass
    class InvalidURL(RequestException, ValueError): pass
    class MissingSchema(RequestException, ValueError): pass
    class InvalidSchema(RequestException, ValueError): pass
    class InvalidJSONError(RequestException): pass

    class JSONDecodeError(InvalidJSONError, _json.JSONDecodeError):
        def __init__(self, *args, **kwargs):
            _json.JSONDecodeError.__init__(self, *args)
            InvalidJSONError.__init__(self, *self.args, **kwargs)

    class HTTPBasicAuth:
        def __init__(self, username, password):
            self.username, self.password = username, password

        def __call__(self, r):
            pair = [x if isinstance(x, bytes) else str(x).encode() for x in (self.username, self.password)]
            r.headers["Authorization"] = "Basic " + _base64.b64encode(b":".join(pair)).decode("ascii")
            return r

    class PreparedRequest:
        def __init__(self, method=None, url=None, headers=None, body=None):
            self.method, self.url, self.headers, self.body = method, url, CaseInsensitiveDict(headers), body

        def __repr__(self):
            return f"<PreparedRequest [{self.method}]>"

    class Response:
        apparent_encoding = "utf-8"

        def __init__(self):
            self.status_code, self.reason, self.url, self.encoding = None, "", None, None
            self.headers, self.cookies, self.history = CaseInsensitiveDict(), RequestsCookieJar(), []
            self.request, self.elapsed, self._content = None, datetime.timedelta(0), b""

        def __repr__(self):
            return f"<Response [{self.status_code}]>"

        def __bool__(self):
            return self.ok

        def __iter__(self):
            return self.iter_content(128)

        def __enter__(self):
            return self

        def __exit__(self, *args):
            self.close()

        def close(self):
            pass

        @property
        def content(self):
            return self._content

        @property
        def raw(self):
            return io.BytesIO(self._content)

        @property
        def text(self):
            try:
                return self._content.decode(self.encoding or "utf-8", "replace")
            except LookupError:
                return self._content.decode("utf-8", "replace")

        @property
        def ok(self):
            return self.status_code < 400

        @property
        def is_redirect(self):
            return "location" in self.headers and self.status_code in (301, 302, 303, 307, 308)

        def json(self, **kwargs):
            try:
                try:
                    # As bytes (UTF-8, -16 or -32) unless a charset says otherwise.
                    return _json.loads(self._content if self.encoding is None else self.text, **kwargs)
                except UnicodeDecodeError:
                    return _json.loads(self.text, **kwargs)
            except _json.JSONDecodeError as e:
                raise JSONDecodeError(e.msg, e.doc, e.pos, response=self) from None

        def raise_for_status(self):
            kind = {4: "Client", 5: "Server"}.get(self.status_code // 100)
            if kind:
                raise HTTPError(f"{self.status_code} {kind} Error: {self.reason} for url: {self.url}", response=self)

        def iter_content(self, chunk_size=1, decode_unicode=False):
            data = self.text if decode_unicode else self._content
            size = chunk_size or len(data) or 1
            return (data[i:i + size] for i in range(0, len(data), size))

        def iter_lines(self, chunk_size=512, decode_unicode=False, delimiter=None):
            data = self.text if decode_unicode else self._content
            return iter(data.split(delimiter) if delimiter else data.splitlines())

    def merge(session, request):
        # A request's setting over the session's (a None value drops the session's).
        if request is None:
            return session
        if not isinstance(session, Mapping) or not isinstance(request, Mapping):
            return request
        merged = session.copy()
        merged.update(request)
        for key in [key for key, value in request.items() if value is None]:
            del merged[key]
        return merged

    def encode(value):
        # Query or form text of a dict, a list of pairs or text.
        if isinstance(value, (str, bytes)):
            return value.decode() if isinstance(value, bytes) else value
        pairs = value.items() if isinstance(value, Mapping) else value
        return urlencode([(k, v) for k, v in pairs if v is not None], doseq=True)

    def multipart(files, data):
        boundary = os.urandom(16).hex()
        parts = []
        for name, value in (data.items() if isinstance(data, Mapping) else data or ()):
            for v in value if isinstance(value, list) else [value]:
                parts.append((name, None, v if isinstance(v, bytes) else str(v).encode(), None))
        for name, value in (files.items() if isinstance(files, Mapping) else files):
            if isinstance(value, (tuple, list)):
                filename, content, content_type = (*value, None)[:3]
            else:
                filename, content, content_type = os.path.basename(str(getattr(value, "name", name))), value, None
            parts.append((name, filename, _net_body(content) or b"", content_type))
        body = b""
        for name, filename, content, content_type in parts:
            head = f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"'
            head += f'; filename="{filename}"' if filename else ""
            head += f"\r\nContent-Type: {content_type}" if content_type else ""
            body += head.encode() + b"\r\n\r\n" + content + b"\r\n"
        return body + f"--{boundary}--\r\n".encode(), "multipart/form-data; boundary=" + boundary

    class Session:
        def __init__(self):
            self.headers = CaseInsensitiveDict({"User-Agent": "python-requests/2.32 (runbox)", "Accept": "*/*"})
            self.cookies, self.params, self.auth = RequestsCookieJar(), {}, None
            self.verify, self.proxies, self.stream, self.cert, self.max_redirects = True, {}, False, None, 30

        def __enter__(self):
            return self

        def __exit__(self, *args):
            self.close()

        def close(self):
            pass

        def mount(self, prefix, adapter):
            pass

        def request(self, method, url, params=None, data=None, headers=None, cookies=None, files=None,
                    auth=None, timeout=None, allow_redirects=True, proxies=None, hooks=None,
                    stream=None, verify=None, cert=None, json=None):
            method = (method.decode() if isinstance(method, bytes) else str(method)).upper()
            url = (url.decode() if isinstance(url, bytes) else str(url)).strip().partition("#")[0]
            if "://" not in url:
                raise MissingSchema(f"Invalid URL {url!r}: No scheme supplied. Perhaps you meant https://{url}?")
            parts = urlsplit(url)
            if parts.scheme.lower() not in ("http", "https"):
                raise InvalidSchema(f"No connection adapters were found for {url!r}")
            if not parts.hostname:
                raise InvalidURL(f"Invalid URL {url!r}: No host supplied")
            if parts.username is not None:
                auth = auth or (unquote(parts.username), unquote(parts.password or ""))
                url = url.replace(parts.netloc, parts.netloc.rpartition("@")[2], 1)
            query = encode(merge(self.params, params) or {})
            if query:
                url += ("&" if parts.query else "" if url.endswith("?") else "?") + query
            headers = CaseInsensitiveDict(merge(self.headers, headers))
            body = content_type = None
            if files:
                body, content_type = multipart(files, data)
            elif not data and json is not None:
                body, content_type = _json.dumps(json).encode(), "application/json"
            elif data:
                if isinstance(data, (Mapping, list, tuple)):
                    body, content_type = encode(data).encode(), "application/x-www-form-urlencoded"
                else:
                    body = data
            if content_type and "content-type" not in headers:
                headers["Content-Type"] = content_type
            jar = merge(self.cookies, cookies)
            if jar and "cookie" not in headers:
                headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in jar.items())
            prepared = PreparedRequest(method, url, headers, body)
            auth = auth if auth is not None else self.auth
            if isinstance(auth, (tuple, list)):
                auth = HTTPBasicAuth(*auth)
            if auth:
                prepared = auth(prepared) or prepared
            started = time.monotonic()
            answer = _net_fetch(_net_request(prepared.method, prepared.url, prepared.headers.items(),
                                             _net_body(prepared.body), bool(allow_redirects)))
            if not answer.get("ok"):
                error = answer.get("error")
                message = answer.get("message") or error or "the request was not made"
                kind = (Timeout if error == "timeout" else
                        TooManyRedirects if error == "limit" and "redirect" in message.lower() else ConnectionError)
                raise kind(message, request=prepared)
            pairs, content = _net_answer(answer, prepared.url)
            r = Response()
            r.status_code = int(answer.get("status") or 0)
            r.reason = answer.get("reason") or _http_client.responses.get(r.status_code, "")
            r.url, r.request = answer.get("url") or prepared.url, prepared
            r.elapsed = datetime.timedelta(seconds=time.monotonic() - started)
            for name, value in pairs:
                r.headers[name] = r.headers[name] + ", " + value if name in r.headers else value
                if name.lower() == "set-cookie":
                    try:
                        r.cookies.update((k, m.value) for k, m in SimpleCookie(value).items())
                    except CookieError:
                        pass
            self.cookies.update(r.cookies)
            if r.headers.get("content-encoding", "").strip().lower() in ("gzip", "deflate"):
                try:
                    content = zlib.decompressobj(47).decompress(content)
                except zlib.error:
                    pass
            r._content = content
            charset = _re.search(r"charset\s*=\s*[\"']?([^\"';,\s]+)", r.headers.get("content-type", ""), _re.I)
            r.encoding = charset and charset.group(1)
            return r

        def get(self, url, params=None, **kwargs):
            return self.request("GET", url, params=params, **kwargs)

        def options(self, url, **kwargs):
            return self.request("OPTIONS", url, **kwargs)

        def head(self, url, **kwargs):
            kwargs.setdefault("allow_redirects", False)
            return self.request("HEAD", url, **kwargs)

        def post(self, url, data=None, json=None, **kwargs):
            return self.request("POST", url, data=data, json=json, **kwargs)

        def put(self, url, data=None, **kwargs):
            return self.request("PUT", url, data=data, **kwargs)

        def patch(self, url, data=None, **kwargs):
            return self.request("PATCH", url, data=data, **kwargs)

        def delete(self, url, **kwargs):
            return self.request("DELETE", url, **kwargs)

    def session():
        return Session()

    def request(method, url, **kwargs):
        with Session() as s:
            return s.request(method, url, **kwargs)

    def verb_function(verb):
        def call(url, *args, **kwargs):
            with Session() as s:
                return getattr(s, verb)(url, *args, **kwargs)
        call.__name__ = verb
        call.__doc__ = f"A {verb.upper()} request (the arguments of requests.request), its Response."
        return call

    api = {"request": request, "session": session}
    for verb in ("get", "options", "head", "post", "put", "patch", "delete"):
        api[verb] = verb_function(verb)
    request.__doc__ = ("request(method, url, params=None, data=None, json=None, headers=None, "
                       "cookies=None, files=None, auth=None, timeout=None, allow_redirects=True): "
                       "one request through /net/fetch, its Response.")

    class codes(types.SimpleNamespace):
        def __getitem__(self, name):
            return getattr(self, name, None)

    names = {}
    for status in _http.HTTPStatus:
        names[status.name.lower()] = names[status.name] = status.value
    codes = codes(**{**names, "okay": 200, "all_ok": 200, "server_error": 500, "moved": 301})

    errors = {c.__name__: c for c in (RequestException, HTTPError, ConnectionError, Timeout, ConnectTimeout,
                                      ReadTimeout, TooManyRedirects, InvalidURL, MissingSchema,
                                      InvalidSchema, InvalidJSONError, JSONDecodeError)}
    modules = {
        "requests": {**api, **errors, "Session": Session, "Response": Response,
                     "PreparedRequest": PreparedRequest, "codes": codes,
                     "__doc__": _REQUESTS_DOC, "__version__": "2.32.0+runbox"},
        "requests.exceptions": errors,
        "requests.auth": {"HTTPBasicAuth": HTTPBasicAuth},
        "requests.structures": {"CaseInsensitiveDict": CaseInsensitiveDict},
        "requests.models": {"Response": Response, "PreparedRequest": PreparedRequest},
        "requests.sessions": {"Session": Session, "session": session},
        "requests.cookies": {"RequestsCookieJar": RequestsCookieJar},
    }
    for name, namespace in reversed(modules.items()):
        for value in namespace.values():
            if isinstance(value, (type, types.FunctionType)) and value.__module__ == __name__:
                value.__module__, value.__qualname__ = name, value.__name__
                # Its methods' names as errors show them (Session.request(), not
                # _requests_modules.<locals>.Session.request()).
                for key, method in vars(value).items():
                    method = getattr(method, "fget", method)
                    if isinstance(method, types.FunctionType):
                        method.__qualname__ = f"{value.__name__}.{key}"
                        method.__code__ = method.__code__.replace(co_qualname=method.__qualname__)
        namespace["__all__"] = [key for key in namespace if not key.startswith("_")]
    return modules

_REQUESTS = _requests_modules()

class _RequestsFinder:
    # `import requests` when no other finder has one: this one is last on sys.meta_path.
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name not in _REQUESTS:
            return None
        import importlib.util
        return importlib.util.spec_from_loader(name, cls, origin="runbox: /net/fetch, docs/network.md",
                                               is_package=name == "requests")

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module):
        module.__dict__.update(_REQUESTS[module.__name__])
        if module.__name__ == "requests":
            # As the real package's: requests.exceptions and the others without an import.
            import importlib
            for name in _REQUESTS:
                if name != "requests":
                    importlib.import_module(name)

sys.meta_path.append(_RequestsFinder)

# Packages at run time (docs/network.md): `pip install NAME` asks the host, through
# /net/fetch, for pure-Python wheels; their files go under _SITE (in the run's scratch,
# kept by a session), which is then on the import path. `import pip` is a module of
# runbox's own when the real one is not installed; `python -m pip` is always this one.
_SITE = "/.runbox/site-packages"
_PIP_USAGE = """Usage: pip install [-q] [-U] [-r FILE] REQUIREMENT...
       pip list | pip freeze | pip --version
runbox's pip: the host downloads pure-Python wheels (dependencies included) within its
network policy's [packages] and hands their files over /net/fetch; they are written to
/.runbox/site-packages, on python's import path (docs/network.md)."""
_PIP_VERSION = "pip (runbox's: pure-Python wheels through /net/fetch, into /.runbox/site-packages)"
# Options of pip's that change nothing here.
_PIP_IGNORED = frozenset(("-U", "--upgrade", "-v", "--verbose", "--user", "--no-cache-dir",
                          "--disable-pip-version-check", "--no-input", "--break-system-packages",
                          "--no-warn-script-location", "--progress-bar=off"))

def _site_on_path():
    if _SITE not in sys.path:
        sys.path.insert(sys.path.index("/") + 1 if "/" in sys.path else 0, _SITE)

def _pip_fetch(reqs):
    # The host's install of `reqs`, its files written under _SITE (none unless every path
    # of the answer stays inside it): the wheels ({name, version, sha256, wheel}), or a
    # RuntimeError with the host's message.
    answer = _net_fetch({"install": [str(req) for req in reqs]})
    if not answer.get("ok"):
        raise RuntimeError(answer.get("message") or f"the install failed ({answer.get('error', 'unavailable')})")
    files = []
    try:
        for name, content in answer.get("files") or []:
            parts = name.split("/")
            if not name or name.startswith("/") or ".." in parts or "\\" in name or "\0" in name:
                raise RuntimeError(f"the host's answer names a file outside site-packages: {name!r}")
            files.append((os.path.join(_SITE, *parts), _base64.b64decode(content)))
    except (TypeError, ValueError) as e:
        raise RuntimeError(f"the host's answer is not an install's: {e}") from None
    for path, data in files:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        except OSError as e:
            raise RuntimeError(f"cannot write {path}: {e.strerror or e}") from None
    _site_on_path()
    import importlib
    importlib.invalidate_caches()
    return answer.get("installed") or []

def _pip_install(*reqs, quiet=False):
    """Installs pure-Python packages through the host (`install("humanize",
    "tabulate==0.9.0")`, dependencies included), printing what pip prints: the wheels
    installed ({name, version, sha256, wheel}). RuntimeError when they were not."""
    reqs = [r for req in reqs for r in ([req] if isinstance(req, str) else req)]
    if not reqs:
        raise RuntimeError("You must give at least one requirement to install")
    installed = _pip_fetch(reqs)
    if installed and not quiet:
        print("Successfully installed " + " ".join(f"{w.get('name')}-{w.get('version')}" for w in installed))
        for w in installed:
            print(f"  {w.get('wheel')} sha256={w.get('sha256')}")
    return installed

def _pip_installed():
    # (name, version) of each NAME-VERSION.dist-info in _SITE.
    try:
        stems = [name[:-len(".dist-info")] for name in os.listdir(_SITE) if name.endswith(".dist-info")]
    except OSError:
        return []
    return sorted((stem.partition("-")[::2] for stem in stems), key=lambda p: p[0].lower())

def _pip_main(args=None):
    """pip's command line (`main(["install", "humanize"])`): its exit status."""
    args = list(sys.argv[1:] if args is None else args)
    words, quiet, files = [], False, []
    while args:
        arg = args.pop(0)
        if arg in ("-r", "--requirement"):
            if not args:
                print(f"ERROR: {arg} option requires 1 argument", file=sys.stderr)
                return 2
            files.append(args.pop(0))
        elif arg.startswith("--requirement="):
            files.append(arg.partition("=")[2])
        elif arg in ("-q", "-qq", "-qqq", "--quiet"):
            quiet = True
        elif arg in ("-h", "--help", "-V", "--version"):
            words = ["help" if arg in ("-h", "--help") else "--version"]
            break
        elif arg == "--":
            words += args
            break
        elif arg.startswith("-") and arg not in _PIP_IGNORED:
            print(f"ERROR: no such option: {arg} (runbox's pip takes -q, -U, -r FILE)", file=sys.stderr)
            return 2
        elif not arg.startswith("-"):
            words.append(arg)
    command, reqs = (words or ["help"])[0], words[1:]
    if command == "help":
        print(_PIP_USAGE)
    elif command == "--version":
        print(_PIP_VERSION)
    elif command == "freeze":
        for name, version in _pip_installed():
            print(f"{name}=={version}")
    elif command == "list":
        packages = _pip_installed()
        if packages:
            width = max(len(name) for name, _ in packages + [("Package", "")])
            version_width = max(len(version) for _, version in packages + [("", "Version")])
            for name, version in [("Package", "Version"), ("-" * width, "-" * version_width)] + packages:
                print(f"{name:<{width}} {version}")
    elif command == "install":
        try:
            for name in files:
                with open(name, encoding="utf-8") as f:
                    reqs += [line.split(" #")[0].strip() for line in f
                             if line.strip() and not line.lstrip().startswith(("#", "-"))]
            if not reqs:
                raise RuntimeError('You must give at least one requirement to install (see "pip help")')
            _pip_install(*reqs, quiet=quiet)
        except OSError as e:
            print(f"ERROR: Could not open requirements file: {e}", file=sys.stderr)
            return 1
        except RuntimeError as e:
            print(f"ERROR: {e}", file=sys.stderr)
            return 1
    else:
        print(f'ERROR: unknown command "{command}" (runbox\'s pip has install, list, freeze)', file=sys.stderr)
        return 1
    return 0

for _function, _name in ((_pip_main, "main"), (_pip_install, "install")):
    _function.__name__ = _function.__qualname__ = _name
    _function.__module__ = "pip"
del _function, _name

class _PipFinder:
    # `import pip` when no other finder has one: this one is last on sys.meta_path.
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "pip":
            return None
        import importlib.util
        return importlib.util.spec_from_loader(name, cls, origin="runbox: /net/fetch, docs/network.md")

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module):
        module.__doc__ = _PIP_USAGE
        module.main, module.install = _pip_main, _pip_install

sys.meta_path.append(_PipFinder)
