"""Where recordings live and how they are opened: the one place that knows.

A *name* is a local path, or a URL of any storage fsspec knows (``s3://``, ``gs://``, ``az://``,
``https://``, ``memory://``, ``file://``, chained URLs such as ``simplecache::s3://...``), which needs the
``cloud`` extra. A name ending ``.gz`` or ``.zst`` (local or remote, and stacked: ``x.jsonl.gz.zst``) is
decompressed as it is read: gzip by the standard library, zstd by ``zstandard`` (the ``cloud`` extra).

:func:`open_binary` opens a name as a binary file object that is read as it comes: nothing is copied to a
temporary file, and an object is never read into memory whole (a remote object is fetched in ranges of
:data:`REMOTE_BLOCK_BYTES`). Whatever goes wrong, opening or reading, is an ``OSError`` whose message says
why: a missing object, a missing bucket, a URL without the extra that reads it, corrupt or cut-off compressed
data. So every reader of recordings reports it as a file that cannot be read, never with a traceback.

Which files the command's arguments name (folders walked, globs matched) is ``_walk.py``'s.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import os
import re
import zlib
from collections.abc import Callable
from typing import Any, Final

from ._extras import missing

__all__ = [
    "COMPRESSED_SUFFIXES",
    "ONE_OBJECT",
    "REMOTE_BLOCK_BYTES",
    "STDIN",
    "STREAM_SUFFIXES",
    "SourceError",
    "filesystem",
    "is_url",
    "open_binary",
    "os_error",
    "recording_suffixes",
    "scheme",
]

#: The name of standard input on the command line.
STDIN: Final = "-"
#: Files a walked folder contributes (a file named on the command line is read whatever its name), each also
#: compressed (:func:`recording_suffixes`).
STREAM_SUFFIXES: Final = (".jsonl", ".ndjson", ".sse")
#: Suffixes that are decompressed as a file is read (after a recording's own: ``a.jsonl.gz``).
COMPRESSED_SUFFIXES: Final = (".gz", ".zst")
#: How much of a remote object is fetched at a time (one range request), and held.
REMOTE_BLOCK_BYTES: Final = 8 * 1024 * 1024
#: What the buffered reader :func:`open_binary` returns asks of the layers below at a time.
_BUFFER_BYTES: Final = 64 * 1024
#: How much compressed input one zstd decompression call is given: zstd's largest ratio (an RLE block, 4
#: bytes for 128 KiB) makes that at most 32 MiB of output a call, however the file was made.
_ZSTD_SLICE: Final = 1024

#: A URL: a scheme of two characters or more (``C:`` is a drive), then ``://``, or ``::`` for fsspec's chains.
_URL: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]+)(?:://|::)")
#: Schemes whose URLs name one object: a query string is not a pattern, and a page of links is not a folder.
ONE_OBJECT: Final = ("http", "https")


class SourceError(OSError):
    """A recording that cannot be opened or read, with why (``str(error)``): an ``OSError`` as a missing file is."""


def is_url(name: str) -> bool:
    """Whether ``name`` is a URL (``s3://...``, ``simplecache::s3://...``) rather than a local path."""
    return _URL.match(name) is not None


def scheme(url: str) -> str:
    match = _URL.match(url)
    return match.group(1).lower() if match else ""


def recording_suffixes() -> tuple[str, ...]:
    """The names a walked folder contributes: ``STREAM_SUFFIXES``, each also with a compressed suffix after it."""
    return (*STREAM_SUFFIXES, *(s + c for s in STREAM_SUFFIXES for c in COMPRESSED_SUFFIXES))


# -- opening --------------------------------------------------------------------------------------------


def open_binary(name: str | os.PathLike[str]) -> io.BufferedReader:
    """``name`` opened for reading as bytes, decompressed by its suffix, read as it comes.

    A local path without a compressed suffix is ``open(name, "rb")``, as it always was. Any error is an
    ``OSError`` saying why (see the module's docstring), raised here when the name cannot be opened, or
    by a read when the data turns out corrupt or cut off. Closing the file closes every layer.
    """
    text = os.fspath(name)
    remote = isinstance(name, str) and is_url(name)
    layers = _compression(text)
    if not remote and not layers:
        return open(text, "rb")
    stack = contextlib.ExitStack()
    try:
        top: Any = stack.enter_context(_open_remote(text) if remote else open(text, "rb"))  # noqa: SIM115 (the stack)
        errors: list[tuple[type[BaseException], str]] = []
        for suffix in layers:
            top = stack.enter_context(_DECODERS[suffix](top, errors))
        return io.BufferedReader(_Guarded(top, stack, text, errors), _BUFFER_BYTES)
    except BaseException:
        stack.close()
        raise


def _compression(name: str) -> list[str]:
    """The compressed suffixes at the end of ``name``, the outermost (the last) first.

    In a chain the name is the first part that is a URL (``s3://b/x.gz`` of ``simplecache::s3://b/x.gz``, the
    member ``zip://x.gz`` of ``zip://x.gz::s3://b/a.zip``).
    """
    path = next((part for part in name.split("::") if "://" in part), name)
    if scheme(path) in ONE_OBJECT:
        path = path.split("#", 1)[0].split("?", 1)[0]
    layers: list[str] = []
    while suffix := next((s for s in COMPRESSED_SUFFIXES if path.endswith(s)), None):
        layers.append(suffix)
        path = path[: -len(suffix)]
    return layers


def filesystem(url: str) -> tuple[Any, str]:
    """fsspec's file system for ``url`` and the path in it; :class:`SourceError` when it cannot be had."""
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise SourceError(missing(f"reading {scheme(url)}:// URLs", "cloud")) from None
    try:
        fs, path = url_to_fs(url)
    except ImportError as exc:  # the package of that storage (gcsfs, adlfs, ...): fsspec names it
        raise SourceError(f"{exc} (to read {scheme(url)}:// URLs)") from None
    except ValueError as exc:
        if "Protocol not known" in str(exc):
            raise SourceError(f"{scheme(url)}:// is not a kind of storage fsspec knows") from None
        raise os_error(exc, url) from exc
    except Exception as exc:  # a storage's own complaint (bad options, credentials): still an OSError
        raise os_error(exc, url) from exc
    return fs, path


def _open_remote(url: str) -> Any:
    fs, path = filesystem(url)
    try:
        return fs.open(path, "rb", block_size=REMOTE_BLOCK_BYTES)
    except Exception as exc:
        raise os_error(exc, url, path) from exc


def os_error(exc: BaseException, *names: str) -> OSError:
    """``exc``, from a storage or a decompressor, as an ``OSError`` that says why in words.

    A missing object or bucket is ``FileNotFoundError`` (``No such file or directory``, as for a local file,
    with the storage's own words after it when they add anything), a refusal ``PermissionError``.
    """
    if isinstance(exc, SourceError):
        return exc
    detail = str(exc.strerror if isinstance(exc, OSError) and exc.strerror else exc).strip()
    if detail.strip("'\"") in names:  # s3fs says only the key
        detail = ""
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundError(errno.ENOENT, _with("No such file or directory", detail))
    if isinstance(exc, PermissionError):
        return PermissionError(errno.EACCES, _with("Permission denied", detail))
    if isinstance(exc, OSError):
        return exc
    return SourceError(_with(type(exc).__name__, detail))


def _with(words: str, detail: str) -> str:
    return f"{words}: {detail}" if detail and detail != words else words


class _Guarded(io.RawIOBase):
    """The top of a chain of layers (storage, decompressors), every error it raises made an ``OSError``."""

    def __init__(
        self, top: Any, stack: contextlib.ExitStack, name: str, errors: list[tuple[type[BaseException], str]]
    ) -> None:
        super().__init__()
        self._read = getattr(top, "read1", None) or top.read
        self._stack = stack
        self.name = name
        self._errors = tuple(errors)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self._read(len(buffer))
        except Exception as exc:
            raise self._error(exc) from exc
        size = len(data)
        memoryview(buffer).cast("B")[:size] = data
        return size

    def _error(self, exc: Exception) -> OSError:
        for kind, what in self._errors:
            if isinstance(exc, kind):
                return SourceError(what if isinstance(exc, EOFError) else f"{what}: {exc}")
        return os_error(exc, self.name)

    def close(self) -> None:
        if not self.closed:
            try:
                self._stack.close()
            finally:
                super().close()


def _gunzip(raw: Any, errors: list[tuple[type[BaseException], str]]) -> io.IOBase:
    errors += [(EOFError, "gzip data ends early (a cut-off file?)"), (gzip.BadGzipFile, "corrupt gzip data")]
    errors.append((zlib.error, "corrupt gzip data"))
    return gzip.GzipFile(fileobj=raw, mode="rb")


def _unzstd(raw: Any, errors: list[tuple[type[BaseException], str]]) -> io.IOBase:
    try:
        import zstandard
    except ImportError:
        raise SourceError(missing("reading .zst files", "cloud")) from None
    errors.append((zstandard.ZstdError, "corrupt zstd data"))
    return _ZstdFrames(raw, zstandard.ZstdDecompressor())


_DECODERS: Final[dict[str, Callable[[Any, list[tuple[type[BaseException], str]]], io.IOBase]]] = {
    ".gz": _gunzip,
    ".zst": _unzstd,
}


class _ZstdFrames(io.RawIOBase):
    """zstd frames, one after another, decompressed as they are read.

    Input that ends inside a frame is an error (zstandard's own stream reader returns what it has, silently:
    a cut-off download would pass for a shorter file). The input is given to the decompressor
    :data:`_ZSTD_SLICE` bytes at a time, so that what one call makes stays bounded.
    """

    def __init__(self, raw: Any, decompressor: Any) -> None:
        super().__init__()
        self._raw = raw
        self._decompressor = decompressor
        self._frame: Any = None  # the frame being decompressed; None between frames
        self._input = memoryview(b"")
        self._output = b""
        self._at = 0

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        """At most ``size`` bytes (any positive number when ``size`` is negative), ``b""`` at the end."""
        while self._at >= len(self._output):
            if not self._decompress():
                return b""
        end = len(self._output) if size < 0 else min(self._at + size, len(self._output))
        data = self._output[self._at : end] if self._at or end < len(self._output) else self._output
        self._at = end
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read1(len(buffer))
        memoryview(buffer).cast("B")[: len(data)] = data
        return len(data)

    def _decompress(self) -> bool:
        """Decompress the next slice of input; ``False`` at the end of the input, after a complete frame."""
        if not self._input:
            block = self._raw.read(_BUFFER_BYTES)
            if not block:
                if self._frame is not None:
                    raise SourceError("zstd data ends inside a frame (a cut-off file?)")
                return False
            self._input = memoryview(block)
        if self._frame is None:
            self._frame = self._decompressor.decompressobj()
        piece, self._input = self._input[:_ZSTD_SLICE], self._input[_ZSTD_SLICE:]
        self._output, self._at = self._frame.decompress(piece), 0
        if self._frame.eof:  # the frame is complete: what follows it starts the next one
            rest = self._frame.unused_data
            self._frame = None
            if rest:
                self._input = memoryview(rest + self._input.tobytes())
        return True
