"""Data work through `runbox mcp` over stdio, as a model does it: numpy, pandas, charts,
files in and out, long runs. Usage: data_work.py SCENARIO"""

import base64
import hashlib
import struct
import time

import anyio

from harness import (
    check_run,
    check_tool_error,
    completed,
    main,
    run_code,
    stdio_session,
    text_of,
)

PANDAS = """import numpy as np
import pandas as pd
df = pd.DataFrame({"team": [f"t{i % 4}" for i in range(1000)],
                   "points": np.arange(1000) % 13})
print(df.groupby("team")["points"].agg(["count", "sum"]).to_string())
"""

PANDAS_OUT = (
    "      count   sum\n"
    "team             \n"
    "t0      250  1494\n"
    "t1      250  1497\n"
    "t2      250  1500\n"
    "t3      250  1503\n"
)


async def numpy_and_pandas():
    """The p75 Runno's README shows failing, and a pandas groupby, with exact output."""
    async with stdio_session() as session:
        result = await run_code(session, runtime="python", code=(
            "import numpy\nprint(numpy.percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 75))"))
        check_run(result, completed("7.75\n"))
        result = await run_code(session, runtime="python", code=PANDAS)
        check_run(result, completed(PANDAS_OUT))
        result = await run_code(session, runtime="python", code=(
            "import sys, scipy, sklearn, matplotlib, numpy, pandas\n"
            "print(sys.version_info[:2], numpy.__version__, pandas.__version__)"))
        out = result.structured_content["stdout"]
        assert out.startswith("(3, 15) 2.5") and " 3.0" in out, out


def png_size(data):
    """(width, height) of a PNG, checking its signature and its IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13, (length, kind)
    return struct.unpack(">II", data[16:24])


async def plots():
    """plt.show() and plt.savefig() come back as PNG images a client shows; each show()
    saves new files, never over an earlier one's."""
    async with stdio_session() as session:
        result = await run_code(session, runtime="python", code=(
            "import matplotlib.pyplot as plt\n"
            "plt.plot([1, 2, 3], [3, 1, 2])\nplt.title('line')\nplt.show()\n"
            "plt.plot([1, 2, 3], [1, 2, 3])\nplt.show()\n"
            "fig, ax = plt.subplots(figsize=(4, 3), dpi=50)\nax.bar(['a', 'b'], [1, 2])\n"
            "fig.savefig('bars.png')\nprint('drawn')"))
        content = result.structured_content
        assert content["status"] == "completed" and content["exit_code"] == 0, content
        assert content["stdout"] == "drawn\n", content
        files = {f["path"]: f for f in content["files"]}
        assert sorted(files) == ["bars.png", "figure-1.png", "figure-2.png"], content["files"]
        images = [c for c in result.content if c.type == "image"]
        assert len(images) == 3, [c.type for c in result.content]
        pngs = [base64.b64decode(i.data) for i in images]
        sizes = [png_size(png) for png in pngs]
        assert all(i.mime_type == "image/png" for i in images), images
        # In path order: bars.png (4x3 in at 50 dpi), then the two figures (6.4x4.8 in at 100).
        assert sizes == [(200, 150), (640, 480), (640, 480)], sizes
        assert pngs[1] != pngs[2], "the second show() overwrote the first"
        for f in files.values():
            assert f["mime_type"] == "image/png" and f["returned"] is True, f
        assert "figure-2.png" in text_of(result), text_of(result)


async def display():
    """The last expression's value is shown, as in the Python REPL and Jupyter: a
    DataFrame's describe() as its table; nothing for None or after a `;`."""
    async with stdio_session() as session:
        result = await run_code(session, runtime="python", code=(
            "import pandas as pd\n"
            "df = pd.DataFrame({'a': [1, 2, 3, 4], 'b': [10.0, 20.0, 30.0, 40.0]})\n"
            "df.describe()"))
        content = result.structured_content
        assert content["status"] == "completed", content
        lines = content["stdout"].splitlines()
        assert lines[0].split() == ["a", "b"], content["stdout"]
        assert lines[1].split() == ["count", "4.000000", "4.000000"], content["stdout"]
        assert lines[2].split() == ["mean", "2.500000", "25.000000"], content["stdout"]
        for code, stdout in [("print('hi')", "hi\n"), ("x = 1\nx;", ""), ("None", ""),
                             ("[1, 'a']", "[1, 'a']\n"),
                             ("def f():\n    return 3\nf()", "3\n")]:
            result = await run_code(session, runtime="python", code=code)
            check_run(result, completed(stdout))


