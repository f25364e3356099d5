"""A sqlite3-shell-like runner: the SQL in argv[1], against /.runbox/main.db.

It prints what the sqlite3 3.40 shell prints. Dot-commands: .mode MODE (list, csv,
tabs, line, column, box, table, markdown, json, html, insert [TABLE], quote, ascii,
tcl, count, off; --wrap N, --wordwrap on|off, --ww, --quote, --noquote), .headers
on|off, .separator COL [ROW], .nullvalue TEXT, .width N..., .print TEXT...,
.tables [PATTERN], .indexes [TABLE], .schema [PATTERN], .show, .help,
.import [--csv|--ascii] [--skip N] FILE TABLE (FILE /dev/stdin or - is the standard
input), .exit [CODE], .quit.
"""
import csv
import functools
import io
import json
import os
import re
import sqlite3
import sys

DATABASE = "/.runbox/main.db"
# Settings a dot-command made carry over to the next calls of a session, as the
# database does.
SETTINGS = "/.runbox/settings"

# `sqlite3 [OPTIONS] [FILENAME [SQL...]]` as a command of the shell: argv is
# `--command CWD ARGS...`; the database is FILENAME (in memory without one), the SQL the
# arguments after it, else the standard input; the options are the shell's own, as
# dot-commands run first; nothing is kept for a next call.
COMMAND = False
COMMAND_SOURCE = ""
COMMAND_OPTIONS = {
    "-csv": ".mode csv", "-json": ".mode json", "-box": ".mode box", "-table": ".mode table",
    "-markdown": ".mode markdown", "-column": ".mode column", "-line": ".mode line",
    "-list": ".mode list", "-html": ".mode html", "-tabs": ".mode tabs", "-quote": ".mode quote",
    "-header": ".headers on", "-noheader": ".headers off",
}
COMMAND_VALUES = {"-separator": ".separator", "-nullvalue": ".nullvalue", "-cmd": None}
command_lines = []


def dot_quoted(value):
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def command_line(args):
    """The database and the SQL text of a command line, options as dot-commands first."""
    os.chdir(args[0])
    args, database = list(args[1:]), ":memory:"
    while args and args[0].startswith("-") and len(args[0]) > 1:
        option = args.pop(0).replace("--", "-", 1)
        if option in COMMAND_OPTIONS:
            command_lines.append(COMMAND_OPTIONS[option])
        elif option in COMMAND_VALUES and args:
            value = args.pop(0)
            dot_name = COMMAND_VALUES[option]
            command_lines.append(value if dot_name is None else f"{dot_name} {dot_quoted(value)}")
        elif option == "-version":
            import sqlite3 as s
            print(s.sqlite_version)
            sys.exit(0)
        elif option in ("-batch", "-bail", "-interactive", "-readonly", "-echo"):
            pass
        else:
            print(f"sqlite3: Error: unknown option: {option}\nUse -help for a list of options.", file=sys.stderr)
            sys.exit(1)
    if args:
        database = args.pop(0)
    source = "\n".join(args) if args else sys.stdin.read()
    return database, "\n".join(command_lines + [source])


# What a run works with, made by `start`: where output goes, the database, the settings.
out = None
db = None
failed = False


def start(argv, stdout=None):
    """Sets the shell up for the command line `argv` (a run: `shell.py FILE`; a command of
    the shell: `shell.py --command CWD ARGS...`), writing to `stdout` (by default the
    standard output, byte for byte)."""
    global COMMAND, COMMAND_SOURCE, DATABASE, SETTINGS, out, db, failed, st
    command_lines.clear()
    COMMAND = argv[1:2] == ["--command"]
    if COMMAND:
        DATABASE, COMMAND_SOURCE = command_line(argv[2:])
        SETTINGS = None
    # Text that is not UTF-8 (and blobs) goes out byte for byte, as the shell prints it;
    # buffered, and flushed after each statement and dot-command.
    if stdout is not None:
        out = stdout
    else:
        try:
            out = open(sys.stdout.fileno(), "w", buffering=1 << 16, encoding="utf-8",
                       errors="surrogateescape", newline="\n", closefd=False)
        except (OSError, ValueError, AttributeError):
            sys.stdout.reconfigure(encoding="utf-8", errors="surrogateescape")
            out = sys.stdout
    db = sqlite3.connect(DATABASE, isolation_level=None)
    db.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    # Temporary tables and sorts in memory: no stray files in the working directory.
    db.execute("pragma temp_store = memory")
    # SQLite seeds its generator from /dev/urandom, which WASI lacks: it falls back to the
    # clock's second, so runs in the same second drew the same numbers. random() and
    # randomblob() draw from the system instead (python's _runbox_runs.py holds the same for
    # its sqlite3.connect: each runtime's snapshot is one program of its own).
    db.create_function("random", 0, random_int)
    db.create_function("randomblob", 1, random_blob)
    failed = False
    st = dict(DEFAULTS)


def random_int():
    return int.from_bytes(os.urandom(8), "little", signed=True)


def random_blob(n):
    # As SQLite's: N below 1 is 1, text is read as a number.
    try:
        n = int(float(n))
    except (TypeError, ValueError):
        n = 0
    if n > 1_000_000_000:
        raise OverflowError("string or blob too big")
    return os.urandom(max(n, 1))


DEFAULTS = {
    "mode": "list",
    "table": '"table"',
    "headers": False,
    "headers_set": False,
    "colsep": "|",
    "rowsep": "\n",
    "null": "",
    "widths": [],
    "wrap": 60,
    "wordwrap": False,
    "quote": False,
}
st = dict(DEFAULTS)


