"""runbox's side of the python runtime.

plugins.toml names this file, then _runbox_network.py and _runbox_runs.py, as the program
of python's start-up snapshot (in parts: see plugins.toml): it runs once,
as the snapshot is taken (numpy, pandas and matplotlib imported, the sandbox's settings
made), and is from then on the module `_runbox` whose `main`, `command` and `serve` every
run calls (plugins.toml's `argv`, `command-argv` and `session-argv`). Its functions keep
this program's globals, where their state lives (the figure counter, the tools' catalog).
"""
__name__ = "_runbox"

import ast, builtins, io, os, random, sys, traceback, types
# The interpreter starts isolated from its environment (PYTHONUNBUFFERED and the like
# are not read): unbuffered standard streams keep stdout and stderr in the order
# written, and no bytecode is written beside a program's modules.
sys.stdout = sys.__stdout__ = io.TextIOWrapper(
    io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
    write_through=True)
sys.stderr = sys.__stderr__ = io.TextIOWrapper(
    io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
    write_through=True)
sys.dont_write_bytecode = True
import numpy
# numpy's default integer (np.intp) is 32-bit on wasm32, and int32 arithmetic wraps
# silently: np.arange(100_000).sum() would be 704982704. The user's own calls (not the
# libraries', which keep numpy's behaviour here) make arrays of Python ints int64 and
# sum and multiply integers and booleans in 64 bits, as on a 64-bit platform.
import functools
_ndarray = numpy.ndarray
_int64 = numpy.dtype(numpy.int64)
_WIDE = {}
for _type in (numpy.bool_, numpy.byte, numpy.short, numpy.intc, numpy.long,
              numpy.ubyte, numpy.ushort, numpy.uintc, numpy.ulong):
    _t = numpy.dtype(_type)
    if _t.itemsize < 8:
        _WIDE[_t.num] = numpy.dtype(numpy.uint64 if _t.kind == "u" else numpy.int64)
_INTP = numpy.dtype(numpy.intp).num
_PYTHON_DATA = frozenset((int, list, tuple, range))
_LIBRARIES = "/usr/local/lib/"
_np_asarray = numpy.asarray

def _from_user():
    # Whether the wrapped function was called by the program, not by numpy, pandas or
    # another library (whose code is left as it is on this platform).
    try:
        return not str(sys._getframe(2).f_globals.get("__file__")).startswith(_LIBRARIES)
    except ValueError:
        return True

def _arange(arange):
    @functools.wraps(arange)
    def wrapper(*args, **kwargs):
        if len(args) < 4:
            values = args
            if kwargs:
                if kwargs.get("dtype") is not None:
                    return arange(*args, **kwargs)
                values += tuple(kwargs[k] for k in ("start", "stop", "step") if k in kwargs)
            for value in values:
                if type(value) is not int:
                    break
            else:
                if values and _from_user():
                    kwargs["dtype"] = _int64
        return arange(*args, **kwargs)
    return wrapper

def _array(array):
    @functools.wraps(array)
    def wrapper(object, *args, **kwargs):
        if args or kwargs:
            result = array(object, *args, **kwargs)
            if args or kwargs.get("dtype") is not None:
                return result
        else:
            result = array(object)
        if (type(object) in _PYTHON_DATA and type(result) is _ndarray
                and result.dtype.num == _INTP and _from_user()):
            return result.astype(_int64)
        return result
    return wrapper

def _filled(full):
    @functools.wraps(full)
    def wrapper(shape, fill_value, *args, **kwargs):
        if (not args and type(fill_value) is int and kwargs.get("dtype") is None
                and _from_user()):
            kwargs["dtype"] = _int64
        return full(shape, fill_value, *args, **kwargs)
    return wrapper

def _randint(randint):
    @functools.wraps(randint)
    def wrapper(low, high=None, size=None, dtype=None):
        if dtype is None:
            dtype = _int64 if _from_user() else int
        return randint(low, high, size, dtype)
    return wrapper

def _accumulating(reduce):
    # np.sum, np.prod, np.cumsum, np.cumprod and their nan- forms: with no dtype and no out
    # given, integers and booleans narrower than 64 bits are added (multiplied) in 64 bits.
    @functools.wraps(reduce)
    def wrapper(a, axis=None, dtype=None, out=None, *args, **kwargs):
        if dtype is None and out is None:
            if type(a) in _PYTHON_DATA:
                a = _np_asarray(a)
            if isinstance(a, _ndarray):
                dtype = _WIDE.get(a.dtype.num)
                if dtype is not None and not _from_user():
                    dtype = None
        return reduce(a, axis, dtype, out, *args, **kwargs)
    return wrapper