async def files_in_and_out():
    """A CSV in, summed; a binary file round-tripped through base64; a text file out as
    an embedded resource; unchanged inputs and the program itself are not listed."""
    async with stdio_session() as session:
        csv = "name,amount\n" + "".join(f"row{i},{i}\n" for i in range(1, 101))
        result = await run_code(session, runtime="python", files=[
            {"path": "data/sales.csv", "content": csv}], code=(
            "import csv\nrows = list(csv.DictReader(open('data/sales.csv')))\n"
            "print(sum(int(r['amount']) for r in rows))"))
        check_run(result, completed("5050\n"))

        blob = bytes(range(256)) * 40
        result = await run_code(session, runtime="python", files=[
            {"path": "in.bin", "content": base64.b64encode(blob).decode(), "encoding": "base64"}],
            code=("import hashlib\ndata = open('in.bin', 'rb').read()\n"
                  "print(len(data), hashlib.sha256(data).hexdigest())\n"
                  "open('out.bin', 'wb').write(data[::-1])\n"
                  "_ = open('report.txt', 'w').write('total: 42\\n')"))
        content = result.structured_content
        assert content["stdout"] == f"{len(blob)} {hashlib.sha256(blob).hexdigest()}\n", content
        listed = [(f["path"], f["size"], f["mime_type"], f["returned"]) for f in content["files"]]
        assert listed == [("out.bin", len(blob), "application/octet-stream", True),
                          ("report.txt", 10, "text/plain", True)], listed
        resources = {c.resource.uri.rsplit("/", 1)[-1]: c.resource for c in result.content
                     if c.type == "resource"}
        assert sorted(resources) == ["out.bin", "report.txt"], resources
        uris = {f["path"]: f["uri"] for f in content["files"]}
        for name, resource in resources.items():
            assert resource.uri == uris[name], (resource.uri, uris)
            assert resource.uri.startswith("runbox://"), resource.uri
        assert base64.b64decode(resources["out.bin"].blob) == blob[::-1]
        assert resources["out.bin"].mime_type == "application/octet-stream"
        assert resources["report.txt"].text == "total: 42\n"
        assert resources["report.txt"].mime_type == "text/plain"
        # Each stays readable at its uri.
        read = await session.read_resource(uris["out.bin"])
        assert base64.b64decode(read.contents[0].blob) == blob[::-1]

        # Every runtime gets files in and gives files out.
        for runtime, code in [
            ("quickjs", "std.writeFile('up.txt', std.loadFile('in.txt').toUpperCase())"),
            ("ruby", "File.write('up.txt', File.read('in.txt').upcase)"),
            ("php-cgi", "<?php file_put_contents('up.txt', strtoupper(file_get_contents('in.txt')));"),
            ("clang", "#include <stdio.h>\n#include <ctype.h>\nint main(void){FILE*i=fopen(\"in.txt\",\"r\"),*o=fopen(\"up.txt\",\"w\");int c;while((c=fgetc(i))!=EOF)fputc(toupper(c),o);fclose(o);return 0;}"),
        ]:
            result = await run_code(session, runtime=runtime, code=code, timeout_seconds=40,
                                    files=[{"path": "in.txt", "content": "hello"}])
            content = result.structured_content
            assert content["status"] == "completed" and content["exit_code"] == 0, (runtime, content)
            assert [f["path"] for f in content["files"]] == ["up.txt"], (runtime, content["files"])
            texts = [c.resource.text for c in result.content if c.type == "resource"]
            assert texts == ["HELLO"], (runtime, texts)


