"""Recordings from any storage (``streamfsm/_sources.py``): fsspec URLs, ``.gz`` and ``.zst`` files, globs.

The S3 tests talk over HTTP to a real S3-compatible server started here on 127.0.0.1 (moto's server mode), with
s3fs configured as a user configures it: the endpoint in ``AWS_ENDPOINT_URL``, credentials in the usual ``AWS_*``
variables (fake ones). They are marked ``cloud``: ``pytest --no-cloud`` skips them, and nothing else does (with
moto or the ``cloud`` extra missing they fail).
"""

from __future__ import annotations

import gzip
import io
import logging
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import streamfsm as sf
from streamfsm import _cli, _sources, _walk
from streamfsm._check import check_file

from .conftest import PROVIDER_STREAMS, SEED_CHUNKS, SESSIONS
from .test_cli import jsonl, reports, run

SESSION = SESSIONS / "acp-agent--snapshots--bash-tool-turn.jsonl"
PROVIDER_SSE = PROVIDER_STREAMS / "anthropic-messages" / "tool_use_response.sse"

cloud = pytest.mark.cloud


# -- helpers ------------------------------------------------------------------------------------------------


def gz(data: bytes) -> bytes:
    return gzip.compress(data)


def zst(data: bytes, frames: int = 1) -> bytes:
    """``data`` as zstd (with the checksum the zstd command writes), in ``frames`` frames one after another."""
    import zstandard

    step = -(-len(data) // frames)
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    return b"".join(compressor.compress(data[i : i + step]) for i in range(0, len(data), step))


COMPRESS = {".gz": gz, ".zst": zst}


def checked(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]], str]:
    """``streamfsm check --json ARGV``: exit status, the reports, standard error."""
    status, out, err = run(capsys, "check", "--json", *argv)
    return status, reports(out), err


def renamed(found: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    """Reports with ``path`` (and the ``name`` made of it) set to one name: to compare two copies of a file."""
    return [{**r, "path": path, "name": r["name"].replace(r["path"], path, 1)} for r in found]


def local_reports(capsys: pytest.CaptureFixture[str], path: Path, *options: str) -> list[dict[str, Any]]:
    status, found, err = checked(capsys, *options, str(path))
    assert err == ""
    assert found, status
    return found


# -- the S3 server ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server, in a thread of this process, on a free port of 127.0.0.1."""
    from moto.server import ThreadedMotoServer  # missing: the cloud tests fail (pip install -e '.[test]')

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@dataclass
class Bucket:
    """A bucket of its own for one test, and the s3fs client the code under test also gets."""

    fs: Any
    name: str
    endpoint: str

    def url(self, key: str) -> str:
        return f"s3://{self.name}/{key}"

    def put(self, key: str, data: bytes) -> str:
        self.fs.pipe(f"{self.name}/{key}", data)
        return self.url(key)


@pytest.fixture
def s3(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Bucket]:
    """A new bucket on the server, with the environment pointing s3fs there as a user would (docs/guides/corpora.md)."""
    import s3fs

    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "streamfsm-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "streamfsm-test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))  # a developer's ~/.aws stays out
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s3fs.S3FileSystem.clear_instance_cache()  # a client made before these settings is not reused
    fs = s3fs.S3FileSystem()
    bucket = Bucket(fs, f"streamfsm-{uuid.uuid4().hex[:16]}", s3_endpoint)
    fs.mkdir(bucket.name)
    try:
        yield bucket
    finally:
        s3fs.S3FileSystem.clear_instance_cache()


# -- reading from S3 -----------------------------------------------------------------------------------------------


@cloud
def test_a_session_log_is_read_from_s3_as_from_disk(s3: Bucket) -> None:
    url = s3.put("sessions/bash-tool-turn.jsonl", SESSION.read_bytes())
    remote, local = list(sf.read_recordings(url)), list(sf.read_recordings(SESSION))
    assert len(remote) == len(local) == 2
    for a, b in zip(remote, local, strict=True):
        assert (a.path, b.path) == (url, str(SESSION))
        assert (a.chunks, a.lines, a.format) == (b.chunks, b.lines, b.format)
    report = check_file(url, policy="harness")
    assert report.error is None and [s.ok for s in report.streams] == [True, True]
    assert [s.name for s in report.streams] == [f"{url}#0", f"{url}#1"]


