"""The command against hostile names, files, text and moments (issue 16, findings 16 to 19), run as a user runs it.

- 16: a file name that is not UTF-8 is shown escaped (``\\xff``), in text and in ``--json``, never a traceback;
- 17: devices, FIFOs and sockets met in a walked folder are skipped with a note; a device named on the command
  line is read up to the bound on a line (``MAX_LINE_BYTES``), never until a ``MemoryError``;
- 18: a file with no recognisable stream is invalid (exit 1), never "no streams recorded";
- 19: what a recording or a model sends cannot drive the terminal (C0, C1, bidirectional controls), in ``check``,
  ``assemble`` and ``demo``; Ctrl-C is exit 130 with one line, wherever the command's code is.
"""

from __future__ import annotations

import io
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm import _cli, _cli_report
from streamfsm._check import UNSAFE, printable
from streamfsm._lines import MAX_LINE_BYTES, LineTooLong, bounded_lines

from .conftest import SEED_CHUNKS, SESSIONS
from .sse_server import SSE, SSEServer, openai_events
from .test_cli import child_env, console_script, jsonl, run

#: The address space a child may take (a bound on its memory): the longest line, twice, and room to start.
CHILD_MEMORY = 2 * MAX_LINE_BYTES + 768 * 1024 * 1024

#: Characters that must never reach a terminal as they are (escape sequences, C1 CSI, bidi overrides).
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil\u2066\u200f\r"


def limited() -> None:
    """In the child, before it starts: its address space bounded by :data:`CHILD_MEMORY`."""
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))


def streamfsm(
    *argv: str, stdin: Any = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """``python -m streamfsm._cli ARGV`` in a child process with bounded memory; output as bytes."""
    return subprocess.run(
        [sys.executable, "-m", "streamfsm._cli", *argv],
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        env=child_env(**(env or {})),
        preexec_fn=limited,
    )


def raw_unsafe(text: str) -> set[str]:
    """The characters of ``UNSAFE`` in ``text`` (line ends aside), as they are."""
    return {c for c in text if ord(c) in UNSAFE and c != "\n"}


# -- 16: names that are not UTF-8 --------------------------------------------------------------------------------

#: A file name with two bytes that are not UTF-8 and an escape sequence that would retitle the terminal.
NOT_UTF8 = os.fsdecode(b"bad\xff\xfe\x1b]0;x\x07.jsonl")
NOT_UTF8_SHOWN = "bad\\xff\\xfe\\x1b]0;x\\x07.jsonl"
#: The same in JSON: JSON escapes the controls itself (``\u001b``, the same string); the bytes that are not
#: UTF-8, which UTF-8 JSON cannot hold, are the text ``printable`` shows for them.
NOT_UTF8_IN_JSON = "bad\\xff\\xfe\x1b]0;x\x07.jsonl"


@pytest.mark.parametrize("encoding", [None, "utf-8"])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_name_that_is_not_utf8_is_shown_escaped(tmp_path: Path, encoding: str | None, as_json: bool) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / NOT_UTF8).write_bytes(jsonl(SEED_CHUNKS))
    env = {"PYTHONIOENCODING": encoding} if encoding else {}
    for target in (str(folder), str(folder / NOT_UTF8)):  # walked, and named
        done = streamfsm("check", *(["--json"] if as_json else []), target, env=env)
        assert (done.returncode, done.stderr) == (0, b""), done.stderr.decode(errors="replace")
        out = done.stdout.decode("utf-8")  # strict: nothing undecodable was written
        assert not raw_unsafe(out)
        if as_json:
            report = orjson.loads(out.splitlines()[0])
            assert report["path"] == report["name"] == f"{folder}/{NOT_UTF8_IN_JSON}"
        else:
            assert out.startswith(f"{folder}/{NOT_UTF8_SHOWN}: ok; 2 blocks")


