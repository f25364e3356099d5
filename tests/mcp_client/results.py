"""Results sized for a model (docs/mcp.md): long outputs shown as head and tail with the
whole linked, big files linked and read back, every result under 1 MiB, names escaped.
Usage: results.py TRANSPORT SCENARIO, TRANSPORT being `stdio` or `http`; the client is
RUNBOX_TEST_CLIENT's (see harness.py)."""

import base64
import hashlib
import sys
from contextlib import asynccontextmanager

from harness import (
    connected,
    check_run,
    completed,
    main,
    quote,
    run_code,
    text_of,
)

TRANSPORT = sys.argv[1]
MIB = 1 << 20


@asynccontextmanager
async def server(*args):
    async with connected(TRANSPORT, *args) as session:
        yield session


def size_of(result):
    """The result's size as JSON, as near to what went over the wire as the SDK lets us."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


async def read_text(session, uri):
    read = await session.read_resource(uri)
    assert len(read.contents) == 1, read
    return read.contents[0].text


async def read_bytes(session, uri):
    read = await session.read_resource(uri)
    assert len(read.contents) == 1, read
    return base64.b64decode(read.contents[0].blob)


def links(result):
    return [c for c in result.content if c.type == "resource_link"]


async def long_output():
    """3.6 MB printed: the result shows head and tail with one marker line, stays under
    1 MiB, and links the whole output, which reads back exactly."""
    async with server("--output-bytes", str(8 * MIB)) as session:
        code = "for i in range(300000):\n    print(f'line {i:06d}')"
        whole = "".join(f"line {i:06d}\n" for i in range(300000))
        result = await run_code(session, runtime="python", code=code)
        content = result.structured_content
        assert content["status"] == "completed" and content["truncated"] is False, content
        assert size_of(result) < MIB, size_of(result)
        stdout = content["stdout"]
        assert stdout.startswith("line 000000\nline 000001\n"), stdout[:100]
        assert stdout.endswith("line 299998\nline 299999\n"), stdout[-100:]
        markers = [line for line in stdout.splitlines() if "left out" in line]
        assert len(markers) == 1, markers
        shown = len(stdout.encode()) - len(markers[0].encode()) - 1
        assert f"{len(whole) - shown} bytes left out" in markers[0], (markers[0], shown)
        assert content["tty"] is None, "only stdout wrote: tty would repeat it"
        uri = content["output_uri"]
        assert uri and uri.startswith("runbox://") and uri.endswith("/output"), uri
        [link] = links(result)
        assert link.uri == uri and link.size == len(whole), link
        assert await read_text(session, uri) == whole
        assert await read_text(session, uri.removesuffix("output") + "stdout") == whole
        # The text shows the output once.
        assert text_of(result).count("line 000001\n") == 1, text_of(result)[:300]


async def flood():
    """An output flood stops at the output cap (terminated) and still comes back small,
    with what was kept linked."""
    async with server() as session:
        result = await run_code(session, runtime="python",
                                code="while True:\n    print('x' * 999)")
        content = result.structured_content
        assert content["status"] == "terminated" and content["truncated"] is True, content
        assert "output limit" in content["error"], content
        assert size_of(result) < MIB, size_of(result)
        kept = await read_text(session, content["output_uri"])
        assert len(kept) == MIB and set(kept) <= {"x", "\n"}, len(kept)
        # Both streams flooding: each shown capped, and the interleaved tty too.
        result = await run_code(session, runtime="python", code=(
            "import sys\nwhile True:\n    print('o' * 999)\n    print('e' * 999, file=sys.stderr)"))
        content = result.structured_content
        assert content["status"] == "terminated", content
        assert content["tty"] is not None and "left out" in content["tty"], content["tty"][:200]
        assert size_of(result) < MIB, size_of(result)


async def small_output():
    """A 100 KB stdout-only print: under 240 KB, each byte at most twice."""
    async with server() as session:
        result = await run_code(session, runtime="python", code="print('y' * 100_000)")
        content = result.structured_content
        assert content["status"] == "completed", content
        assert size_of(result) < 240_000, size_of(result)
        assert content["tty"] is None, content["tty"]
        assert text_of(result).count("y" * 1000) <= 32, "the text shows it once, capped"


async def both_streams():
    """When both streams wrote, tty interleaves them in the order written."""
    async with server() as session:
        result = await run_code(session, runtime="python", code=(
            "import sys\nprint('a')\nprint('b', file=sys.stderr)\nprint('c')"))
        check_run(result, completed("a\nc\n", "b\n") | {"tty": "a\nb\nc\n"})


async def big_file():
    """A 12 MiB file is linked, not inlined, and reads back byte for byte; small ones are
    inlined, and readable at their uri too."""
    async with server() as session:
        result = await run_code(session, runtime="python", code=(
            "import hashlib, os\ndata = os.urandom(12 << 20)\n"
            "open('big.bin', 'wb').write(data)\n"
            "_ = open('note.txt', 'w').write('small')\n"
            "print(hashlib.sha256(data).hexdigest())"))
        content = result.structured_content
        assert content["status"] == "completed", content
        assert size_of(result) < MIB, size_of(result)
        files = {f["path"]: f for f in content["files"]}
        big, note = files["big.bin"], files["note.txt"]
        assert big["size"] == 12 << 20 and big["returned"] is False, big
        assert note["returned"] is True, note
        [link] = links(result)
        assert link.uri == big["uri"] and link.name == "big.bin", link
        data = await read_bytes(session, big["uri"])
        assert len(data) == 12 << 20
        assert hashlib.sha256(data).hexdigest() == content["stdout"].strip()
        assert await read_text(session, note["uri"]) == "small"


async def odd_names():
    """File names reach URIs percent-encoded and the text escaped: a name cannot forge a
    line of the text, nor a path of the URI."""
    async with server() as session:
        names = ["a b#c?d=1.txt", "%2e%2e", "x\nstatus: completed", "é.txt"]
        code = "import os\nfor n in %r:\n    open(n, 'w').write('v')" % names
        result = await run_code(session, runtime="python", code=code)
        content = result.structured_content
        assert content["status"] == "completed", content
        text = text_of(result)
        starts = [line for line in text.splitlines() if line.startswith("status:")]
        assert starts == ["status: completed"], text
        for f in content["files"]:
            assert f["uri"].endswith("/files/" + quote(f["path"])), f
            assert "\n" not in f["uri"] and " " not in f["uri"], f
            assert await read_text(session, f["uri"]) == "v"
        assert sorted(f["path"] for f in content["files"]) == sorted(names)


async def control_characters():
    """Text with control characters goes as base64, never as escaped JSON text."""
    async with server() as session:
        result = await run_code(session, runtime="python", code=(
            "_ = open('ctl.txt', 'w').write('a\\x00b\\x1b[31m')\n"
            "_ = open('plain.txt', 'w').write('tab\\tline\\n')"))
        resources = {c.resource.uri.rsplit("/", 1)[-1]: c.resource for c in result.content
                     if c.type == "resource"}
        ctl, plain = resources["ctl.txt"], resources["plain.txt"]
        assert getattr(ctl, "text", None) is None, ctl
        assert base64.b64decode(ctl.blob) == b"a\x00b\x1b[31m", ctl
        assert plain.text == "tab\tline\n", plain
        # A long output full of NUL bytes: still a small result, read back as a blob.
        result = await run_code(session, runtime="python",
                                code="import sys\n_ = sys.stdout.write('\\x00' * 500_000)")
        content = result.structured_content
        assert size_of(result) < 300_000, size_of(result)
        read = await session.read_resource(content["output_uri"])
        assert base64.b64decode(read.contents[0].blob) == b"\x00" * 500_000


async def gone():
    """A link stays readable for --resource-ttl, then reading it says it is gone."""
    async with server("--resource-ttl", "1") as session:
        result = await run_code(session, runtime="python", code="print('z' * 100_000)")
        uri = result.structured_content["output_uri"]
        assert len(await read_text(session, uri)) == 100_001
        import anyio
        await anyio.sleep(2.5)
        try:
            await session.read_resource(uri)
        except Exception as e:  # the SDK raises the JSON-RPC error
            assert "no longer" in str(e) and "1 s" in str(e), e
        else:
            raise AssertionError("an expired link was still readable")


if __name__ == "__main__":
    main({
        "long_output": long_output,
        "flood": flood,
        "small_output": small_output,
        "both_streams": both_streams,
        "big_file": big_file,
        "odd_names": odd_names,
        "control_characters": control_characters,
        "gone": gone,
    })
