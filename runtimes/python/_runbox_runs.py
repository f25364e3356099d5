# runbox's python module, part 3 of 3 (after runtimes/python/_runbox.py and
# _runbox_network.py): how runs, commands and sessions start, the module every run
# imports, and the freeze of what the snapshot holds, which must come last.

def _start(path, args=()):
    # Every run starts from the same snapshot: fresh randomness, a /tmp, and the
    # working directory on the import path. numpy's global generator takes 624 words
    # from the system (the entropy `seed()` would gather, at a third of its cost).
    random.seed()
    numpy.random.seed(numpy.frombuffer(os.urandom(2496), dtype=numpy.uint32))
    os.makedirs("/tmp", exist_ok=True)
    # The network policy's secrets (docs/network.md): their placeholders, in the
    # variables of their names. The snapshot's environment is fixed; the host writes
    # these beside the device.
    try:
        with open("/net/environment.json", encoding="utf-8") as f:
            os.environ.update(_json.load(f))
    except FileNotFoundError:
        pass
    if "/" not in sys.path:
        sys.path.insert(0, "/")
    # The operator's pure-Python packages, when there are some (see `packages-dir`):
    # before the runtime's own, so that a newer version given there is the one imported.
    if os.path.isdir("/usr/local/lib/site-packages") and "/usr/local/lib/site-packages" not in sys.path:
        sys.path.insert(sys.path.index("/") + 1, "/usr/local/lib/site-packages")
    # The packages `pip install` put in this scratch (a session's earlier call, or an
    # earlier run's), before the operator's.
    if os.path.isdir(_SITE):
        _site_on_path()
    sys.argv = [path, *args]

def main(path, args=()):
    _start(path, args)
    raise SystemExit(_execute(path, _new_main(path)))

_COMMAND_USAGE = "usage: python [-c CODE | -m MODULE | FILE | -] [ARGS...]"

def command(cwd, args):
    # `python ARGS` as a command of the shell: a program named as the python program
    # names one (FILE, -c CODE, -m MODULE, - or standard input), run as it runs it: no
    # display of a last expression. It starts in the shell's working directory.
    _start("-")
    try:
        os.chdir(cwd)
    except OSError:
        pass
    rest = list(args)
    # Options that change nothing here; -X takes a value.
    while rest and rest[0] in ("-u", "-B", "-E", "-s", "-S", "-I", "-O", "-OO", "-q", "-b", "-bb", "-X"):
        if rest.pop(0) == "-X" and rest:
            rest.pop(0)
    first = rest[0] if rest else "-"
    if first in ("-V", "--version"):
        print("Python " + sys.version.split()[0])
        raise SystemExit(0)
    if first in ("-h", "--help"):
        print(_COMMAND_USAGE)
        raise SystemExit(0)
    namespace = _new_main(first)
    del namespace["__file__"]
    if first == "-m":
        if len(rest) < 2:
            print("Argument expected for the -m option\n" + _COMMAND_USAGE, file=sys.stderr)
            raise SystemExit(2)
        if rest[1] == "pip":
            raise SystemExit(_pip_main(rest[2:]))
        import runpy
        sys.argv = [rest[1], *rest[2:]]
        sys.path[0:0] = [os.getcwd()]
        code = compile("_runpy.run_module(_name, run_name='__main__', alter_sys=True)", "<runbox>", "exec")
        raise SystemExit(_run(code, {"_runpy": runpy, "_name": rest[1]}))
    if first == "-c":
        if len(rest) < 2:
            print("Argument expected for the -c option\n" + _COMMAND_USAGE, file=sys.stderr)
            raise SystemExit(2)
        source, where, sys.argv = rest[1], "<string>", ["-c", *rest[2:]]
        sys.path[0:0] = [os.getcwd()]
    elif first.startswith("-") and first != "-":
        print(f"Unknown option: {first}\n" + _COMMAND_USAGE, file=sys.stderr)
        raise SystemExit(2)
    elif first == "-":
        source, where, sys.argv = sys.stdin.buffer.read(), "<stdin>", ["-", *rest[1:]]
        sys.stdin = io.StringIO()
        sys.path[0:0] = [os.getcwd()]
    else:
        try:
            with open(first, "rb") as f:
                source = f.read()
        except OSError as e:
            print(f"python: can't open file {first!r}: [Errno {e.errno}] {e.strerror}", file=sys.stderr)
            raise SystemExit(2)
        where, sys.argv = first, rest
        namespace["__file__"] = first
        sys.path[0:0] = [os.path.dirname(os.path.abspath(first))]
    try:
        code = compile(source, where, "exec")
    except SyntaxError as e:
        traceback.print_exception(type(e), e, None)
        raise SystemExit(1)
    raise SystemExit(_run(code, namespace))