def test_a_missing_name_that_is_not_utf8_is_complained_about_escaped(tmp_path: Path) -> None:
    done = streamfsm("check", str(tmp_path / NOT_UTF8), env={"PYTHONIOENCODING": "utf-8"})
    assert done.returncode == _cli.EXIT_USAGE
    assert done.stderr.decode() == f"streamfsm: {tmp_path}/{NOT_UTF8_SHOWN}: cannot read: No such file or directory\n"


def test_json_text_keeps_the_json_and_escapes_the_rest() -> None:
    value = {"text": HOSTILE, "path": NOT_UTF8, "n": [1, 2.5, None]}
    for indent in (False, True):
        text = _cli_report.json_text(value, indent=indent)
        assert not raw_unsafe(text)
        back = orjson.loads(text)
        assert back["text"] == HOSTILE  # escaping C1 and bidi changes nothing of the JSON's meaning
        assert back["path"] == NOT_UTF8_IN_JSON
        assert back["n"] == [1, 2.5, None]
    assert _cli_report.json_text({"a": [1]}, indent=True) == '{\n  "a": [\n    1\n  ]\n}'


# -- 17: special files -------------------------------------------------------------------------------------------


def test_special_files_in_a_folder_are_skipped_with_a_note(tmp_path: Path) -> None:
    """A FIFO used to hang the walk; a link to /dev/zero was read until a MemoryError."""
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "good.jsonl").write_bytes(jsonl(SEED_CHUNKS))
    os.mkfifo(folder / "b.jsonl")
    (folder / "z.jsonl").symlink_to("/dev/zero")
    server = socket.socket(socket.AF_UNIX)
    cwd = os.getcwd()
    os.chdir(folder)  # a socket's path must be short: bind it by its name
    try:
        server.bind("s.jsonl")
    finally:
        os.chdir(cwd)
    try:
        done = streamfsm("check", str(folder), timeout=60)
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith(f"{folder}/good.jsonl: ok;")
    assert "checked 1 stream in 1 file" in done.stdout.decode()
    assert done.stderr.decode().splitlines() == [
        f"streamfsm: {folder}/b.jsonl: skipped: a FIFO, not a regular file",
        f"streamfsm: {folder}/s.jsonl: skipped: a socket, not a regular file",
        f"streamfsm: {folder}/z.jsonl: skipped: a link to a character device, not a regular file",
    ]


def test_a_folder_of_special_files_only_holds_no_recordings(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "b.jsonl")
    done = streamfsm("check", str(tmp_path), timeout=60)
    assert done.returncode == _cli.EXIT_USAGE
    assert done.stderr.decode().splitlines() == [
        f"streamfsm: {tmp_path}/b.jsonl: skipped: a FIFO, not a regular file",
        f"streamfsm: {tmp_path}: no recordings (*.jsonl, *.ndjson, *.sse, also .gz or .zst) here",
    ]


@pytest.mark.parametrize("how", ["device", "link", "stdin", "assemble"])
def test_a_device_named_is_read_up_to_the_bound_on_a_line(tmp_path: Path, how: str) -> None:
    """``/dev/zero`` is one line that never ends: read up to MAX_LINE_BYTES (128 MiB), then a clear error."""
    link = tmp_path / "z.jsonl"
    link.symlink_to("/dev/zero")
    if how == "stdin":
        with open("/dev/zero", "rb") as zero:
            done, name = streamfsm("check", "-", stdin=zero), "-"
    else:
        name = "/dev/zero" if how in ("device", "assemble") else str(link)
        done = streamfsm("assemble" if how == "assemble" else "check", name)
    assert done.returncode == _cli.EXIT_USAGE
    error = done.stderr.decode()
    assert error == f"streamfsm: {name}: cannot read: line 1 is longer than 128 MiB (a line with no end?)\n"