def load_settings():
    try:
        with open(SETTINGS, encoding="utf-8") as f:
            saved = f.read()
    except (OSError, ValueError):
        return
    if saved.startswith("{"):
        try:
            saved = json.loads(saved)
        except ValueError:
            return
        if not isinstance(saved, dict):
            return
        for key, value in saved.items():
            if key in DEFAULTS and type(value) is type(DEFAULTS[key]):
                st[key] = value
        if not all(type(w) is int for w in st["widths"]):
            st["widths"] = []
        if st["mode"] not in MODE_NAMES:
            st["mode"] = "list"
        return
    # The first format: three lines, mode (list, csv, tabs or line), on|off, separator.
    try:
        mode, headers, separator = saved.split("\n", 2)
    except ValueError:
        return
    st["headers"] = st["headers_set"] = headers == "on"
    st["colsep"] = separator
    if mode == "tabs":
        st["colsep"] = "\t"
    elif mode == "csv":
        st["mode"], st["colsep"], st["rowsep"] = "csv", ",", "\r\n"
    elif mode == "line":
        st["mode"] = "line"


def keep_settings():
    if SETTINGS is None:
        return
    with open(SETTINGS, "w", encoding="utf-8") as f:
        json.dump(st, f)


# Values as the shell shows them (sqlite3_column_text), and sqlite3's printf("%!.Ng").

def _ld(n, d):
    """n/d rounded to a long double (64-bit significand, ties to even), as n/d."""
    if n == 0:
        return (0, 1)
    e = n.bit_length() - d.bit_length() - 64
    while True:
        den = d << e if e >= 0 else d
        q, r = divmod(n if e >= 0 else n << -e, den)
        if q >= 1 << 64:
            e += 1
        elif q < 1 << 63:
            e -= 1
        else:
            break
    if 2 * r > den or (2 * r == den and q & 1):
        q += 1
    return (q << e, 1) if e >= 0 else (q, 1 << -e)


def _mul(a, b):
    return _ld(a[0] * b[0], a[1] * b[1])


def _ge(a, b):
    return a[0] * b[1] >= b[0] * a[1]


_E100, _E10, _TEN, _ONE = (1e100).as_integer_ratio(), (1e10).as_integer_ratio(), (10, 1), (1, 1)
_EM8, _E8, _TENTH = (1e-8).as_integer_ratio(), (1e8).as_integer_ratio(), (0.1).as_integer_ratio()
_ROUND = [5.0e-01, 5.0e-02, 5.0e-03, 5.0e-04, 5.0e-05, 5.0e-06, 5.0e-07, 5.0e-08, 5.0e-09, 5.0e-10]


def _units(num, den):
    """num/den (units of 2**-63, at least 2**63 of them) rounded to a long double."""
    q, r = divmod(num, den)
    shift = q.bit_length() - 64
    if shift > 0:
        q, r = divmod(num, den << shift)
        den <<= shift
    if 2 * r > den or (2 * r == den and q & 1):
        q += 1
    return q << shift if shift > 0 else q