for _name in ("sum", "prod", "cumsum", "cumprod", "nansum", "nanprod", "nancumsum", "nancumprod"):
    setattr(numpy, _name, _accumulating(getattr(numpy, _name)))
numpy.arange = _arange(numpy.arange)
numpy.array = _array(numpy.array)
numpy.asarray = _array(numpy.asarray)
numpy.full = _filled(numpy.full)
numpy.random.randint = _randint(numpy.random.randint)

# ndarray.sum() and .prod() are numpy._core._methods._sum and _prod (looked up at their
# first call, which is after this).
from numpy._core import _methods
from numpy._globals import _NoValue

def _method(function, reduce):
    @functools.wraps(function)
    def method(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue,
               where=True):
        if dtype is None and out is None:
            dtype = _WIDE.get(a.dtype.num)
            if dtype is not None and not _from_user():
                dtype = None
        return reduce(a, axis, dtype, out, keepdims, initial, where)
    return method

_methods._sum = _method(_methods._sum, _methods.umr_sum)
_methods._prod = _method(_methods._prod, _methods.umr_prod)

# A few numpy functions (repeat, put, choose, searchsorted's sorter, ufunc.reduceat) take
# index and count arrays only as np.intp, and refuse int64 ones: the error says what to do.
_INTP_ERRORS = ("from dtype('int64') to dtype('int32') according to the rule 'safe'",
                "could not parse sorter argument")

def _hint(e):
    if isinstance(e, (TypeError, ValueError)) and any(s in str(e) for s in _INTP_ERRORS):
        e.add_note("(numpy's index type np.intp is 32-bit here, and arrays of Python ints are "
                   "int64: give index and count arrays as .astype(np.intp))")
import pandas
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot

_figures = 0

def _show(*args, **kwargs):
    # No screen here: each open figure goes to figure-N.png in the working directory,
    # N counting on from the last one of this run (of this session, in a session) and
    # past any file of that name, so a later show() never overwrites an earlier one.
    global _figures
    pyplot = matplotlib.pyplot
    for number in pyplot.get_fignums():
        _figures += 1
        while os.path.exists(f"figure-{_figures}.png"):
            _figures += 1
        pyplot.figure(number).savefig(f"figure-{_figures}.png")
    pyplot.close("all")

matplotlib.pyplot.show = _show

def _exit_code(e):
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1

def _new_main(path):
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__builtins__ = builtins
    sys.modules["__main__"] = module
    return module.__dict__

def _compile(path):
    # The program, and its last statement apart when that is an expression: like the
    # Python REPL and Jupyter, its value is displayed (its repr, nothing for None), unless
    # a `;` follows it, as in IPython.
    with open(path, "rb") as f:
        source = f.read()
    tree = compile(source, path, "exec", ast.PyCF_ONLY_AST)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        node = tree.body[-1]
        line = source.splitlines()[node.end_lineno - 1]
        if not line[node.end_col_offset:].lstrip().startswith(b";"):
            last = compile(ast.Interactive(body=[tree.body.pop()]), path, "single")
    return compile(tree, path, "exec"), last

def _execute(path, namespace):
    # Runs the program like `python PATH`: its traceback without runbox's frames.
    try:
        code, last = _compile(path)
    except SyntaxError as e:
        traceback.print_exception(type(e), e, None)
        return 1
    return _run(code, namespace, last)

def _run(code, namespace, last=None):
    try:
        exec(code, namespace)
        if last is not None:
            exec(last, namespace)
        return 0
    except SystemExit as e:
        return _exit_code(e)
    except ModuleNotFoundError as e:
        _print_missing_module(e)
        return 1
    except BaseException as e:
        _hint(e)
        traceback.print_exception(type(e), e, e.__traceback__.tb_next)
        return 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass

_NO_INSTALL = ("This sandbox cannot install packages (it has no network). Its python has "
               "the standard library, numpy, pandas, scipy, matplotlib, scikit-learn, "
               "statsmodels and sympy. A module of your own can be passed in with `files` "
               "(e.g. `helpers.py`) and imported.")