def test_a_fifo_named_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "live.jsonl"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as pipe:  # waits for the command to open it
            for chunk in SEED_CHUNKS:
                pipe.write(orjson.dumps(chunk) + b"\n")
                pipe.flush()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    done = streamfsm("check", str(fifo), timeout=60)
    writer.join(10)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith(f"{fifo}: ok; 2 blocks")


def test_bounded_lines() -> None:
    source = io.BytesIO(b"abc\n" + b"x" * 7 + b"\n" + b"y" * 8 + b"\nzz")
    lines = bounded_lines(source, limit=8)
    assert [next(lines), next(lines)] == [b"abc\n", b"x" * 7 + b"\n"]  # 8 bytes with the line end: the bound
    with pytest.raises(LineTooLong, match=r"^line 3 is longer than 8 bytes \(a line with no end\?\)$"):
        next(lines)
    assert list(bounded_lines(io.StringIO("a\nb"), limit=4)) == ["a\n", "b"]
    with pytest.raises(LineTooLong, match=r"^line 2 is longer than 4 bytes"):
        list(bounded_lines(io.StringIO("a\nbcdef"), limit=4))
    assert list(bounded_lines([b"no read\n", b"x"])) == [b"no read\n", b"x"]


class Trickle(io.BytesIO):
    """A binary file whose ``read1`` gives fewer bytes than asked, as a pipe does."""

    def __init__(self, data: bytes, sizes: list[int]) -> None:
        super().__init__(data)
        self.sizes = sizes

    def read1(self, size: int | None = -1) -> bytes:
        want = -1 if size is None else size
        return super().read1(min(want, self.sizes.pop(0) if self.sizes else want))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([b"a", b"bb", b"\n", b"\r", b"\r\n", b"\xff"]), max_size=60).map(b"".join),
    st.integers(1, 30),
    st.lists(st.integers(1, 12), max_size=40),
)
def test_bounded_lines_are_the_lines_iterating_gives(data: bytes, limit: int, sizes: list[int]) -> None:
    """The lines iterating the file gives, or LineTooLong at the first longer than the bound (numbered from 1)."""
    lines = list(io.BytesIO(data))
    too_long = next((n for n, line in enumerate(lines, 1) if len(line) > limit), None)
    got: list[bytes] = []
    try:
        for line in bounded_lines(Trickle(data, sizes), limit=limit):
            got.append(line)
    except LineTooLong as exc:
        assert too_long is not None and str(exc).startswith(f"line {too_long} is longer than {limit} bytes")
        assert got == lines[: too_long - 1]
    else:
        assert too_long is None and got == lines


# -- 18: no recognisable stream is no pass -----------------------------------------------------------------------


def test_lines_like_session_events_without_a_header_are_invalid(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Told to be a session log by its first line (an ``x/y`` event with seq and data), it records no stream."""
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'\n{"type":"block/start","seq":1,"data":{}}\n{"type":"block/end","seq":2,"data":{}}\n')
    status, out, err = run(capsys, "check", str(path))
    assert (status, err) == (_cli.EXIT_INVALID, "")
    assert out.splitlines()[:2] == [
        f"{path}:2: STREAM_TRUNCATED no stream recorded, and no session header (a session log starts with its "
        'header, {"type":"session",...}): not a session log (--format jsonl reads its lines as chunks)',
        '     2 | {"type":"block/start","seq":1,"data":{}}',
    ]
    status, out, _ = run(capsys, "check", "--json", str(path))
    report, summary = (orjson.loads(line) for line in out.splitlines())
    assert (report["kind"], summary["kind"], summary["invalid"]) == ("stream", "summary", 1)
    assert (status, report["ok"], report["code"], report["format"]) == (1, False, "STREAM_TRUNCATED", "harness-session")


def test_the_broken_file_of_the_issue_is_invalid(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A broken JSON-lines file whose first type is block/start: JSON lines, an invalid chunk."""
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b'{"type":"block/start","index":0,"blockType":"text"}\n{"type":"finish"}\n')
    status, out, _ = run(capsys, "check", str(path))
    assert status == _cli.EXIT_INVALID
    assert f"{path}:1: INVALID_CHUNK" in out and "no streams" not in out