@cloud
def test_a_provider_sse_recording_is_read_from_s3(capsys: pytest.CaptureFixture[str], s3: Bucket) -> None:
    url = s3.put("providers/tool_use_response.sse", PROVIDER_SSE.read_bytes())
    status, remote, err = checked(capsys, url)
    assert (status, err) == (0, "")
    assert remote[0]["format"] == "anthropic-sse" and remote[0]["tool_calls"]
    assert renamed(remote, "x") == renamed(local_reports(capsys, PROVIDER_SSE), "x")


#: A stream without its finish: STREAM_TRUNCATED, exit 1.
CUT_OFF = jsonl(SEED_CHUNKS[:-1])


def plain_text(out: str, name: str, instead: str) -> str:
    """The command's text output with one file's name replaced and the time taken left out."""
    return re.sub(r" in \d+\.\d+ s:", " in - s:", out.replace(name, instead))


@cloud
@pytest.mark.parametrize("json", [False, True])
def test_the_command_reports_an_s3_file_as_the_local_file(
    capsys: pytest.CaptureFixture[str], s3: Bucket, tmp_path: Path, json: bool
) -> None:
    """Same lines, same summary, same exit status: only the name differs."""
    output = ["--json"] if json else ["--no-progress"]
    for name, data, options, expected in (
        ("session.jsonl", SESSION.read_bytes(), ["--policy", "harness"], 0),
        ("cut-off.jsonl", CUT_OFF, [], 1),
    ):
        disk = tmp_path / name
        disk.write_bytes(data)
        url = s3.put(f"cmd/{name}", data)
        remote = run(capsys, "check", *output, *options, url)
        local = run(capsys, "check", *output, *options, str(disk))
        assert remote[0] == local[0] == expected
        assert remote[2] == local[2] == ""
        assert plain_text(remote[1], url, "NAME") == plain_text(local[1], str(disk), "NAME")
        assert url in remote[1]


@cloud
def test_assemble_reads_an_s3_url(capsys: pytest.CaptureFixture[str], s3: Bucket) -> None:
    url = s3.put("one/seed.jsonl.gz", gz(jsonl(SEED_CHUNKS)))
    status, out, err = run(capsys, "assemble", "--compact", url)
    assert (status, err) == (0, "")
    assert out == _cli.json_text(sf.assemble(SEED_CHUNKS).to_wire()) + "\n"


@cloud
def test_a_missing_object_or_bucket_is_a_file_that_cannot_be_read(
    capsys: pytest.CaptureFixture[str], s3: Bucket
) -> None:
    good = s3.put("here/good.jsonl", jsonl(SEED_CHUNKS))
    missing, no_bucket = s3.url("here/missing.jsonl"), f"s3://{s3.name}-none/x.jsonl"
    no_object = s3.url("here/no-such-thing")  # no suffix: asked whether it is a folder, then opened
    status, found, err = checked(capsys, missing, good, no_bucket, no_object)
    assert status == _cli.EXIT_USAGE
    assert [r["path"] for r in found] == [good] and found[0]["ok"]
    lines = err.splitlines()
    assert lines[0] == f"streamfsm: {missing}: cannot read: No such file or directory"
    assert lines[1].startswith(f"streamfsm: {no_bucket}: cannot read: No such file or directory")
    assert "bucket" in lines[1]
    assert lines[2] == f"streamfsm: {no_object}: cannot read: No such file or directory"
    assert len(lines) == 3
    assert run(capsys, "assemble", missing)[:2] == (_cli.EXIT_USAGE, "")
    with pytest.raises(FileNotFoundError, match="No such file or directory"):
        list(sf.read_recordings(missing))
    with pytest.raises(FileNotFoundError, match="No such file or directory"):
        list(sf.read_recordings(no_bucket))