def _print_missing_module(e):
    # CPython's hint (a site-packages directory, a virtual environment) cannot apply
    # here: say what can.
    lines = traceback.format_exception(type(e), e, e.__traceback__.tb_next)
    text = "".join(lines)
    hint = ". Site initialization is disabled, did you forget to add the site-packages directory to sys.path or to enable your virtual environment?"
    # `import tools` is code mode's, when the server has upstream tools.
    say = _NO_TOOLS if getattr(e, "name", None) == "tools" else _NO_INSTALL
    if say is _NO_INSTALL and os.path.exists("/net/fetch"):
        say = ("It is not installed. This server's network policy may allow installing it "
               "(pure-Python packages only): `import pip; pip.main(['install', NAME])`, or "
               "`pip install NAME` in the shell; /net/README.md says what is allowed.")
    if hint in text:
        text = text.replace(hint, ". " + say)
    else:
        text += say + "\n"
    sys.stderr.write(text)

_NO_TOOLS = "This server gives programs no tools to call (its operator starts it with `runbox mcp --tools-config FILE` for that)."


def _no_network(*args, **kwargs):
    if os.path.exists("/net/fetch"):
        raise OSError(101, "programs here have no sockets: the host makes HTTP requests for them "
                      "under its network policy; use urllib.request or requests (see /net/README.md)")
    raise OSError(101, "this sandbox has no network: pass data in with `files` (or stdin) instead of downloading it")

# No sockets reach anything here; say so where a program first tries.
import socket as _socket
for _name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr",
              "create_connection", "create_server"):
    setattr(_socket, _name, _no_network)
_socket.socket.connect = _socket.socket.connect_ex = _no_network

# asyncio: the selector event loop wakes itself through a socket pair, and no socket can be
# made here. Nothing but its own timers can wake a loop in this sandbox (there are no
# threads, sockets or signals), so the sandbox's loop has no self-pipe, and with no file
# to watch its selector sleeps until the next timer.
import asyncio, selectors, time
from asyncio import unix_events as _unix_events

_NO_THREADS = ("threads cannot start in this sandbox: asyncio.to_thread and "
               "run_in_executor cannot run a function here; call it directly (it then "
               "blocks the event loop while it runs)")

class _Selector(selectors.DefaultSelector):
    def select(self, timeout=None):
        if len(self.get_map()):
            return super().select(timeout)
        if timeout is None:
            raise RuntimeError(
                "the event loop would wait forever: every task is waiting, no timer is set, "
                "and nothing else (no thread, socket or signal) can wake it in this sandbox")
        if timeout > 0:
            time.sleep(timeout)
        return []

class SandboxEventLoop(_unix_events._UnixSelectorEventLoop):
    # asyncio's event loop here (asyncio.run, new_event_loop, Runner, EventLoop).
    def __init__(self, selector=None):
        super().__init__(_Selector() if selector is None else selector)

    def _make_self_pipe(self):
        pass

    def _close_self_pipe(self):
        pass

    def _write_to_self(self):
        pass

    def add_signal_handler(self, sig, callback, *args):
        # No signal reaches the sandbox: the handler is kept, and never called.
        if not isinstance(sig, int):
            raise TypeError(f"sig must be an int, not {sig!r}")
        self._check_closed()
        self._signal_handlers[sig] = asyncio.Handle(callback, args, self, None)

    def remove_signal_handler(self, sig):
        return self._signal_handlers.pop(sig, None) is not None

    async def _offline(self, *args, **kwargs):
        _no_network()

    # No socket reaches anything here (see `_no_network`).
    getaddrinfo = getnameinfo = _offline
    create_connection = create_server = create_datagram_endpoint = _offline

    def run_in_executor(self, executor, func, *args):
        self._check_closed()
        if executor is None and self._default_executor is None:
            raise RuntimeError(_NO_THREADS)
        try:
            return super().run_in_executor(executor, func, *args)
        except RuntimeError as e:
            if "thread" not in str(e):
                raise
            raise RuntimeError(_NO_THREADS) from None

_unix_events._UnixDefaultEventLoopPolicy._loop_factory = SandboxEventLoop
asyncio.SelectorEventLoop = asyncio.EventLoop = SandboxEventLoop
_unix_events.SelectorEventLoop = _unix_events.EventLoop = SandboxEventLoop