def _read_line(fd):
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        line += chunk
    return line

# A session's interpreter is kept by the host between calls, at rest: `serve_start`
# sets the session up and returns, then each call is one turn of `serve_turn`, which
# reads its request from stdin: the line `run` asks for the program at PATH to run in the
# session's namespace, with STDIN_PATH as its stdin, its exit status going to
# STATUS_PATH; the line `once` runs it as `main` would (its stdin is what follows) and
# ends the interpreter.
_session = None

def serve_start(path, stdin_path, status_path):
    global _session
    _start(path)
    _session = (path, stdin_path, status_path, _new_main(path))

def serve_turn():
    path, stdin_path, status_path, namespace = _session
    line = _read_line(0)
    if line is None:
        _leave(0)
    if line.strip() == b"once":
        _leave(_execute(path, namespace))
    sys.stdin = open(stdin_path, encoding="utf-8", errors="surrogateescape")
    _refresh_tools()
    status = _execute(path, namespace)
    sys.stdin.close()
    with open(status_path, "w") as f:
        f.write(str(status))

def _leave(code):
    # Ends the interpreter itself (a turn that returns leaves it at rest).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

def after_fork():
    # In a copy of a session, as in the child of os.fork: `random` is seeded afresh
    # (numpy's global generator is not, as os.fork leaves it).
    random.seed()


# The module every run imports.
sys.modules["_runbox"] = types.ModuleType("_runbox", __doc__)
sys.modules["_runbox"].__dict__.update(
    {name: value for name, value in globals().items() if not name.startswith("__")})

# SQLite seeds its own generator from /dev/urandom, which WASI lacks: it falls back to the
# clock's second, so two runs in one second drew the same random(). A connection made
# through sqlite3.connect draws random() and randomblob() from the system instead (as the
# sqlite runtime's shell does, runtimes/sqlite/shell.py: each runtime's snapshot is one
# program of its own, so each holds its copy).
import sqlite3

def _sqlite_random():
    return int.from_bytes(os.urandom(8), "little", signed=True)

def _sqlite_randomblob(n):
    # As SQLite's: N below 1 is 1, text is read as a number.
    try:
        n = int(float(n))
    except (TypeError, ValueError):
        n = 0
    if n > 1_000_000_000:
        raise OverflowError("string or blob too big")
    return os.urandom(max(n, 1))

def _sqlite_connecting(connect):
    @functools.wraps(connect)
    def wrapper(*args, **kwargs):
        connection = connect(*args, **kwargs)
        connection.create_function("random", 0, _sqlite_random)
        connection.create_function("randomblob", 1, _sqlite_randomblob)
        return connection
    return wrapper

sqlite3.connect = _sqlite_connecting(sqlite3.connect)

# Everything the snapshot holds (the interpreter's, numpy's, pandas' and matplotlib's
# objects) is moved out of the cycle collector's reach: a run that allocates a few
# hundred thousand objects otherwise pays a full collection over all of them (about
# 100 ms, and a copy of every page it touches). They live as long as the interpreter.
import gc
gc.freeze()