#: Objects under one prefix: recordings at every depth, compressed ones, hidden ones, and a file that is not one.
LAYOUT: dict[str, bytes] = {
    "sessions/2026-11-01/a.jsonl": jsonl(SEED_CHUNKS),
    "sessions/2026-11-01/deep/er/b.jsonl": CUT_OFF,
    "sessions/2026-11-01/.hidden/c.jsonl": jsonl(SEED_CHUNKS),
    "sessions/2026-11-01/.d.jsonl": jsonl(SEED_CHUNKS),
    "sessions/2026-11-02/e.jsonl.gz": gz(jsonl(SEED_CHUNKS)),
    "sessions/2026-11-02/f.sse": PROVIDER_SSE.read_bytes(),
    "sessions/2026-11-02/notes.txt": b"not a recording",
    "sessions/2026-12-01/g.ndjson": jsonl(SEED_CHUNKS),
    "elsewhere/h.jsonl": jsonl(SEED_CHUNKS),
}
#: What a glob or a walk of LAYOUT finds, by pattern (relative to the root the layout is put under).
FOUND: dict[str, list[str]] = {
    "sessions/2026-11-*/**/*.jsonl": ["sessions/2026-11-01/a.jsonl", "sessions/2026-11-01/deep/er/b.jsonl"],
    "sessions/2026-11-*/**/*.jsonl*": [
        "sessions/2026-11-01/a.jsonl",
        "sessions/2026-11-01/deep/er/b.jsonl",
        "sessions/2026-11-02/e.jsonl.gz",
    ],
    "sessions/*/.d.jsonl": ["sessions/2026-11-01/.d.jsonl"],  # a hidden name the pattern names
    # Folders matched are walked.
    "sessions/2026-1?-0[2-9]": ["sessions/2026-11-02/e.jsonl.gz", "sessions/2026-11-02/f.sse"],
    # A folder and what is in it both match: each file once.
    "sessions/2026-11-01/**": ["sessions/2026-11-01/a.jsonl", "sessions/2026-11-01/deep/er/b.jsonl"],
    # Walks.
    "sessions": [
        "sessions/2026-11-01/a.jsonl",
        "sessions/2026-11-01/deep/er/b.jsonl",
        "sessions/2026-11-02/e.jsonl.gz",
        "sessions/2026-11-02/f.sse",
        "sessions/2026-12-01/g.ndjson",
    ],
    "sessions/2026-11-01/": ["sessions/2026-11-01/a.jsonl", "sessions/2026-11-01/deep/er/b.jsonl"],
}


def expanded(argument: str) -> list[str]:
    found = _walk.named_files([argument])
    assert all(i.error is None and i.skipped is None for i in found), found
    return [i.path for i in found]


@cloud
def test_a_remote_glob_and_a_remote_folder(capsys: pytest.CaptureFixture[str], s3: Bucket) -> None:
    for key, data in LAYOUT.items():
        s3.put(key, data)
    root = f"s3://{s3.name}/"
    for pattern, files in FOUND.items():
        assert expanded(root + pattern) == [root + f for f in files], pattern
    sizes = {i.path: i.size for i in _walk.named_files([root + "sessions"])}
    assert sizes[root + "sessions/2026-11-02/f.sse"] == len(LAYOUT["sessions/2026-11-02/f.sse"])
    # Through the command: every file checked, by the names above.
    status, found, err = checked(capsys, root + "sessions/2026-11-*/**/*.jsonl*", root + "sessions/2026-12-01")
    assert (status, err) == (1, "")  # b.jsonl is cut off
    assert [(r["path"], r["ok"]) for r in found] == [
        (root + "sessions/2026-11-01/a.jsonl", True),
        (root + "sessions/2026-11-01/deep/er/b.jsonl", False),
        (root + "sessions/2026-11-02/e.jsonl.gz", True),
        (root + "sessions/2026-12-01/g.ndjson", True),
    ]
    # A pattern that matches nothing, a folder with no recordings: inputs that cannot be read, never silence.
    s3.put("empty/notes.txt", b"not a recording")
    status, found, err = checked(capsys, root + "sessions/2027-*/*.jsonl", root + "empty", root + "elsewhere")
    assert status == _cli.EXIT_USAGE
    assert [r["path"] for r in found] == [root + "elsewhere/h.jsonl"]
    assert err.splitlines() == [
        f"streamfsm: {root}sessions/2027-*/*.jsonl: cannot read: no file matches this pattern",
        f"streamfsm: {root}empty: no recordings (*.jsonl, *.ndjson, *.sse, also .gz or .zst) here",
    ]