@functools.lru_cache(maxsize=4096)
def fmt_g(r, precision):
    """sqlite3_snprintf("%!.<precision>g", r), digit for digit (x86 long doubles)."""
    if r != r:
        return "NaN"
    prefix = ""
    if r < 0:
        r, prefix = -r, "-"
    if r == float("inf"):
        return prefix + "Inf"
    if r == 0:
        return "0.0"
    if precision > 0:
        precision -= 1
    idx = precision
    rounder = _ROUND[idx % 10]
    while idx >= 10:
        rounder *= 1.0e-10
        idx -= 10
    # The value scaled into [1, 10) as a long double, in units of 2**-63: M.
    n, d = r.as_integer_ratio()
    if 1.0 <= r < 1e26:
        # The powers of ten the shell scales by are exact: one rounding.
        exp = len(str(int(r))) - 1
        big = d * 10 ** exp
        m = _units(n << 63, big)
    elif 1e-3 <= r < 1.0:
        # At most three exact multiplications by ten.
        exp = 0
        while n * 10 ** -exp < d:
            exp -= 1
        m = (n * 10 ** -exp << 63) // d
    else:
        exp, v = 0, (n, d)
        scale = _ONE
        for step, k in ((_E100, 100), (_E10, 10), (_TEN, 1)):
            while _ge(v, _mul(step, scale)) and exp <= 350:
                scale = _mul(scale, step)
                exp += k
        v = _ld(v[0] * scale[1], v[1] * scale[0])
        while not _ge(v, _EM8):
            v = _mul(v, _E8)
            exp -= 8
        while not _ge(v, _ONE):
            v = _mul(v, _TEN)
            exp -= 1
        m = (v[0] << 63) // v[1]
    rn, rd = rounder.as_integer_ratio()
    m = _units(m * rd + (rn << 63), rd)
    if m >= 10 << 63:
        m = _units(m * _TENTH[0], _TENTH[1])
        exp += 1
    if exp < -4 or exp > precision:
        as_exp, e2 = True, 0
    else:
        as_exp, e2 = False, exp
        precision -= exp
    # Digits as the shell makes them: take the integer part, multiply the rest by ten
    # (a long double again), at most 26 significant digits.
    leading = 1 if e2 < 0 else e2 + 1
    zeros = 0
    if e2 + 1 < 0:
        zeros = -(e2 + 1)
        precision -= zeros
    wanted = min(leading * (e2 >= 0) + max(precision, 0), 26)
    made = []
    for _ in range(wanted):
        d = m >> 63
        made.append(d)
        m = (m - (d << 63)) * 10
        shift = m.bit_length() - 64
        if shift > 0:
            rest = m & ((1 << shift) - 1)
            m >>= shift
            half = 1 << (shift - 1)
            if rest > half or (rest == half and m & 1):
                m += 1
            m <<= shift
    made = "".join(chr(48 + d) for d in made)
    total = leading * (e2 >= 0) + max(precision, 0)
    made += "0" * (total - len(made))
    if e2 < 0:
        body = "0." + "0" * zeros + made
    else:
        body = made[:leading] + "." + made[leading:]
    s = (prefix + body).rstrip("0")
    if s.endswith("."):
        s += "0"
    if as_exp:
        e = -exp if exp < 0 else exp
        s += ("e-" if exp < 0 else "e+") + (str(e // 100) if e >= 100 else "") + "%02d" % (e % 100)
    return s


def real_15(r):
    """sqlite3_column_text of a REAL: "%!.15g"."""
    a = -r if r < 0 else r
    if 1e-3 <= a < 1e26:
        # There the shell's long doubles round as exactly as Python does, but for
        # values next to a tie at the 15th digit.
        tail = "%.24e" % a
        if not "4980" <= tail[16:20] <= "5020":
            s = "%.15g" % r
            if "e" in s:
                mantissa, exponent = s.split("e")
                return (mantissa if "." in mantissa else mantissa + ".0") + "e" + exponent
            return s if "." in s else s + ".0"
    return fmt_g(r, 15)


def text(value):
    """The value as sqlite3_column_text gives it to the shell, or None for NULL."""
    if value is None:
        return None
    if isinstance(value, float):
        return real_15(value)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "surrogateescape")
    elif not isinstance(value, str):
        return str(value)
    return value.split("\0", 1)[0]


def shown(value):
    s = text(value)
    return st["null"] if s is None else s


def real_20(r):
    return fmt_g(r, 20)


def real_json(r):
    if r in (float("inf"), float("-inf")):
        return "1e999" if r > 0 else "-1e999"
    return fmt_g(r, 20)


def real_insert(r):
    if r in (float("inf"), float("-inf")):
        return "1e999" if r > 0 else "-1e999"
    if r == int(r) and -(2 ** 63) <= r < 2 ** 63:
        return "%d.0" % int(r)
    return fmt_g(r, 20)


def hex_blob(b):
    return "X'" + b.hex() + "'"


KEYWORDS = set("""ABORT ACTION ADD AFTER ALL ALTER ALWAYS ANALYZE AND AS ASC ATTACH
AUTOINCREMENT BEFORE BEGIN BETWEEN BY CASCADE CASE CAST CHECK COLLATE COLUMN COMMIT
CONFLICT CONSTRAINT CREATE CROSS CURRENT CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP
DATABASE DEFAULT DEFERRABLE DEFERRED DELETE DESC DETACH DISTINCT DO DROP EACH ELSE END
ESCAPE EXCEPT EXCLUDE EXCLUSIVE EXISTS EXPLAIN FAIL FILTER FIRST FOLLOWING FOR FOREIGN
FROM FULL GENERATED GLOB GROUP GROUPS HAVING IF IGNORE IMMEDIATE IN INDEX INDEXED
INITIALLY INNER INSERT INSTEAD INTERSECT INTO IS ISNULL JOIN KEY LAST LEFT LIKE LIMIT
MATCH MATERIALIZED NATURAL NO NOT NOTHING NOTNULL NULL NULLS OF OFFSET ON OR ORDER OTHERS
OUTER OVER PARTITION PLAN PRAGMA PRECEDING PRIMARY QUERY RAISE RANGE RECURSIVE REFERENCES
REGEXP REINDEX RELEASE RENAME REPLACE RESTRICT RETURNING RIGHT ROLLBACK ROW ROWS SAVEPOINT
SELECT SET TABLE TEMP TEMPORARY THEN TIES TO TRANSACTION TRIGGER UNBOUNDED UNION UNIQUE
UPDATE USING VACUUM VALUES VIEW VIRTUAL WHEN WHERE WINDOW WITH WITHOUT""".split())


def needs_quotes(name):
    return not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name.upper() in KEYWORDS


def identifier(name):
    if needs_quotes(name):
        return '"' + name.replace('"', '""') + '"'
    return name


def quoted_string(s):
    return "'" + s.replace("'", "''") + "'"


def quoted_escaped_string(s):
    if "\n" not in s and "\r" not in s:
        return quoted_string(s)

    def unused(a, b):
        if a not in s:
            return a
        if b not in s:
            return b
        i = 0
        while "(%s%u)" % (a, i) in s:
            i += 1
        return "(%s%u)" % (a, i)

    nl = unused("\\n", "\\012") if "\n" in s else None
    cr = unused("\\r", "\\015") if "\r" in s else None
    body = quoted_string(s)
    if nl:
        body = body.replace("\n", nl)
    if cr:
        body = body.replace("\r", cr)
    if cr:
        body = "replace(" + body + ",'" + cr + "',char(13))"
    if nl:
        body = "replace(" + body + ",'" + nl + "',char(10))"
    return body


def json_string(s):
    escaped = []
    for c in s:
        if c in '\\"':
            escaped.append("\\" + c)
        elif c <= "\x1f":
            escaped.append({"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c, "\\u%04x" % ord(c)))
        else:
            escaped.append(c)
    return '"' + "".join(escaped) + '"'


def c_string(s):
    escaped = []
    for b in s.encode("utf-8", "surrogateescape"):
        c = chr(b)
        if c == "\\":
            escaped.append("\\\\")
        elif c == '"':
            escaped.append('\\"')
        elif c in "\t\n\r":
            escaped.append({"\t": "\\t", "\n": "\\n", "\r": "\\r"}[c])
        elif not 32 <= b < 127:
            escaped.append("\\%03o" % b)
        else:
            escaped.append(c)
    return '"' + "".join(escaped) + '"'


def html_string(s):
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


def csv_field(s):
    if s is None:
        return st["null"]
    if s == "" or re.search("[\x00-\x20\"'\x7f-\U0010ffff]", s) or st["colsep"] in s:
        return '"' + s.replace('"', '""') + '"'
    return s


def sql_literal(value, real):
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return real(value)
    if isinstance(value, bytes):
        return hex_blob(value)
    if isinstance(value, str):
        return None
    return str(value)


# The streaming modes: one row at a time.

def show_rows(names, rows):
    mode, colsep, rowsep = st["mode"], st["colsep"], st["rowsep"]
    headers = st["headers"]
    w = out.write
    count = 0
    if mode == "line":
        width = max([5] + [len(n.encode("utf-8", "surrogateescape")) for n in names])
        for row in rows:
            if count:
                w(rowsep)
            count += 1
            for name, value in zip(names, row):
                pad = width - len(name.encode("utf-8", "surrogateescape"))
                w(" " * pad + name + " = " + shown(value) + rowsep)
    elif mode in ("list", "ascii"):
        for row in rows:
            if count == 0 and headers:
                w(colsep.join(names) + rowsep)
            count += 1
            w(colsep.join(shown(v) for v in row) + rowsep)
    elif mode == "csv":
        for row in rows:
            if count == 0 and headers:
                w(colsep.join(csv_field(n) for n in names) + rowsep)
            count += 1
            w(colsep.join(csv_field(text(v)) for v in row) + rowsep)
    elif mode == "tcl":
        for row in rows:
            if count == 0 and headers:
                w(colsep.join(c_string(n) for n in names) + rowsep)
            count += 1
            w(colsep.join(c_string(shown(v)) for v in row) + rowsep)
    elif mode == "html":
        for row in rows:
            if count == 0 and headers:
                w("<TR>" + "".join("<TH>" + html_string(n) + "</TH>\n" for n in names) + "</TR>\n")
            count += 1
            w("<TR>" + "".join("<TD>" + html_string(shown(v)) + "</TD>\n" for v in row) + "</TR>\n")
    elif mode == "insert":
        start = "INSERT INTO " + st["table"]
        if headers:
            start += "(" + ",".join(identifier(n) for n in names) + ")"
        for row in rows:
            fields = []
            for v in row:
                s = sql_literal(v, real_insert)
                fields.append(quoted_escaped_string(text(v)) if s is None else s)
            w(start + " VALUES(" + ",".join(fields) + ");\n")
    elif mode == "quote":
        for row in rows:
            if count == 0 and headers:
                w(colsep.join(quoted_string(n) for n in names) + rowsep)
            count += 1
            fields = []
            for v in row:
                s = sql_literal(v, real_20)
                fields.append(quoted_string(text(v)) if s is None else s)
            w(colsep.join(fields) + rowsep)
    elif mode == "json":
        keys = [json_string(n) + ":" for n in names]
        for row in rows:
            w(",\n{" if count else "[{")
            count += 1
            fields = []
            for key, v in zip(keys, row):
                if v is None:
                    s = "null"
                elif isinstance(v, float):
                    s = real_json(v)
                elif isinstance(v, bytes):
                    s = json_string(v.decode("utf-8", "surrogateescape"))
                elif isinstance(v, str):
                    s = json_string(text(v))
                else:
                    s = str(v)
                fields.append(key + s)
            w(",".join(fields) + "}")
        if count:
            w("]\n")
    elif mode == "count":
        for row in rows:
            count += 1
        if count:
            w("%d row%s\n" % (count, "" if count == 1 else "s"))
    else:  # off
        for row in rows:
            pass


# The columnar modes (column, table, markdown, box): all rows first, then the widths.

def is_alnum(b):
    return 48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122


def is_continuation(c):
    """A byte the shell counts as part of the character before it (in text that is
    not UTF-8)."""
    return "\udc80" <= c <= "\udcbf"


def display_width(z):
    if z.isascii() or z.isprintable():
        return len(z)
    return sum(1 for c in z if not is_continuation(c))


def translate(text_, width, word_wrap):
    """The first display line of the text (at most width characters, tabs expanded),
    and the rest of it for the next line (or None), worked out on its UTF-8 bytes as
    the shell does."""
    width = abs(width) or 1000000
    if (len(text_) < width or (len(text_) == width and not word_wrap)) and text_.isprintable():
        return text_, None
    z = text_.encode("utf-8", "surrogateescape") + b"\0"
    i = n = 0
    while n < width:
        if z[i] >= 32:
            n += 1
            i += 1
            while z[i] & 0xC0 == 0x80:
                i += 1
        elif z[i] == 9:
            n += 1
            while n & 7 and n < width:
                n += 1
            i += 1
        else:
            break
    k = i
    if n >= width and word_wrap:
        k = i
        while k > i // 2 and z[k - 1] not in b" \t\n\v\f\r":
            k -= 1
        if k <= i // 2:
            k = i
            while k > i // 2 and not (is_alnum(z[k - 1]) != is_alnum(z[k]) and z[k] & 0xC0 != 0x80):
                k -= 1
        if k <= i // 2:
            k = i
        else:
            i = k
            while z[i] == 32:
                i += 1
    if n >= width and z[i] >= 32:
        tail = z[i:-1]
    elif z[i] == 13 and z[i + 1] == 10:
        tail = z[i + 2:-1] or None
    elif z[i] == 0 or z[i + 1] == 0:
        tail = None
    else:
        tail = z[i + 1:-1]
    shown_text, n, i = bytearray(), 0, 0
    while i < k:
        if z[i] >= 32:
            n += 1
            shown_text.append(z[i])
            i += 1
            while z[i] & 0xC0 == 0x80:
                shown_text.append(z[i])
                i += 1
        elif z[i] == 9:
            n += 1
            shown_text.append(32)
            while n & 7 and n < width:
                n += 1
                shown_text.append(32)
            i += 1
        else:
            break
    if tail is not None:
        tail = tail.decode("utf-8", "surrogateescape")
    return shown_text.decode("utf-8", "surrogateescape"), tail


def quoted_column(v):
    if v is None:
        return "NULL"
    if isinstance(v, (int, float)):
        return text(v)
    if isinstance(v, bytes):
        return "x'" + v.hex() + "'"
    return quoted_string(text(v))


def width_print(w, z):
    aw, n = abs(w), display_width(z)
    if n >= aw:
        i = n = 0
        while i < len(z) and n < aw:
            if not is_continuation(z[i]):
                n += 1
            i += 1
        while i < len(z) and is_continuation(z[i]):
            i += 1
        return z[:i]
    return " " * (aw - n) + z if w < 0 else z + " " * (aw - n)


BOX = {"h": "\u2500", "v": "\u2502"}


def show_columns(names, rows):
    rows = iter(rows)
    row = next(rows, None)
    if row is None:
        return
    mode = st["mode"]
    ncol = len(names)
    if len(st["widths"]) < ncol:
        st["widths"] = st["widths"] + [0] * (ncol - len(st["widths"]))
        keep_settings()
    widths = st["widths"][:ncol]
    wraps = [abs(w or st["wrap"]) for w in widths]
    ww, quote = st["wordwrap"], st["quote"]
    header = [translate(name, wx, ww)[0] for name, wx in zip(names, wraps)]
    data, divs, multi = [], [], False
    tails, more = [None] * ncol, False
    while True:
        use_tails, more = more, False
        cells, div = [], True
        for i in range(ncol):
            if use_tails:
                z = tails[i] or ""
            elif quote:
                z = quoted_column(row[i])
            else:
                z = shown(row[i])
            cell, tails[i] = translate(z, wraps[i], ww)
            if tails[i] is not None:
                more, div, multi = True, False, True
            cells.append(cell)
        data.append(cells)
        divs.append(div)
        if not more:
            row = next(rows, None)
            if row is None:
                break
    actual = [abs(w) for w in widths]
    for line in [header] + data:
        for j, cell in enumerate(line):
            actual[j] = max(actual[j], display_width(cell))
    signed = [-a if w < 0 else a for a, w in zip(actual, widths)]
    w = out.write

    def rule(left, middle, right, fill):
        return left + middle.join(fill * (a + 2) for a in actual) + right + "\n"

    def centered(cells):
        return [" " * ((a - display_width(c)) // 2) + c + " " * ((a - display_width(c) + 1) // 2)
                for a, c in zip(actual, cells)]

    if mode == "column":
        colsep, rowsep, start = "  ", "\n", ""
        if st["headers"]:
            w("  ".join(width_print(s, c) for s, c in zip(signed, header)) + "\n")
            w("  ".join("-" * a for a in actual) + "\n")
    elif mode == "table":
        colsep, rowsep, start = " | ", " |\n", "| "
        w(rule("+", "+", "+", "-"))
        w("| " + " | ".join(centered(header)) + " |\n")
        w(rule("+", "+", "+", "-"))
    elif mode == "markdown":
        colsep, rowsep, start = " | ", " |\n", "| "
        w("| " + " | ".join(centered(header)) + " |\n")
        w(rule("|", "|", "|", "-"))
    else:
        colsep, rowsep, start = " \u2502 ", " \u2502\n", "\u2502 "
        w(rule("\u250c", "\u252c", "\u2510", "\u2500"))
        w("\u2502 " + " \u2502 ".join(centered(header)) + " \u2502\n")
        w(rule("\u251c", "\u253c", "\u2524", "\u2500"))
    for r, cells in enumerate(data):
        w(start + colsep.join(width_print(s, c) for s, c in zip(signed, cells)) + rowsep)
        if multi and divs[r] and r + 1 < len(data):
            if mode == "table":
                w(rule("+", "+", "+", "-"))
            elif mode == "box":
                w(rule("\u251c", "\u253c", "\u2524", "\u2500"))
            elif mode == "column":
                w("\n")
    if mode == "table":
        w(rule("+", "+", "+", "-"))
    elif mode == "box":
        w(rule("\u2514", "\u2534", "\u2518", "\u2500"))


def show_plan(rows):
    """EXPLAIN QUERY PLAN as the shell draws it."""
    rows = [(r[0], r[1], text(r[3]) or "") for r in rows]
    if not rows:
        return
    w = out.write
    if rows[0][2].startswith("-"):
        if len(rows) == 1:
            return
        w(rows[0][2][3:] + "\n")
        rows = rows[1:]
    else:
        w("QUERY PLAN\n")

    def level(parent, prefix):
        children = [r for r in rows if r[1] == parent]
        for i, r in enumerate(children):
            last = i + 1 == len(children)
            w(prefix + ("`--" if last else "|--") + r[2] + "\n")
            if len(prefix) < 93:
                level(r[0], prefix + ("   " if last else "|  "))

    level(0, "")


COLUMNAR = ("column", "table", "markdown", "box")
PLAN = re.compile(r"(?:\s|--[^\n]*(?:\n|$)|/\*.*?(?:\*/|$))*explain\s+query\s+plan\b", re.I | re.S)


def show(cursor, statement):
    if cursor.description is None:
        return
    names = [d[0] for d in cursor.description]
    if PLAN.match(statement):
        show_plan(cursor)
    elif st["mode"] in COLUMNAR:
        show_columns(names, cursor)
    else:
        show_rows(names, cursor)


def error(line, message):
    global failed
    failed = True
    out.flush()
    print("Error: near line %d: %s" % (line, message), file=sys.stderr)


def warn(message):
    out.flush()
    print(message, file=sys.stderr)


class Usage(Exception):
    """A dot-command used wrongly: the message says how."""


# Dot-commands.

def boolean(arg):
    if re.fullmatch(r"[0-9]+|0x[0-9a-fA-F]+", arg):
        return integer(arg) != 0
    if arg.lower() in ("on", "yes"):
        return True
    if arg.lower() not in ("off", "no"):
        warn('ERROR: Not a boolean value: "%s". Assuming "no".' % arg)
    return False


def integer(arg):
    m = re.match(r"\s*([-+]?)(0x[0-9a-fA-F]+|[0-9]+)", arg)
    if not m:
        return 0
    n = int(m.group(2), 0) if m.group(2).startswith("0x") else int(m.group(2))
    return -n if m.group(1) == "-" else n


BACKSLASHES = {"a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r",
               '"': '"', "'": "'", "\\": "\\"}


def unescape(s):
    def one(m):
        c = m.group(1)
        if c[0] in "01234567":
            b = int(c, 8) & 0xff
            return chr(b) if b < 0x80 else chr(0xdc00 + b)  # the byte itself
        return BACKSLASHES.get(c, c)
    return re.sub(r"\\([0-7]{1,3}|.)", one, s, flags=re.S)


def split_arguments(line):
    """The shell's words: 'single' and "double" quotes, backslash escapes."""
    words, i, size = [], 0, len(line)
    while i < size:
        while i < size and line[i].isspace():
            i += 1
        if i >= size:
            break
        if line[i] in "'\"":
            delim = line[i]
            i += 1
            start = i
            while i < size and line[i] != delim:
                if line[i] == "\\" and delim == '"' and i + 1 < size:
                    i += 1
                i += 1
            word = line[start:i]
            i += 1
            words.append(unescape(word) if delim == '"' else word)
        else:
            start = i
            while i < size and not line[i].isspace():
                i += 1
            words.append(unescape(line[start:i]))
    return words


MODES = ["lines", "columns", "list", "html", "tcl", "csv", "tabs", "insert", "quote", "ascii",
         "markdown", "table", "box", "count", "off", "json"]
MODE_NAMES = ["line", "column", "list", "html", "tcl", "csv", "insert", "quote", "ascii",
              "markdown", "table", "box", "count", "off", "json"]


def set_mode(args):
    wrap, word_wrap, quote = 60, False, False
    mode = table = None
    i = 0
    while i < len(args):
        a = args[i]
        option = a.lstrip("-") if a.startswith("-") else None
        if option == "wrap" and i + 1 < len(args):
            i += 1
            wrap = integer(args[i])
        elif option == "ww":
            word_wrap = True
        elif option == "wordwrap" and i + 1 < len(args):
            i += 1
            word_wrap = boolean(args[i])
        elif option == "quote":
            quote = True
        elif option == "noquote":
            quote = False
        elif mode is None:
            mode = a
            if a == "qbox":
                mode, wrap, word_wrap, quote = "box", 60, False, True
        elif table is None:
            table = a
        elif a.startswith("-"):
            raise Usage("unknown option: %s (options: --noquote, --quote, --wordwrap on|off, --wrap N, --ww)" % a)
        else:
            raise Usage('extra argument: "%s"' % a)
        i += 1
    if mode is None:
        current = st["mode"]
        if current in COLUMNAR:
            out.write("current output mode: %s --wrap %d --wordwrap %s --%squote\n" % (
                current, st["wrap"], "on" if st["wordwrap"] else "off", "" if st["quote"] else "no"))
        else:
            out.write("current output mode: %s\n" % current)
        mode = current
    name = next((m for m in MODES if m.startswith(mode)), None)
    if name is None:
        raise Usage("mode should be one of: ascii box column csv html insert json line list "
                    "markdown qbox quote table tabs tcl")
    name = {"lines": "line", "columns": "column"}.get(name, name)
    if name == "line":
        st["rowsep"] = "\n"
    elif name == "column":
        if not st["headers_set"]:
            st["headers"] = True
        st["rowsep"] = "\n"
    elif name in ("list", "tcl", "csv", "quote", "ascii"):
        st["colsep"], st["rowsep"] = {"list": ("|", "\n"), "tcl": (" ", "\n"), "csv": (",", "\r\n"),
                                      "quote": (",", "\n"), "ascii": ("\x1f", "\x1e")}[name]
    elif name == "tabs":
        name, st["colsep"] = "list", "\t"
    elif name == "insert":
        st["table"] = identifier(table or "table")
    if name in COLUMNAR:
        st["wrap"], st["wordwrap"], st["quote"] = wrap, word_wrap, quote
    st["mode"] = name
    keep_settings()


def list_names(args, indexes):
    if len(args) > 1:
        raise Usage("Usage: .%s ?PATTERN?" % ("indexes" if indexes else "tables"))
    parts = []
    for _, schema, _ in db.execute("pragma database_list").fetchall():
        if schema is None:
            continue
        select = "SELECT name FROM " if schema.lower() == "main" else "SELECT " + quoted_string(schema) + "||'.'||name FROM "
        select += '"' + schema.replace('"', '""') + '".sqlite_schema '
        if indexes:
            select += " WHERE type='index'   AND tbl_name LIKE :pattern"
        else:
            select += " WHERE type IN ('table','view')   AND name NOT LIKE 'sqlite_%'   AND name LIKE :pattern"
        parts.append(select)
    names = [text(r[0]) or "" for r in db.execute(" UNION ALL ".join(parts) + " ORDER BY 1", {"pattern": args[0] if args else "%"})]
    if not names:
        return
    lengths = [len(n.encode("utf-8", "surrogateescape")) for n in names]
    widest = max(lengths)
    columns = max(80 // (widest + 2), 1)
    lines = (len(names) + columns - 1) // columns
    for i in range(lines):
        cells = []
        for j in range(i, len(names), lines):
            cells.append(("" if j < lines else "  ") + names[j] + " " * (widest - lengths[j]))
        out.write("".join(cells) + "\n")


SCHEMA_PREFIXES = ["TABLE", "INDEX", "UNIQUE INDEX", "VIEW", "TRIGGER", "VIRTUAL TABLE"]


def add_schema(sql, schema, name):
    if sql is None or not sql.startswith("CREATE "):
        return sql
    for prefix in SCHEMA_PREFIXES:
        n = len(prefix)
        if sql[7:7 + n] == prefix and sql[7 + n:8 + n] == " ":
            z = None
            if schema is not None:
                if needs_quotes(schema) and schema.lower() != "temp":
                    z = '%s "%s".%s' % (sql[:7 + n], schema.replace('"', '""'), sql[8 + n:])
                else:
                    z = "%s %s.%s" % (sql[:7 + n], schema, sql[8 + n:])
            if name is not None and prefix == "VIEW":
                columns = [text(r[1]) or "" for r in db.execute(
                    'PRAGMA "%s".table_info(%s)' % ((schema or "main").replace('"', '""'), quoted_string(name)))]
                if columns:
                    fake = ""
                    if schema is not None:
                        fake = (schema if schema.lower() == "temp" else identifier(schema)) + "."
                    fake += identifier(name) + "(" + ",".join(identifier(c) for c in columns) + ")"
                    z = (z or sql) + "\n/* " + fake + " */"
            if z is not None:
                return z
    return sql


def schema_line(sql):
    if "/*" in sql or "--" in sql:
        for end in ("", "*/", "\n"):
            if sqlite3.complete_statement(sql + end + ";"):
                sql += end
                break
    if re.match(r"CREATE TABLE ['\"]", sql):
        return "CREATE TABLE IF NOT EXISTS " + sql[13:] + ";\n"
    return sql + ";\n"


def schema(args):
    if len(args) > 1:
        raise Usage("Usage: .schema ?--indent? ?--nosys? ?LIKE-PATTERN?")
    db.create_function("shell_add_schema", 3, add_schema)
    parts = []
    for number, (_, schema_name, _) in enumerate(db.execute("pragma database_list").fetchall(), 1):
        parts.append("SELECT shell_add_schema(sql,%s,name) AS sql, type, tbl_name, name, rowid, %d AS snum, %s AS sname FROM %s.sqlite_schema" % (
            "NULL" if schema_name.lower() == "main" else quoted_string(schema_name), number,
            quoted_string(schema_name), identifier(schema_name)))
    where = ""
    params = {}
    if args:
        pattern = args[0]
        glob = any(c in pattern for c in "*?[")
        column = "lower(printf('%s.%s',sname,tbl_name))" if "." in pattern else "lower(tbl_name)"
        where = column + (" GLOB :pattern" if glob else " LIKE :pattern ESCAPE '\\' ") + " AND "
        params = {"pattern": pattern}
    query = "SELECT sql FROM (" + " UNION ALL ".join(parts) + ") WHERE " + where + "sql IS NOT NULL ORDER BY snum, rowid"
    for (sql,) in db.execute(query, params).fetchall():
        out.write(schema_line(text(sql)))


def show_settings():
    w = out.write
    mode = st["mode"]
    if mode in COLUMNAR:
        mode += " --wrap %d --wordwrap %s --%squote" % (
            st["wrap"], "on" if st["wordwrap"] else "off", "" if st["quote"] else "no")
    for name, value in (("echo", "off"), ("eqp", "off"), ("explain", "auto"),
                        ("headers", "on" if st["headers"] else "off"), ("mode", mode),
                        ("nullvalue", c_string(st["null"])), ("output", "stdout"),
                        ("colseparator", c_string(st["colsep"])),
                        ("rowseparator", c_string(st["rowsep"])), ("stats", "off"),
                        ("width", "".join("%d " % n for n in st["widths"])),
                        ("filename", DATABASE)):
        w("%12.12s: %s\n" % (name, value))


def unique_columns(names, source):
    """Column names for a new table, renamed as the shell's .import renames them."""
    names = [n if n else "?" for n in names]
    repeated = {n for n in names if names.count(n) > 1}
    if not repeated:
        return names
    digits = len(str(len(names)))
    while True:
        renamed = [n + "_%0*d" % (digits, i) if n in repeated else n for i, n in enumerate(names, 1)]
        if len(set(renamed)) == len(renamed):
            break
        digits += 1
    warn("Columns renamed during .import %s due to duplicates:" % source)
    changes = ['"%s" to "%s"' % (a, b) for a, b in zip(names, renamed) if a != b]
    warn(",\n".join(changes))
    return renamed


def import_file(args):
    delimiter = st["colsep"] if len(st["colsep"]) == 1 and st["colsep"] != "|" else ","
    ascii_mode = st["mode"] == "ascii"
    from_mode = True
    skip, files = 0, []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--csv", "-csv"):
            delimiter, ascii_mode, from_mode = ",", False, False
        elif a in ("--ascii", "-ascii"):
            ascii_mode, from_mode = True, False
        elif a in ("--skip", "-skip") and i + 1 < len(args):
            i += 1
            skip = integer(args[i])
        elif a in ("-v", "--v"):
            pass
        elif a.startswith("-") and a != "-":
            raise Usage("unknown option %s; usage: .import [--csv|--ascii] [--skip N] FILE TABLE" % a)
        else:
            files.append(a)
        i += 1
    if len(files) != 2:
        raise Usage("usage: .import [--csv|--ascii] [--skip N] FILE TABLE")
    source, table = files
    if from_mode and st["mode"] == "csv" and st["rowsep"] == "\r\n":
        # As the shell does: CSV's output row separator becomes the input one, "\n".
        st["rowsep"] = "\n"
        keep_settings()
    try:
        if source in ("-", "/dev/stdin"):
            data = sys.stdin.buffer.read()
        else:
            with open(source, "rb") as f:
                data = f.read()
    except OSError:
        raise Usage('cannot open "%s"' % source)
    data = data.decode("utf-8-sig", "replace")
    if ascii_mode:
        rows = [r.split("\x1f") for r in data.split("\x1e")]
        if rows and rows[-1] == [""]:
            rows.pop()
    else:
        rows, lines, previous = [], [], 0
        reader = csv.reader(io.StringIO(data), delimiter=delimiter)
        for row in reader:
            rows.append(row or [""])
            lines.append(previous + 1)
            previous = reader.line_num
    if ascii_mode:
        lines = list(range(1, len(rows) + 1))
    rows, lines = rows[skip:], lines[skip:]
    if not rows:
        return
    quoted = '"' + table.replace('"', '""') + '"'
    exists = db.execute("select 1 from sqlite_master where name = ? collate nocase", (table,)).fetchone()
    if not exists:
        columns = unique_columns(rows[0], source)
        spec = ""
        for n, c in enumerate(columns, 1):
            if n > 1:
                spec += ", " if (n - 1) % 4 else ",\n "
            spec += '"%s" TEXT' % c.replace('"', '""')
        db.execute('CREATE TABLE "main".%s(\n%s)' % (quoted, spec))
        rows, lines = rows[1:], lines[1:]
    width = len(db.execute('select * from "main".%s limit 0' % quoted).description)
    insert = 'insert into "main".%s values (%s)' % (quoted, ", ".join("?" * width))
    db.execute("savepoint runbox_import")
    try:
        for line, row in zip(lines, rows):
            if len(row) < width:
                warn("%s:%d: expected %d columns but found %d - filling the rest with NULL" % (source, line, width, len(row)))
                row = row + [None] * (width - len(row))
            elif len(row) > width:
                warn("%s:%d: expected %d columns but found %d - extras ignored" % (source, line, width, len(row)))
                row = row[:width]
            db.execute(insert, row)
        db.execute("release runbox_import")
    except BaseException:
        db.execute("rollback to runbox_import")
        db.execute("release runbox_import")
        raise


HELP = """\
.exit ?CODE?             Exit this program with return-code CODE
.headers on|off          Turn display of headers on or off
.help                    Show this message
.import FILE TABLE       Import data from FILE into TABLE (--csv, --ascii, --skip N)
.indexes ?TABLE?         Show names of indexes
.mode MODE ?OPTIONS?     Set output mode: ascii box column csv html insert json line
                         list markdown qbox quote table tabs tcl count off
.nullvalue STRING        Use STRING in place of NULL values
.print STRING...         Print literal STRING
.quit                    Stop interpreting input
.schema ?PATTERN?        Show the CREATE statements matching PATTERN
.separator COL ?ROW?     Change the column and row separators
.show                    Show the current values for various settings
.tables ?TABLE?          List names of tables matching LIKE pattern TABLE
.width NUM1 NUM2 ...     Set minimum column widths for columnar output
"""

# (command, the shortest prefix the sqlite3 shell takes for it)
COMMANDS = [("exit", 2), ("headers", 1), ("help", 3), ("import", 1), ("indexes", 3),
            ("indices", 3), ("mode", 1), ("nullvalue", 2), ("print", 2), ("quit", 1),
            ("schema", 3), ("separator", 3), ("show", 3), ("tables", 2), ("width", 1)]
SUPPORTED = ("supported: .exit, .headers, .help, .import, .indexes, .mode, .nullvalue, "
             ".print, .quit, .schema, .separator, .show, .tables, .width")


class Stop(Exception):
    """.exit or .quit: the exit code (None: 1 if anything failed, else 0)."""


def dot(command, line):
    words = split_arguments(command[1:])
    if not words:
        return
    given, args = words[0], words[1:]
    name = next((c for c, n in COMMANDS if len(given) >= n and c.startswith(given)), None)
    if name == "headers" and len(args) == 1:
        st["headers"], st["headers_set"] = boolean(args[0]), True
        keep_settings()
    elif name == "headers":
        raise Usage("Usage: .headers on|off")
    elif name == "mode":
        set_mode(args)
    elif name == "separator":
        if args:
            st["colsep"] = args[0]
        if len(args) >= 2:
            st["rowsep"] = args[1]
        keep_settings()
        if not 1 <= len(args) <= 2:
            raise Usage("Usage: .separator COL ?ROW?")
    elif name == "nullvalue":
        if len(args) != 1:
            raise Usage("Usage: .nullvalue STRING")
        st["null"] = args[0]
        keep_settings()
    elif name == "width":
        st["widths"] = [integer(a) for a in args]
        keep_settings()
    elif name == "print":
        out.write(" ".join(args) + "\n")
    elif name in ("tables", "indexes", "indices"):
        list_names(args, name != "tables")
    elif name == "schema":
        schema(args)
    elif name == "show":
        if args:
            raise Usage("Usage: .show")
        show_settings()
    elif name == "help":
        out.write(HELP)
    elif name == "import":
        import_file(args)
    elif name in ("exit", "quit"):
        code = integer(args[0]) if name == "exit" and args else 0
        raise Stop(code or None)
    else:
        error(line, "unknown or unsupported command: %s (%s)" % (command, SUPPORTED))


def run(statement, line):
    if statement.strip(" \t\r\n;"):
        try:
            show(db.execute(statement), statement)
            out.flush()
        except (sqlite3.Error, ValueError) as e:
            error(line, e)
        except MemoryError:
            error(line, "out of memory")


def main(argv):
    if COMMAND:
        source = COMMAND_SOURCE
    else:
        load_settings()
        with open(argv[1], encoding="utf-8", errors="replace", newline="") as f:
            source = f.read()
    pending, start = "", 1
    # Lines end at "\n"; the shell drops a "\r" before it.
    lines = [(line[:-1] if line.endswith("\r") else line) + "\n" for line in source.split("\n")]
    lines[-1] = source.rsplit("\n", 1)[-1]
    for number, line in enumerate(lines, 1):
        if not pending.strip():
            start = number
            if line.lstrip().startswith("."):
                try:
                    dot(line.strip(), number)
                except Usage as e:
                    error(number, e)
                except (OSError, ValueError, sqlite3.Error, csv.Error) as e:
                    error(number, e)
                out.flush()
                continue
        pending += line
        # Run every complete statement the text holds so far.
        cut = 0
        while True:
            cut = pending.find(";", cut) + 1
            if cut == 0:
                break
            if sqlite3.complete_statement(pending[:cut]):
                run(pending[:cut], start)
                pending, cut, start = pending[cut:], 0, number
    run(pending, start)


def shell(argv, stdout=None):
    """Runs the shell on the command line `argv`; its exit status."""
    start(argv, stdout)
    try:
        main(argv)
        code = None
    except Stop as stop:
        code = stop.args[0]
    finally:
        out.flush()
    return code if code is not None else 1 if failed else 0


def run_file(path):
    """A run of runtime `sqlite`: the SQL in the file `path`."""
    os.makedirs("/.runbox", exist_ok=True)
    raise SystemExit(shell(["sqlite3", path]))


def run_command(cwd, args):
    """`sqlite3 ARGS` as a command of runbox's shell, in its working directory `cwd`."""
    raise SystemExit(shell(["sqlite3", "--command", cwd, *args]))


if __name__ == "__main__" and len(sys.argv) > 1:
    sys.exit(shell(sys.argv))
elif __name__ == "__main__":
    # runbox's snapshot of runtime `sqlite` (plugins.toml): this program runs once, as
    # the snapshot is taken, and is from then on the module `sqlite_shell` whose `run_file`
    # and `run_command` every run calls. Unbuffered standard streams keep the shell's
    # messages in the order written.
    import types
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
        write_through=True)
    sys.dont_write_bytecode = True
    sys.modules["sqlite_shell"] = types.ModuleType("sqlite_shell", __doc__)
    sys.modules["sqlite_shell"].__dict__.update(
        {name: value for name, value in globals().items() if not name.startswith("__")})
    # What the snapshot holds is never collected: no run pays a collection over it.
    import gc
    gc.freeze()