# `import tools` (code mode, docs/tools.md): the tools of the upstream MCP servers this
# sandbox may call, when the server has some (/tools/tools.json), as
# tools.SERVER.TOOL(arg=value). Each call is one request through the device /tools/call.
# The finder is last on sys.meta_path, so a program's own tools.py still wins.
import json as _json, keyword as _keyword, re as _re

class ToolError(Exception):
    # A call that did not give the tool's result. `kind`: tool_error (the tool reported an
    # error; `content` is what it said), not_allowed, unknown_server, limit, unavailable,
    # timeout or bad_request.
    def __init__(self, kind, message, content=None):
        super().__init__(message)
        self.kind, self.message, self.content = kind, message, content or []

ToolError.__module__ = "tools"

def _tool_call(server, tool, arguments=None, /, **kwargs):
    args = dict(arguments or {})
    args.update(kwargs)
    request = _json.dumps({"server": server, "tool": tool, "arguments": args}).encode()
    with open("/tools/call", "r+b", buffering=0) as device:
        view = memoryview(request)
        while view:
            view = view[device.write(view):]
        answer = device.readall()
    reply = _json.loads(answer)
    if not reply.get("ok"):
        raise ToolError(reply.get("error", "unavailable"), reply.get("message", ""), reply.get("content"))
    return reply.get("value")

def _tool_name(name):
    # A tool's name as a Python identifier: get-sum is also tools.SERVER.get_sum.
    ident = _re.sub(r"\W", "_", name)
    if not ident or ident[0].isdigit() or _keyword.iskeyword(ident):
        ident = "_" + ident
    return ident

def _tool_function(server, name, description):
    def tool(arguments=None, /, **kwargs):
        return _tool_call(server, name, arguments, **kwargs)
    tool.__name__ = tool.__qualname__ = _tool_name(name)
    tool.__module__ = "tools." + server
    tool.__doc__ = description or None
    return tool

class _ToolServer:
    # One server: an attribute per allowed tool. A name it does not list is still sent,
    # so that the host's answer names the allow-list.
    def __init__(self, name, entry):
        self._name = name
        self._load(entry)

    def _load(self, entry):
        tools = {}
        for t in entry.get("tools", []):
            tools[_tool_name(t["name"])] = _tool_function(self._name, t["name"], t.get("description", ""))
        self._tools = tools
        self.__doc__ = entry.get("message") or "Tools of the upstream server %r." % self._name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        tools = self.__dict__.get("_tools", {})
        return tools.get(attr) or _tool_function(self._name, attr, "")

    def __dir__(self):
        return sorted(self._tools)

    def __repr__(self):
        return "<tools.%s: %s>" % (self._name, ", ".join(sorted(self._tools)) or "no tools")

def _tools_getattr(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _ToolServer(name, {})

class _ToolsFinder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "tools" or not os.path.exists("/tools/tools.json"):
            return None
        import importlib.util
        return importlib.util.spec_from_loader("tools", cls, origin="/tools/README.md")

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module):
        module.__doc__ = "The tools this sandbox may call: tools.SERVER.TOOL(arg=value). /tools/README.md lists them."
        module.ToolError = ToolError
        module.call = _tool_call
        module.__getattr__ = _tools_getattr
        _load_tools(module)

def _tools_json_identity():
    # /tools/tools.json is replaced whole (renamed over) when the tool list changes.
    try:
        st = os.stat("/tools/tools.json")
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)

def _load_tools(module):
    # The servers of /tools/tools.json, each kept as the object it was (a program may
    # hold `files = tools.files`), with its tools as they are listed now.
    seen = _tools_json_identity()
    with open("/tools/tools.json", encoding="utf-8") as f:
        catalog = _json.load(f)
    for server, entry in catalog.get("servers", {}).items():
        current = module.__dict__.get(server)
        if isinstance(current, _ToolServer):
            current._load(entry)
        else:
            setattr(module, server, _ToolServer(server, entry))
    module._runbox_seen = seen

def _refresh_tools():
    # A session sees the tools listed now at each call, not those of its first import.
    module = sys.modules.get("tools")
    if module is None or getattr(module, "__loader__", None) is not _ToolsFinder:
        return
    if _tools_json_identity() not in (None, getattr(module, "_runbox_seen", None)):
        try:
            _load_tools(module)
        except (OSError, ValueError):
            pass

sys.meta_path.append(_ToolsFinder)