def test_a_local_glob_and_a_local_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for key, data in LAYOUT.items():
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_bytes(data)
    root = f"{tmp_path}/"
    for pattern, files in FOUND.items():
        assert expanded(root + pattern) == [os.path.normpath(root + f) for f in files], pattern
    status, found, err = checked(capsys, root + "sessions/2026-11-*/**/*.jsonl*", root + "sessions/2027-*")
    assert status == _cli.EXIT_USAGE
    assert [(r["path"], r["ok"]) for r in found] == [
        (root + "sessions/2026-11-01/a.jsonl", True),
        (root + "sessions/2026-11-01/deep/er/b.jsonl", False),
        (root + "sessions/2026-11-02/e.jsonl.gz", True),
    ]
    assert err == f"streamfsm: {root}sessions/2027-*: cannot read: no file matches this pattern\n"


def test_a_local_name_with_pattern_characters_is_that_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    named = tmp_path / "take[1]?.jsonl"
    named.write_bytes(jsonl(SEED_CHUNKS))
    (tmp_path / "take1x.jsonl").write_bytes(CUT_OFF)  # what the name matches as a pattern
    status, found, _ = checked(capsys, str(named))
    assert status == 0 and [r["path"] for r in found] == [str(named)]


def test_a_fifo_a_pattern_matches_is_skipped_as_in_a_folder(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "live.jsonl")
    (tmp_path / "good.jsonl").write_bytes(jsonl(SEED_CHUNKS))
    found = _walk.named_files([f"{tmp_path}/*.jsonl"])
    assert [(i.path, i.skipped) for i in found] == [
        (f"{tmp_path}/good.jsonl", None),
        (f"{tmp_path}/live.jsonl", "skipped: a FIFO, not a regular file"),
    ]


# -- compressed files --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".gz", pytest.param(".zst", marks=cloud)])
@pytest.mark.parametrize("source", [SESSION, PROVIDER_SSE], ids=["session", "sse"])
def test_a_compressed_file_reads_as_the_plain_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, suffix: str, source: Path
) -> None:
    path = tmp_path / (source.name + suffix)
    path.write_bytes(COMPRESS[suffix](source.read_bytes()))
    assert renamed(local_reports(capsys, path), "x") == renamed(local_reports(capsys, source), "x")
    assert [r.chunks for r in sf.read_recordings(path)] == [r.chunks for r in sf.read_recordings(source)]


@cloud
@pytest.mark.parametrize("suffix", [".gz", ".zst", ".gz.zst"])
def test_a_compressed_object_on_s3(capsys: pytest.CaptureFixture[str], s3: Bucket, suffix: str) -> None:
    data = SESSION.read_bytes()
    for layer in suffix.split(".")[1:]:  # .gz.zst: gzip first, zstd around it
        data = COMPRESS["." + layer](data)
    url = s3.put(f"packed/session.jsonl{suffix}", data)
    status, found, err = checked(capsys, "--policy", "harness", url)
    assert (status, err) == (0, "")
    assert renamed(found, "x") == renamed(local_reports(capsys, SESSION, "--policy", "harness"), "x")


@cloud
def test_zstd_frames_one_after_another_are_one_file(tmp_path: Path) -> None:
    data = SESSION.read_bytes()
    for frames in (1, 2, 7, 300):  # 300: frames far smaller than what is read at a time
        path = tmp_path / f"{frames}.jsonl.zst"
        path.write_bytes(zst(data, frames))
        with _sources.open_binary(path) as handle:
            assert handle.read() == data, frames
    empty = tmp_path / "empty.jsonl.zst"
    empty.write_bytes(b"")
    with _sources.open_binary(empty) as handle:
        assert handle.read() == b""


