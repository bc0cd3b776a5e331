"""The command's arguments as the files to read: a folder (local, or a URL of one) walked for recordings, a glob
(local, or in a URL) matched, ``-`` standard input (:func:`named_files`). One walker for local folders and patterns,
with one rule for links; how a file is then opened is ``_sources.py``'s.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ._sources import (
    COMPRESSED_SUFFIXES,
    ONE_OBJECT,
    STDIN,
    STREAM_SUFFIXES,
    filesystem,
    is_url,
    os_error,
    recording_suffixes,
    scheme,
)

__all__ = ["Input", "named_files"]

#: The characters that make an argument a pattern (``*``, ``**``, ``?``, ``[...]``).
_MAGIC: Final = re.compile(r"[*?[]")


@dataclass(frozen=True, slots=True)
class Input:
    path: str
    error: str | None = None
    #: Why a file met in a walked folder is not read (a device, a FIFO, a socket), said on standard error.
    skipped: str | None = None
    #: The file's size in bytes when a listing gave it (a remote folder or glob); ``None`` when not asked.
    size: int | None = None


def named_files(paths: Sequence[str], *, follow_links: bool = False) -> list[Input]:
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
    found: list[Input] = []
    for path in paths:
        if path == STDIN:
            found.append(Input(path))
        elif is_url(path):
            found.extend(_remote(path))
        elif _MAGIC.search(path) and not os.path.lexists(path):  # a file named a[1].jsonl is that file
            found.extend(_local_glob(path, follow_links))
        elif os.path.isdir(path):
            found.extend(_folder(path, follow_links))
        else:
            found.append(Input(path))
    return found


def _none_here(path: str) -> Input:
    listed = ", ".join("*" + s for s in STREAM_SUFFIXES)
    return Input(path, f"no recordings ({listed}, also {' or '.join(COMPRESSED_SUFFIXES)}) here")


def _unmatched(pattern: str) -> Input:
    return Input(pattern, "cannot read: no file matches this pattern")


def _folder(path: str, follow_links: bool, within: str | None = None) -> list[Input]:
    walked = sorted(_walk(path, follow_links, within), key=lambda i: i.path)
    return walked if any(i.skipped is None for i in walked) else [*walked, _none_here(path)]


def _once(inputs: list[Input]) -> list[Input]:
    """``inputs`` sorted by path, each path once (the first of the same path kept)."""
    once: dict[str, Input] = {}
    for item in sorted(inputs, key=lambda i: i.path):
        once.setdefault(item.path, item)
    return list(once.values())


def _local_glob(pattern: str, follow_links: bool) -> list[Input]:
    """A pattern's matches (``*``, ``?``, ``[...]`` within a name, ``**`` any depth of folders; hidden names only
    where the pattern's part says so, as ``glob`` does), found by the walker's listings: no link to a folder is
    followed below the pattern's literal part, so ``**`` meets each file once and cannot blow up."""
    root, parts = _split_pattern(pattern)
    within = os.path.realpath(root or os.curdir)
    found: list[Input] = []
    unreadable: list[OSError] = []
    for path, entry in _matches(root, parts, within, follow_links, unreadable):
        if entry.kind == _DIR:
            found.extend(_folder(path, follow_links, within))
        else:
            found.append(Input(path, skipped=entry.skipped()))
    found.extend(Input(str(exc.filename), f"cannot read: {exc.strerror or exc}") for exc in unreadable)
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


def _below(folder: str, within: str, follow_links: bool, unreadable: list[OSError]) -> Iterator[tuple[str, _Entry]]:
    """Every name below ``folder``, folders and files, from the walker's listings (:func:`_listing`, bounded by
    ``within``); a hidden name is neither given nor gone into."""
    stack = [folder]
    while stack:
        here = stack.pop()
        for name, entry in _listing(here, within, follow_links, unreadable):
            if name.startswith("."):
                continue
            path = os.path.join(here, name)
            if entry.kind == _DIR:
                stack.append(path)
            yield path, entry


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
        for path, entry in _below(folder, within, follow_links, unreadable):
            if entry.kind == _DIR and rest:
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