async def file_rules():
    """Every file cap and bad path is a tool error naming the file and the rule."""
    async with stdio_session() as session:
        cases = [
            ([{"path": "../etc/passwd", "content": "x"}], ["../etc/passwd", ".."]),
            ([{"path": "a//b", "content": "x"}], ["a//b", "empty part"]),
            ([{"path": "", "content": "x"}], ["empty"]),
            ([{"path": "a.txt", "content": "x", "encoding": "latin-1"}],
             ["a.txt", "latin-1", "utf-8", "base64"]),
            ([{"path": "a.bin", "content": "not base64!", "encoding": "base64"}],
             ["a.bin", "base64"]),
            ([{"path": f"f{i}", "content": ""} for i in range(101)], ["101", "at most 100"]),
            ([{"path": "big1", "content": "x" * (17 << 20)},
              {"path": "big2", "content": "x" * (17 << 20)}], ["big2", "32 MiB"]),
            ([{"path": "a.txt", "content": "1"}, {"path": "/a.txt", "content": "2"}],
             ["a.txt", "twice"]),
            ([{"path": "main.py", "content": "x"}], ["main.py", "runtime writes"]),
        ]
        for files, needles in cases:
            result = await run_code(session, runtime="python", code="print(1)", files=files)
            check_tool_error(result, *needles)
        # A leading slash means the same as none.
        result = await run_code(session, runtime="python", code="print(open('x/y.txt').read())",
                                files=[{"path": "/x/y.txt", "content": "ok"}])
        check_run(result, completed("ok\n"))

        # An output file too big to inline is linked, not sent.
        result = await run_code(session, runtime="python", code=(
            "_ = open('big.bin', 'wb').write(b'x' * (9 << 20))\n_ = open('small.txt', 'w').write('s')"))
        listed = [(f["path"], f["size"], f["returned"])
                  for f in result.structured_content["files"]]
        assert listed == [("big.bin", 9 << 20, False), ("small.txt", 1, True)], listed
        assert [c.type for c in result.content] == ["text", "resource_link", "resource"], (
            result.content)
        link = result.content[1]
        assert link.uri == result.structured_content["files"][0]["uri"], link
        assert link.name == "big.bin" and link.size == 9 << 20, link
        assert "linked: runbox://" in text_of(result), text_of(result)


async def sleeping():
    """time.sleep works within the deadline and counts against it."""
    async with stdio_session() as session:
        start = time.monotonic()
        result = await run_code(session, runtime="python", code=(
            "import time\nt = time.monotonic()\ntime.sleep(0.3)\n"
            "print(0.3 <= time.monotonic() - t < 2)"))
        check_run(result, completed("True\n"))
        result = await run_code(session, runtime="python", timeout_seconds=1, code=(
            "import time\nprint('before', flush=True)\ntime.sleep(30)\nprint('after')"))
        content = result.structured_content
        assert content["status"] == "timeout", content
        assert content["stdout"] == "before\n", content
        assert 900 <= content["duration_ms"] < 2000, content
        assert time.monotonic() - start < 6


async def progress():
    """A client that sends a progressToken hears from a long run at least every 5 s."""
    async with stdio_session() as session:
        heard = []

        async def on_progress(progress, total, message):
            heard.append((time.monotonic(), progress, message))

        start = time.monotonic()
        result = await session.call_tool(
            "run_code",
            {"runtime": "python", "timeout_seconds": 30,
             "code": "import time\ntime.sleep(7)\nprint('done')"},
            progress_callback=on_progress,
        )
        end = time.monotonic()
        check_run(result, completed("done\n"))
        assert len(heard) >= 2, heard
        gaps = [b - a for a, b in zip([start] + [h[0] for h in heard], [h[0] for h in heard] + [end])]
        assert max(gaps) <= 5, gaps
        values = [h[1] for h in heard]
        assert values == sorted(values), values
        assert all("python" in h[2] for h in heard), heard


if __name__ == "__main__":
    main({
        "numpy_and_pandas": numpy_and_pandas,
        "plots": plots,
        "display": display,
        "files_in_and_out": files_in_and_out,
        "file_rules": file_rules,
        "sleeping": sleeping,
        "progress": progress,
    })