def _flipped(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes(b ^ 0x5A for b in data[middle : middle + 16]) + data[middle + 16 :]


#: Broken compressed files, and the start of what ``check`` says of each.
BROKEN: dict[str, tuple[str, Any, str]] = {
    "gz-cut-off": (".gz", lambda d: gz(d)[: len(gz(d)) // 2], "gzip data ends early (a cut-off file?)"),
    "gz-corrupt": (".gz", lambda d: _flipped(gz(d)), "corrupt gzip data: "),
    "not-gz": (".gz", lambda d: d, "corrupt gzip data: Not a gzipped file"),
    "zst-cut-off": (".zst", lambda d: zst(d)[: len(zst(d)) // 2], "zstd data ends inside a frame (a cut-off file?)"),
    "zst-corrupt": (".zst", lambda d: _flipped(zst(d)), "corrupt zstd data: "),
    "not-zst": (".zst", lambda d: d, "corrupt zstd data: "),
}


@pytest.mark.parametrize(
    "case", [k if k.startswith(("gz", "not-gz")) else pytest.param(k, marks=cloud) for k in BROKEN]
)
def test_a_broken_compressed_file_cannot_be_read(capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str) -> None:
    suffix, make, said = BROKEN[case]
    broken = tmp_path / f"broken.jsonl{suffix}"
    broken.write_bytes(make(SESSION.read_bytes()))
    good = tmp_path / "good.jsonl"
    good.write_bytes(jsonl(SEED_CHUNKS))
    status, found, err = checked(capsys, "--policy", "harness", str(broken), str(good))
    assert status == _cli.EXIT_USAGE
    assert [r["path"] for r in found] == [str(good)]  # the others are still checked
    assert err.startswith(f"streamfsm: {broken}: cannot read: {said}") and err.count("\n") == 1, err
    with pytest.raises(OSError, match=re.escape(said)):
        list(sf.read_recordings(broken))


def test_a_bomb_of_one_endless_line_is_refused_at_the_bound_on_a_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """129 MiB of one line in 130 KB of gzip: refused after MAX_LINE_BYTES (128 MiB) of it, as /dev/zero is."""
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as out:
        block = b"x" * (1 << 20)
        for _ in range(129):
            out.write(block)
    assert bomb.stat().st_size < 1 << 20
    status, found, err = checked(capsys, str(bomb))
    assert (status, found) == (_cli.EXIT_USAGE, [])
    assert err == f"streamfsm: {bomb}: cannot read: line 1 is longer than 128 MiB (a line with no end?)\n"


# -- other storage -----------------------------------------------------------------------------------------------


@cloud
def test_memory_urls(capsys: pytest.CaptureFixture[str]) -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    root = f"streamfsm-{uuid.uuid4().hex[:12]}"
    fs.pipe(f"/{root}/a/x.jsonl", jsonl(SEED_CHUNKS))
    fs.pipe(f"/{root}/a/y.jsonl.gz", gz(jsonl(SEED_CHUNKS)))
    fs.pipe(f"/{root}/b/z.ndjson", CUT_OFF)
    try:
        url = f"memory://{root}"
        status, found, err = checked(capsys, f"{url}/a/x.jsonl", url, f"{url}/*/*.jsonl*")
        assert (status, err) == (1, "")
        assert [r["path"] for r in found] == [
            f"{url}/a/x.jsonl",  # as written, not memory:///...
            f"{url}/a/x.jsonl",
            f"{url}/a/y.jsonl.gz",
            f"{url}/b/z.ndjson",
            f"{url}/a/x.jsonl",
            f"{url}/a/y.jsonl.gz",
        ]
        assert [r["ok"] for r in found] == [True, True, True, False, True, True]
        assert [r.chunks for r in sf.read_recordings(f"{url}/a/y.jsonl.gz")] == [SEED_CHUNKS]
        chained = f"simplecache::{url}/a/y.jsonl.gz"  # fsspec's chains: a local copy, then the same reading
        assert [r.chunks for r in sf.read_recordings(chained)] == [SEED_CHUNKS]
    finally:
        fs.rm(f"/{root}", recursive=True)


@cloud
def test_an_http_url(capsys: pytest.CaptureFixture[str], s3: Bucket) -> None:
    """fsspec's HTTP file system, against the same server (a public object's plain URL)."""
    s3.put("web/seed.jsonl.gz", gz(jsonl(SEED_CHUNKS)))
    s3.fs.chmod(f"{s3.name}/web/seed.jsonl.gz", "public-read")
    url = f"{s3.endpoint}/{s3.name}/web/seed.jsonl.gz"
    status, found, err = checked(capsys, url, f"{s3.endpoint}/{s3.name}/web/missing.jsonl")
    assert status == _cli.EXIT_USAGE
    assert [(r["path"], r["ok"]) for r in found] == [(url, True)]
    assert err == f"streamfsm: {s3.endpoint}/{s3.name}/web/missing.jsonl: cannot read: No such file or directory\n"


@cloud
def test_storage_that_is_not_installed_or_not_known(capsys: pytest.CaptureFixture[str]) -> None:
    status, found, err = checked(capsys, "bogus://bucket/x.jsonl", "gs://bucket/x.jsonl")
    assert (status, found) == (_cli.EXIT_USAGE, [])
    lines = err.splitlines()
    assert lines[0] == "streamfsm: bogus://bucket/x.jsonl: cannot read: bogus:// is not a kind of storage fsspec knows"
    assert lines[1].startswith("streamfsm: gs://bucket/x.jsonl: cannot read: ") and "gcsfs" in lines[1]


def test_without_the_cloud_extra_a_url_says_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for module in ("fsspec", "fsspec.core", "zstandard"):
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed: importing it fails
    packed = tmp_path / "a.jsonl.zst"
    packed.write_bytes(b"zstd, it says")
    status, found, err = checked(capsys, "s3://bucket/x.jsonl", "gs://bucket/folder", str(packed))
    assert (status, found) == (_cli.EXIT_USAGE, [])
    assert err.splitlines() == [
        "streamfsm: s3://bucket/x.jsonl: cannot read: install streamfsm[cloud] to read s3:// URLs",
        "streamfsm: gs://bucket/folder: cannot read: install streamfsm[cloud] to read gs:// URLs",
        f"streamfsm: {packed}: cannot read: install streamfsm[cloud] (zstandard) to read .zst files",
    ]
    with pytest.raises(OSError, match=re.escape("install streamfsm[cloud] to read s3:// URLs")):
        list(sf.read_recordings("s3://bucket/x.jsonl"))
    # Local files, .gz included, need nothing of it.
    plain = tmp_path / "seed.jsonl.gz"
    plain.write_bytes(gz(jsonl(SEED_CHUNKS)))
    assert [r.chunks for r in sf.read_recordings(plain)] == [SEED_CHUNKS]


def test_what_is_a_url() -> None:
    for url in (
        "s3://b/k",
        "gs://b",
        "az://c/p",
        "https://h/x.jsonl",
        "memory://x",
        "file:///data/x.jsonl",
        "simplecache::s3://b/k",
    ):
        assert _sources.is_url(url), url
    for path in ("a.jsonl", "/data/x.jsonl", "C://x", "./s3://x", "-", "sessions/2026-11-*/**/*.jsonl"):
        assert not _sources.is_url(path), path


def test_opening_a_local_file_is_open_as_before(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"{}\n")
    with _sources.open_binary(path) as handle:
        assert isinstance(handle, io.BufferedReader) and isinstance(handle.raw, io.FileIO)
        assert handle.name == str(path)
    packed = tmp_path / "x.jsonl.gz"
    packed.write_bytes(gz(b"{}\n" * 3))
    with _sources.open_binary(packed) as handle:
        assert handle.name == str(packed)
        assert handle.readline() == b"{}\n" and handle.read() == b"{}\n{}\n"
    assert handle.closed and handle.raw.closed


#: Run in a child process: read a URL's lines as the reader does, then print the process's peak resident memory.
PEAK = """
import subprocess
import sys
from streamfsm._lines import bounded_lines
from streamfsm._sources import open_binary
with open_binary(sys.argv[1]) as handle:
    lines = sum(1 for _ in bounded_lines(handle))
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(lines, int(peak.split()[1]) * 1024)
"""


@cloud
def test_an_object_is_streamed_not_read_whole(s3: Bucket) -> None:
    """A 48 MiB object is read with at most 4 x REMOTE_BLOCK_BYTES (8 MiB) more memory than a 1 KB one."""
    text = os.urandom(24 << 20).hex().encode()
    lines = [text[at : at + 1023] + b"\n" for at in range(0, len(text), 1023)]
    big = s3.put("big/random.jsonl", b"".join(lines))
    small = s3.put("big/small.jsonl", jsonl(SEED_CHUNKS))
    peaks = {}
    for url, count in ((small, len(SEED_CHUNKS)), (big, len(lines))):
        done = subprocess.run([sys.executable, "-c", PEAK, url], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        read, peaks[url] = map(int, done.stdout.split())
        assert read == count
    assert peaks[big] - peaks[small] < 4 * _sources.REMOTE_BLOCK_BYTES, peaks
