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

:func:`_inputs` expands the command's arguments into the files to read: a folder (local, or a URL of one)
walked for recordings, a glob (local, or in a URL) matched, ``-`` standard input.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import gzip
import io
import os
import re
import stat
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "COMPRESSED_SUFFIXES",
    "REMOTE_BLOCK_BYTES",
    "STDIN",
    "SourceError",
    "is_url",
    "open_binary",
    "recording_suffixes",
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
_EXTRA: Final = "streamfsm[cloud]"

#: A URL: a scheme of two characters or more (``C:`` is a drive), then ``://``, or ``::`` for fsspec's chains.
_URL: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]+)(?:://|::)")
#: The characters that make an argument a pattern (``*``, ``**``, ``?``, ``[...]``).
_MAGIC: Final = re.compile(r"[*?[]")
#: Schemes whose URLs name one object: a query string is not a pattern, and a page of links is not a folder.
_ONE_OBJECT: Final = ("http", "https")


class SourceError(OSError):
    """A recording that cannot be opened or read, with why (``str(error)``): an ``OSError`` as a missing file is."""


def is_url(name: str) -> bool:
    """Whether ``name`` is a URL (``s3://...``, ``simplecache::s3://...``) rather than a local path."""
    return _URL.match(name) is not None


def _scheme(url: str) -> str:
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
    if _scheme(path) in _ONE_OBJECT:
        path = path.split("#", 1)[0].split("?", 1)[0]
    layers: list[str] = []
    while suffix := next((s for s in COMPRESSED_SUFFIXES if path.endswith(s)), None):
        layers.append(suffix)
        path = path[: -len(suffix)]
    return layers


def _filesystem(url: str) -> tuple[Any, str]:
    """fsspec's file system for ``url`` and the path in it; :class:`SourceError` when it cannot be had."""
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise SourceError(f"install {_EXTRA} to read {_scheme(url)}:// URLs") from None
    try:
        fs, path = url_to_fs(url)
    except ImportError as exc:  # the package of that storage (gcsfs, adlfs, ...): fsspec names it
        raise SourceError(f"{exc} (to read {_scheme(url)}:// URLs)") from None
    except ValueError as exc:
        if "Protocol not known" in str(exc):
            raise SourceError(f"{_scheme(url)}:// is not a kind of storage fsspec knows") from None
        raise _os_error(exc, url) from exc
    except Exception as exc:  # a storage's own complaint (bad options, credentials): still an OSError
        raise _os_error(exc, url) from exc
    return fs, path


def _open_remote(url: str) -> Any:
    fs, path = _filesystem(url)
    try:
        return fs.open(path, "rb", block_size=REMOTE_BLOCK_BYTES)
    except Exception as exc:
        raise _os_error(exc, url, path) from exc


def _os_error(exc: BaseException, *names: str) -> OSError:
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
        return _os_error(exc, self.name)

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
        raise SourceError(f"install {_EXTRA} (zstandard) to read .zst files") from None
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


# -- the command's arguments ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Input:
    path: str
    error: str | None = None
    #: Why a file met in a walked folder is not read (a device, a FIFO, a socket), said on standard error.
    skipped: str | None = None
    #: The file's size in bytes when a listing gave it (a remote folder or glob); ``None`` when not asked.
    size: int | None = None


def _inputs(paths: Sequence[str], *, follow_links: bool = False) -> list[_Input]:
    """The files to read, in the order of ``paths``: each path as given; a folder walked for recordings
    (:func:`recording_suffixes`); a glob's matches, sorted (a folder matched is walked); the same for URLs.
    What one argument expands to is sorted and holds each file once.

    Local folders and patterns are read by one walker, with one rule for links (:func:`_listing`): a link to a
    folder is never followed (a link back up would make a walk endless, and ``**`` twice as long at each level);
    a link to a file is followed where it stays within the folder walked (for a pattern, the folder its wildcards
    start in), and past it only with ``follow_links`` (the command's ``--follow-links``): a folder may hold a link
    to ``~/.env`` that no one meant to have read. A name given as it is, or the literal part of a pattern, is
    followed wherever it leads: the user named it.
    """
    found: list[_Input] = []
    for path in paths:
        if path == STDIN:
            found.append(_Input(path))
        elif is_url(path):
            found.extend(_remote(path))
        elif _MAGIC.search(path) and not os.path.lexists(path):  # a file named a[1].jsonl is that file
            found.extend(_local_glob(path, follow_links))
        elif os.path.isdir(path):
            found.extend(_folder(path, follow_links))
        else:
            found.append(_Input(path))
    return found


def _none_here(path: str) -> _Input:
    listed = ", ".join("*" + s for s in STREAM_SUFFIXES)
    return _Input(path, f"no recordings ({listed}, also {' or '.join(COMPRESSED_SUFFIXES)}) here")


def _unmatched(pattern: str) -> _Input:
    return _Input(pattern, "cannot read: no file matches this pattern")


def _folder(path: str, follow_links: bool, within: str | None = None) -> list[_Input]:
    walked = sorted(_walk(path, follow_links, within), key=lambda i: i.path)
    return walked if any(i.skipped is None for i in walked) else [*walked, _none_here(path)]


def _once(inputs: list[_Input]) -> list[_Input]:
    """``inputs`` sorted by path, each path once (the first of the same path kept)."""
    once: dict[str, _Input] = {}
    for item in sorted(inputs, key=lambda i: i.path):
        once.setdefault(item.path, item)
    return list(once.values())


def _local_glob(pattern: str, follow_links: bool) -> list[_Input]:
    """A pattern's matches (``*``, ``?``, ``[...]`` within a name, ``**`` any depth of folders; hidden names only
    where the pattern's part says so, as ``glob`` does), found by the walker's listings: no link to a folder is
    followed below the pattern's literal part, so ``**`` meets each file once and cannot blow up."""
    root, parts = _split_pattern(pattern)
    within = os.path.realpath(root or os.curdir)
    found: list[_Input] = []
    unreadable: list[OSError] = []
    for path, entry in _matches(root, parts, within, follow_links, unreadable):
        if entry.kind == _DIR:
            found.extend(_folder(path, follow_links, within))
        else:
            found.append(_Input(path, skipped=entry.skipped()))
    found.extend(_Input(str(exc.filename), f"cannot read: {exc.strerror or exc}") for exc in unreadable)
    return _once(found) if found else [_unmatched(pattern)]


def _split_pattern(pattern: str) -> tuple[str, list[str]]:
    """The literal folder a pattern starts in (``""``: the current one) and its parts from the first wildcard."""
    seps = os.sep + (os.altsep or "")
    drive, rest = os.path.splitdrive(pattern)
    parts = re.split(f"[{re.escape(seps)}]", rest)
    head = drive + (os.sep if rest[:1] and rest[0] in seps else "")
    parts = [p for p in parts if p]
    literal: list[str] = []
    while parts and _MAGIC.search(parts[0]) is None and len(parts) > 1:
        literal.append(parts.pop(0))
    root = os.path.join(head, *literal) if literal else head
    if pattern.endswith(tuple(seps)):
        parts.append("")  # ``d/*/``: folders only
    return root, parts


def _matches(
    folder: str, parts: list[str], within: str, follow_links: bool, unreadable: list[OSError]
) -> Iterator[tuple[str, _Entry]]:
    """What ``parts`` match below ``folder`` (joined to it as the pattern wrote it), from its listings."""
    part, rest = parts[0], parts[1:]
    if part == "**":
        # No folder at all, then each folder below; last in the pattern, every name below. Hidden names are not
        # gone into nor matched (a part that names one is not ``**``).
        if rest:
            yield from _matches(folder, rest, within, follow_links, unreadable)
        elif folder:
            yield folder, _Entry(_DIR)
        stack = [folder]
        while stack:
            here = stack.pop()
            for name, entry in _listing(here, within, follow_links, unreadable):
                if name.startswith("."):
                    continue
                path = os.path.join(here, name)
                if entry.kind == _DIR:
                    stack.append(path)
                    if rest:
                        yield from _matches(path, rest, within, follow_links, unreadable)
                if not rest:
                    yield path, entry
        return
    if part == "":  # after a last separator: the folder itself, which must be one
        if folder:
            yield folder, _Entry(_DIR)
        return
    hidden = part.startswith(".")
    for name, entry in _listing(folder, within, follow_links, unreadable):
        if (name.startswith(".") and not hidden) or not fnmatch.fnmatch(name, part):
            continue
        path = os.path.join(folder, name)
        if not rest:
            yield path, entry
        elif entry.kind == _DIR:
            yield from _matches(path, rest, within, follow_links, unreadable)


_SPECIAL: Final = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def _special(path: str) -> str | None:
    """What ``path`` (a link followed) is when it is not a regular file; ``None`` for a file, or if unknown."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # reading it says why (a broken link: no such file)
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _SPECIAL if test(mode)), "not a regular file")
    return f"a link to {kind}" if os.path.islink(path) else kind


def _walk(folder: str, follow_links: bool, within: str | None = None) -> Iterator[_Input]:
    """The recordings below ``folder``, the special files skipped, and the folders that could not be read.

    Nothing is skipped in silence. A device, a FIFO or a socket (or a link to one) is not read: ``/dev/zero``
    never ends, and a FIFO with no writer would wait for ever. Named on the command line, it is read. A link
    to a file outside the folder is not read without ``follow_links``; a link to a folder is not followed
    (:func:`_listing`). ``within``: the folder the walk is bounded by, if not ``folder`` itself (a pattern's).
    """
    suffixes = recording_suffixes()
    unreadable: list[OSError] = []
    top = within if within is not None else os.path.realpath(folder)
    stack = [folder]
    while stack:
        here = stack.pop()
        for name, entry in _listing(here, top, follow_links, unreadable):
            if name.startswith("."):
                continue
            path = os.path.join(here, name)
            if entry.kind == _DIR:
                stack.append(path)
            elif name.endswith(suffixes):
                yield _Input(path, skipped=entry.skipped())
    for exc in unreadable:
        yield _Input(str(exc.filename), f"cannot read: {exc.strerror or exc}")


_DIR: Final = "folder"
_FILE: Final = "file"


class _Entry:
    """What the walker makes of a name in a folder: a folder to go into, or a file; for a file, :meth:`skipped`
    says why it is not read (asked only of the files a walk or a pattern takes: it may cost a ``stat``)."""

    __slots__ = ("_follow", "_link", "_path", "_within", "kind")

    def __init__(self, kind: str, path: str = "", link: bool = False, within: str = "", follow: bool = True) -> None:
        self.kind, self._path, self._link, self._within, self._follow = kind, path, link, within, follow

    def skipped(self) -> str | None:
        """Why the file is not read: a device, a FIFO or a socket (or a link to one); a link out of the folder."""
        if self.kind == _DIR:
            return None
        kind = _special(self._path)
        if kind is not None:
            return f"skipped: {kind}, not a regular file"
        if self._link and not self._follow and not _inside(self._path, self._within):
            return "skipped: a link to a file outside the folder (--follow-links reads it)"
        return None


def _listing(folder: str, within: str, follow_links: bool, unreadable: list[OSError]) -> Iterator[tuple[str, _Entry]]:
    """The names in ``folder`` that a walk or a pattern may take, with what each is: the one rule for links.

    A folder is one to go into, unless it is a link (never followed: a link back up would make a walk endless,
    and two would make ``**`` twice as long at each level). A file is read, unless it is a device, a FIFO or a
    socket (or a link to one), or a link that leads out of ``within`` (the real path of the folder walked)
    without ``follow_links``: skipped, and said so (:meth:`_Entry.skipped`). A link that cannot be followed
    (broken, or a loop) is read, and its reading says why. A folder that cannot be listed goes to ``unreadable``.
    """
    try:
        with os.scandir(folder or os.curdir) as listed:
            entries = list(listed)
    except (FileNotFoundError, NotADirectoryError):
        return  # nothing there (a pattern's folder that does not exist matches nothing)
    except OSError as exc:
        exc.filename = folder or os.curdir
        unreadable.append(exc)
        return
    for entry in entries:
        link = entry.is_symlink()
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if not is_dir:
            yield entry.name, _Entry(_FILE, os.path.join(folder, entry.name), link, within, follow_links)
        elif not link:
            yield entry.name, _Entry(_DIR)


def _inside(path: str, within: str) -> bool:
    """Whether ``path``, its links followed, is in the folder whose real path is ``within``."""
    real = os.path.realpath(path)
    return real == within or real.startswith(within.rstrip(os.sep) + os.sep)


# -- remote arguments -----------------------------------------------------------------------------------


def _remote(url: str) -> list[_Input]:
    """A URL's files: a pattern's matches, a folder's recordings, or the URL itself (one request at most
    to tell a folder from a file, none when its name ends as a recording's does)."""
    scheme = _scheme(url)
    pattern = _MAGIC.search(url) is not None and scheme not in _ONE_OBJECT
    if not pattern and (scheme in _ONE_OBJECT or url.endswith(recording_suffixes())):
        return [_Input(url)]
    try:
        fs, path = _filesystem(url)
        try:
            if pattern:
                return _remote_glob(url, fs, path)
            if fs.isdir(path):
                return _remote_folder(_Names(url, path), fs, path)
        finally:
            fs.invalidate_cache()  # s3fs keeps every listing otherwise: about 2 KB an object, for good
    except Exception as exc:
        error = _os_error(exc, url)
        return [_Input(url, f"cannot read: {error.strerror or error}")]
    return [_Input(url)]


@dataclass(frozen=True, slots=True)
class _Names:
    """Names for what a listing under ``root`` (a path in a file system) finds, written as the user wrote
    ``url`` (``memory://x`` stays so, ``az://`` is not made ``abfs://``, a chain keeps its cache)."""

    url: str
    root: str

    def relative(self, path: str) -> str | None:
        """``path`` below the root, ``""`` for the root itself; ``None`` if a listing gave a path elsewhere."""
        root = self.root.rstrip("/")
        if not root:
            return path.lstrip("/")
        if path.rstrip("/") == root:
            return ""
        return path[len(root) + 1 :] if path.startswith(root + "/") else None

    def name(self, path: str, fs: Any) -> str:
        """What reports call ``path``."""
        rest = self.relative(path)
        if rest is None:
            return str(fs.unstrip_protocol(path))
        base = self.url if self.url.endswith("://") else self.url.rstrip("/")
        return base if not rest else base + rest if base.endswith("/") else f"{base}/{rest}"


def _hidden(rest: str) -> bool:
    return any(part.startswith(".") for part in rest.split("/"))


def _remote_folder(names: _Names, fs: Any, root: str) -> list[_Input]:
    """A remote folder walked like a local one: recordings by suffix, hidden names skipped, at any depth.

    The whole listing is asked for at once (fsspec's ``find``: for S3, one request per 1,000 objects) and
    held while it is read, about 1 KB an object.
    """
    suffixes = recording_suffixes()
    found: list[_Input] = []
    for path, info in fs.find(root, detail=True).items():
        rest = names.relative(path)
        if rest is None or _hidden(rest) or not path.endswith(suffixes):
            continue
        kind = info.get("type")
        skipped = None if kind == "file" else f"skipped: {kind or 'not a file'}, not a regular file"
        found.append(_Input(names.name(path, fs), skipped=skipped, size=info.get("size")))
    found = _once(found)
    return found if any(i.skipped is None for i in found) else [*found, _none_here(names.url)]


def _remote_glob(url: str, fs: Any, pattern: str) -> list[_Input]:
    """A URL's pattern matched by fsspec's ``glob`` (``**`` any depth); a folder matched is walked.

    As for a local pattern, a wildcard does not match a hidden name (``.x``) unless the pattern names one.
    """
    literal = url[: _MAGIC.search(url).start()]  # type: ignore[union-attr]  # a pattern: it has one
    literal = literal[: literal.rfind("/") + 1]
    root = "" if literal.endswith("://") or not literal else _filesystem(literal)[1]
    names = _Names(literal or url, root)
    hidden_named = _hidden(pattern[len(root) :].lstrip("/")) if root else _hidden(pattern)
    found: list[_Input] = []
    for path, info in fs.glob(pattern, detail=True).items():
        rest = names.relative(path)
        if rest is not None and _hidden(rest) and not hidden_named:
            continue
        name, kind = names.name(path, fs), info.get("type")
        if kind == "directory":
            found.extend(_remote_folder(_Names(name, path), fs, path))
        else:
            skipped = None if kind == "file" else f"skipped: {kind or 'not a file'}, not a regular file"
            found.append(_Input(name, skipped=skipped, size=info.get("size")))
    return _once(found) if found else [_unmatched(url)]