def test_chunks_read_as_a_session_log_are_invalid(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"
    path.write_bytes(jsonl(SEED_CHUNKS))
    status, out, _ = run(capsys, "check", "--format", "harness-session", str(path))
    assert status == _cli.EXIT_INVALID
    assert out.startswith(f"{path}:1: STREAM_TRUNCATED no stream recorded, and no session header")
    stdin = subprocess.run(
        [sys.executable, "-m", "streamfsm._cli", "check", "--format", "harness-session", "-"],
        input=jsonl(SEED_CHUNKS),
        capture_output=True,
        timeout=120,
        env=child_env(),
    )
    assert stdin.returncode == _cli.EXIT_INVALID
    assert stdin.stdout.decode().startswith("-:1: STREAM_TRUNCATED no stream recorded, and no session header")


@pytest.mark.parametrize("content", [b"", b"\n \n\t\r\n"])
@pytest.mark.parametrize("fmt", ["auto", "jsonl", "harness-session"])
def test_an_empty_file_is_a_truncated_stream(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, fmt: str
) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    status, out, _ = run(capsys, "check", "--json", "--format", fmt, str(path))
    report, summary = (orjson.loads(line) for line in out.splitlines())
    assert (report["kind"], summary["kind"], summary["exit"]) == ("stream", "summary", status)
    assert (status, report["ok"], report["code"]) == (_cli.EXIT_INVALID, False, "STREAM_TRUNCATED")
    if fmt == "harness-session":
        assert report["message"].startswith("no stream recorded, and no line with content")
    else:
        assert report["message"].startswith("the input ended after 0 chunk(s) without a finish")


def test_session_logs_with_their_header_and_no_model_turn_still_record_no_streams(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = run(capsys, "check", "--policy", "harness", str(SESSIONS))
    assert len(re.findall(r": no streams recorded$", out, re.MULTILINE)) == 17
    assert re.search(r"^  no streams +- +17$", out, re.MULTILINE)
    empty = next(
        Path(line.split(": no streams recorded")[0])
        for line in out.splitlines()
        if line.endswith("no streams recorded")
    )
    assert run(capsys, "check", str(empty))[0] == _cli.EXIT_OK
    with open(empty, "rb") as log:
        done = streamfsm("check", "-", stdin=log)
    assert (done.returncode, done.stdout.decode().splitlines()[0]) == (0, "-: no streams recorded")


# -- 19: text that could drive the terminal ----------------------------------------------------------------------


def test_printable_escapes_controls_c1_and_bidi() -> None:
    assert printable("a\x1b[2J\x9b\u202eb\u2066\u200e\u061c\u2028\n\t") == (
        "a\\x1b[2J\\x9b\\u202eb\\u2066\\u200e\\u061c\\u2028\\n\\t"
    )
    assert printable("one\ntwo\tthree\r\x1b", lines=True) == "one\ntwo\tthree\\r\\x1b"
    assert printable(os.fsdecode(b"\xff") + "\ud800") == "\\xff\\ud800"
    assert printable("é 教程 ✓") == "é 教程 ✓"


def hostile_stream() -> list[dict[str, Any]]:
    text = f"hello {HOSTILE} world"
    return [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": text},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


@pytest.mark.parametrize("compact", [False, True])
def test_assemble_escapes_what_could_drive_the_terminal(tmp_path: Path, compact: bool) -> None:
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(jsonl(hostile_stream()))
    done = streamfsm("assemble", *(["--compact"] if compact else []), str(path))
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert not raw_unsafe(out), raw_unsafe(out)
    assert "\\u009b31m\\u202eevil\\u2066\\u200f" in out
    assert orjson.loads(out)["blocks"][0]["text"] == f"hello {HOSTILE} world"  # the same JSON


def test_check_escapes_what_could_drive_the_terminal(tmp_path: Path) -> None:
    chunks = hostile_stream()
    chunks.insert(3, {"type": "text-delta", "index": 0, "text": HOSTILE})  # after its block ended
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(jsonl(chunks))
    for argv in (["check"], ["check", "--json"], ["check", "--policy", "harness"]):
        done = streamfsm(*argv, str(path))
        out = done.stdout.decode()
        assert done.returncode == _cli.EXIT_INVALID
        assert not raw_unsafe(out), (argv, raw_unsafe(out))
    harness = [
        {"type": "block-start", "index": 0, "blockType": f"odd{HOSTILE}"},
        {"type": "block-end", "index": 0, "block": {"type": f"odd{HOSTILE}"}},
        {"type": "finish", "reason": {"kind": f"odd{HOSTILE}"}},
    ]
    path.write_bytes(jsonl(harness))
    done = streamfsm("check", "--policy", "harness", str(path))
    assert not raw_unsafe(done.stdout.decode())


def test_the_demo_escapes_what_the_endpoint_sends(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model could retitle (OSC 0), clear (CSI 2J), recolour (C1 CSI) or reorder (U+202E) the user's terminal."""

    def turn(delta: dict[str, Any], finish: str) -> list[dict[str, Any]]:
        usage = {"prompt_tokens": 40, "completion_tokens": 9}
        return [
            {"choices": [{"index": 0, "delta": delta}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage},
        ]

    call = {
        "index": 0,
        "id": f"call{HOSTILE}",
        "function": {"name": "bash", "arguments": f'{{"command": "ls {HOSTILE}"}}'},
    }
    with SSEServer() as server:
        server.script(
            SSE(openai_events(turn({"tool_calls": [call]}, "tool_calls"))),
            SSE(openai_events(turn({"content": f"line one{HOSTILE}\nline two"}, "stop"))),
        )
        monkeypatch.setenv("STREAMFSM_API_KEY", "sk-demo")
        status, out, err = run(capsys, "demo", "--base-url", server.url, "--model", f"m{HOSTILE}")
    assert status == 0, err
    assert not raw_unsafe(out), raw_unsafe(out)
    assert "line one\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eevil\\u2066\\u200f\\r\nline two" in out
    assert "→ tool call call\\x1b]0;pwned" in out and "streamfsm demo: m\\x1b]0;pwned" in out


# -- 19: Ctrl-C at any moment ------------------------------------------------------------------------------------


#: A probe the children load at their start (as ``sitecustomize``, which ``site`` imports before the program runs):
#: it watches every import. It writes ``guarded`` to standard error at the first import once the command's start-up
#: guard (``streamfsm._startup``) has SIGINT; with ``PROBE_SIGINT_AT=<module>`` it sends SIGINT to its own process
#: as that module is imported; with ``PROBE_LOG=<file>`` it writes there each import and whether the guard had SIGINT.
PROBE = """
import os, sys, _signal
_at, _log, _marked = os.environ.get("PROBE_SIGINT_AT"), os.environ.get("PROBE_LOG"), [False]
class _Probe:
    def find_spec(self, name, path=None, target=None):
        guarded = getattr(_signal.getsignal(_signal.SIGINT), "__module__", None) == "streamfsm._startup"
        if guarded and not _marked[0]:
            _marked[0] = True
            os.write(2, b"guarded\\n")
        if _log:
            with open(_log, "a") as log:
                log.write(f"{name} {int(guarded)}\\n")
        if name == _at:
            os.kill(os.getpid(), _signal.SIGINT)
        return None
sys.meta_path.insert(0, _Probe())
"""

#: What loads before the guard has SIGINT: the interpreter's ``runpy`` (for ``-m``), the package (whose
#: ``__init__`` imports nothing: its names load on first use), and the entry modules up to ``_startup``.
ENTRY = {"runpy", "_signal", "streamfsm", "streamfsm.__main__", "streamfsm._cli", "streamfsm._startup"}

INTERRUPTED = b"streamfsm: interrupted\n"


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a probed child: the probe first on its path, and its bytecode written (to a folder of its
    own) as an installed package's is, so that a child does not compile the command's modules at each start."""
    folder = tmp_path_factory.mktemp("probe")
    (folder / "sitecustomize.py").write_text(PROBE)
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH")) if p)
    env = child_env(PYTHONPATH=path, PYTHONPYCACHEPREFIX=str(folder / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for argv in STARTS.values():  # once, to write the bytecode
        subprocess.run([*argv(), "--version"], stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=120)
    return env


#: The command as a user starts it: ``python -m streamfsm``, and the ``streamfsm`` script.
STARTS = {
    "python -m streamfsm": lambda: [sys.executable, "-m", "streamfsm"],
    "the streamfsm script": lambda: [console_script()],
}


def imports(argv: list[str], env: dict[str, str], tmp_path: Path) -> list[tuple[str, bool]]:
    """The modules the command imports as it checks an empty standard input, in order, each with whether the
    start-up guard had SIGINT then."""
    log = tmp_path / "imports.txt"
    done = subprocess.run(
        [*argv, "check", "-"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env={**env, "PROBE_LOG": str(log)},
        timeout=120,
    )
    assert done.returncode == _cli.EXIT_INVALID, done.stderr  # an empty stream: truncated
    return [(name, guarded == "1") for name, guarded in (line.split() for line in log.read_text().splitlines())]


@pytest.mark.parametrize("start", STARTS.values(), ids=STARTS.keys())
def test_ctrl_c_at_every_moment_of_start_up(start: Any, probed: dict[str, str], tmp_path: Path) -> None:
    """A SIGINT sent as the command imports each of its modules (its own, pydantic's, orjson's, ...): exit 130,
    one line, no traceback, and no crash. Only the entry modules load before the guard has SIGINT.

    A Ctrl-C while the command's modules import is answered once they are done: an exception raised inside an
    extension module's initialisation crashed the interpreter (orjson's, importing ``datetime``: SIGSEGV), and
    before the package imported its modules on first use, a Ctrl-C in the first ~0.3 s gave Python's traceback.
    """
    argv = start()
    seen = imports(argv, probed, tmp_path)
    first = next(k for k, (_, guarded) in enumerate(seen) if guarded)  # (main hands SIGINT back to Python later)
    before, after = [name for name, _ in seen[:first]], [name for name, _ in seen[first:]]
    assert set(before) <= ENTRY, before
    names = set(after)
    for heavy in ("orjson", "datetime", "pydantic", "pydantic_core._pydantic_core", "streamfsm._machine", "argparse"):
        assert heavy in names, heavy  # each loads once the guard is there
    # Every module from the guard on is a moment to interrupt; a sample of them, the heavy ones included.
    extensions = {"orjson", "datetime", "uuid", "pydantic_core._pydantic_core"} & names  # (orjson imports the others)
    moments = {*after[:3], *after[::10], *after[-3:], *extensions}
    for module in sorted(moments):
        done = subprocess.run(
            [*argv, "check", "-"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env={**probed, "PROBE_SIGINT_AT": module},
            timeout=120,
        )
        assert (done.returncode, done.stderr) == (_cli.EXIT_INTERRUPTED, b"guarded\n" + INTERRUPTED), module


@pytest.mark.parametrize("start", STARTS.values(), ids=STARTS.keys())
def test_ctrl_c_at_any_moment_of_start_up(start: Any, probed: dict[str, str]) -> None:
    """SIGINT at 0, 0.02, 0.05, 0.1, 0.2 and 0.5 s after the start of ``check -`` on a pipe that never ends, and
    once it waits on it: from the moment the start-up guard has SIGINT (the probe says ``guarded``), exit 130 with
    one line and no traceback.

    Before that moment nothing of the command runs, and Python answers as it does for any program: the
    interpreter's own start (killed by SIGINT before it takes signals; a traceback from its ``site`` import) and
    the loading of the entry modules (a fraction of a millisecond: ``test_ctrl_c_at_every_moment_of_start_up``
    shows nothing else loads before the guard). Every start that reached the guard is checked strictly.
    """
    for delay in (0, 0.02, 0.05, 0.1, 0.2, 0.5, None):
        child = subprocess.Popen(
            [*start(), "check", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=probed
        )
        try:
            if delay is None:
                wait_until_blocked(child.pid, "pipe")  # reading standard input: the command runs
            else:
                time.sleep(delay)
            child.send_signal(signal.SIGINT)
            out, err = child.communicate(timeout=60)
        finally:
            child.kill()
        if b"Error processing line" in err.partition(b"guarded")[0] and b"KeyboardInterrupt" in err:
            # The interrupt landed in the interpreter's ``site`` as it read a .pth file (the editable install's):
            # site reports it and goes on, so the command runs, on the pipe communicate() closed: an empty input.
            assert (child.returncode, out[:21]) == (1, b"-: STREAM_TRUNCATED t"), (delay, err)
        elif b"guarded" in err or delay is None:
            assert (child.returncode, out, err) == (_cli.EXIT_INTERRUPTED, b"", b"guarded\n" + INTERRUPTED), delay
        else:  # before the guard: the interpreter's answer, killed by SIGINT or its own traceback
            assert child.returncode in (-signal.SIGINT, 1) and out == b"", (delay, child.returncode, err)


def wait_until_blocked(pid: int, where: str = "partner", seconds: float = 60) -> None:
    """Until the process waits in the kernel where ``where`` says (``/proc/PID/wchan``): ``partner`` in ``open()``
    for a FIFO's writer, ``pipe`` in a read of an empty pipe. The command's code runs, and would wait for ever."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if where in Path(f"/proc/{pid}/wchan").read_text():
            return
        time.sleep(0.02)
    raise AssertionError(f"the command never waited ({where})")


def test_ctrl_c_while_a_named_fifo_waits_for_its_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "never.jsonl"
    os.mkfifo(fifo)
    child = subprocess.Popen(
        [sys.executable, "-m", "streamfsm._cli", "check", str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
    )
    try:
        wait_until_blocked(child.pid)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert (child.returncode, out, err) == (_cli.EXIT_INTERRUPTED, b"", b"streamfsm: interrupted\n")


@pytest.mark.parametrize("argv", [["-m", "streamfsm", "demo"], ["-m", "streamfsm._cli", "demo"]])
def test_ctrl_c_in_the_demo(argv: list[str]) -> None:
    """The demo pauses between chunks; interrupted there it says so in one line (it printed a traceback)."""
    child = subprocess.Popen(
        [sys.executable, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(PYTHONUNBUFFERED="1"),
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().startswith(b"streamfsm demo:")  # it runs
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert (child.returncode, err) == (_cli.EXIT_INTERRUPTED, b"streamfsm: interrupted\n")


def test_ctrl_c_from_the_terminal_while_workers_check(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches the whole process group: the workers leave it to the command (no tracebacks)."""
    line = orjson.dumps({"type": "text-delta", "index": 0, "text": "x" * 40}) + b"\n"
    for n in range(16):
        (tmp_path / f"{n:02}.jsonl").write_bytes(line * 60_000)
    child = subprocess.Popen(
        [sys.executable, "-m", "streamfsm._cli", "check", "-j", "2", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=child_env(),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(os.listdir(f"/proc/{child.pid}/task")) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)  # until the pool's thread runs: the workers are starting
        time.sleep(0.3)
        os.killpg(child.pid, signal.SIGINT)
        _, err = child.communicate(timeout=120)
    finally:
        child.kill()
    assert (child.returncode, err) == (_cli.EXIT_INTERRUPTED, b"streamfsm: interrupted\n")