def _walk(folder: str, follow_links: bool, within: str | None = None) -> Iterator[Input]:
    """The recordings below ``folder``, the special files skipped, and the folders that could not be read.

    Nothing is skipped in silence. A device, a FIFO or a socket (or a link to one) is not read: ``/dev/zero``
    never ends, and a FIFO with no writer would wait for ever. Named on the command line, it is read. A link
    to a file outside the folder is not read without ``follow_links``; a link to a folder is not followed
    (:func:`_listing`). ``within``: the folder the walk is bounded by, if not ``folder`` itself (a pattern's).
    """
    suffixes = recording_suffixes()
    unreadable: list[OSError] = []
    top = within if within is not None else os.path.realpath(folder)
    for path, entry in _below(folder, top, follow_links, unreadable):
        if entry.kind != _DIR and path.endswith(suffixes):
            yield Input(path, skipped=entry.skipped())
    for exc in unreadable:
        yield Input(str(exc.filename), f"cannot read: {exc.strerror or exc}")


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


def _remote(url: str) -> list[Input]:
    """A URL's files: a pattern's matches, a folder's recordings, or the URL itself (one request at most
    to tell a folder from a file, none when its name ends as a recording's does)."""
    protocol = scheme(url)
    pattern = _MAGIC.search(url) is not None and protocol not in ONE_OBJECT
    if not pattern and (protocol in ONE_OBJECT or url.endswith(recording_suffixes())):
        return [Input(url)]
    try:
        fs, path = filesystem(url)
        try:
            if pattern:
                return _remote_glob(url, fs, path)
            if fs.isdir(path):
                return _remote_folder(_Names(url, path), fs, path)
        finally:
            fs.invalidate_cache()  # s3fs keeps every listing otherwise: about 2 KB an object, for good
    except Exception as exc:
        error = os_error(exc, url)
        return [Input(url, f"cannot read: {error.strerror or error}")]
    return [Input(url)]


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


def _remote_folder(names: _Names, fs: Any, root: str) -> list[Input]:
    """A remote folder walked like a local one: recordings by suffix, hidden names skipped, at any depth.

    The whole listing is asked for at once (fsspec's ``find``: for S3, one request per 1,000 objects) and
    held while it is read, about 1 KB an object.
    """
    suffixes = recording_suffixes()
    found: list[Input] = []
    for path, info in fs.find(root, detail=True).items():
        rest = names.relative(path)
        if rest is None or _hidden(rest) or not path.endswith(suffixes):
            continue
        kind = info.get("type")
        skipped = None if kind == "file" else f"skipped: {kind or 'not a file'}, not a regular file"
        found.append(Input(names.name(path, fs), skipped=skipped, size=info.get("size")))
    found = _once(found)
    return found if any(i.skipped is None for i in found) else [*found, _none_here(names.url)]


def _remote_glob(url: str, fs: Any, pattern: str) -> list[Input]:
    """A URL's pattern matched by fsspec's ``glob`` (``**`` any depth); a folder matched is walked.

    As for a local pattern, a wildcard does not match a hidden name (``.x``) unless the pattern names one.
    """
    literal = url[: _MAGIC.search(url).start()]  # type: ignore[union-attr]  # a pattern: it has one
    literal = literal[: literal.rfind("/") + 1]
    root = "" if literal.endswith("://") or not literal else filesystem(literal)[1]
    names = _Names(literal or url, root)
    hidden_named = _hidden(pattern[len(root) :].lstrip("/")) if root else _hidden(pattern)
    found: list[Input] = []
    for path, info in fs.glob(pattern, detail=True).items():
        rest = names.relative(path)
        if rest is not None and _hidden(rest) and not hidden_named:
            continue
        name, kind = names.name(path, fs), info.get("type")
        if kind == "directory":
            found.extend(_remote_folder(_Names(name, path), fs, path))
        else:
            skipped = None if kind == "file" else f"skipped: {kind or 'not a file'}, not a regular file"
            found.append(Input(name, skipped=skipped, size=info.get("size")))
    return _once(found) if found else [_unmatched(url)]
