"""One walker for folders and patterns, one rule for links (``streamfsm/_walk.py``).

``**`` used to follow links to folders: with ``d/a -> .`` one file was checked 41 times, and with a second link the
pattern grew as 2^depth (a hang). A walked folder followed links to files anywhere and printed their first line:
``x.jsonl -> ~/.env`` sent secrets to standard output. Now no link to a folder is followed below what the user named,
a link to a file that leaves the folder walked is skipped (said on standard error) unless ``--follow-links`` asks
for it, and a line that is not JSON is quoted by a short prefix only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from streamfsm import _walk
from streamfsm._recordings import NOT_JSON_SHOWN

from ..data import SEED_CHUNKS

SECRET = "OPENAI_API_KEY=sk-proj-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKL"


def recording(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(c) + b"\n" for c in SEED_CHUNKS))
    return path


def found(*arguments: str, follow_links: bool = False) -> list[tuple[str, str | None]]:
    """What the arguments expand to: each input's path, and why it is skipped (or cannot be read)."""
    return [(i.path, i.skipped or i.error) for i in _walk.named_files(list(arguments), follow_links=follow_links)]


def test_a_double_star_does_not_follow_links_to_folders(tmp_path: Path) -> None:
    """Two links back up used to make ``**`` grow as 2^depth; one link made one file 41 matches."""
    recording(tmp_path / "d" / "x.jsonl")
    recording(tmp_path / "d" / "deep" / "y.jsonl")
    (tmp_path / "d" / "a").symlink_to(tmp_path / "d", target_is_directory=True)
    (tmp_path / "d" / "b").symlink_to(tmp_path / "d", target_is_directory=True)
    (tmp_path / "d" / "deep" / "up").symlink_to(tmp_path, target_is_directory=True)
    expected = [(f"{tmp_path}/d/deep/y.jsonl", None), (f"{tmp_path}/d/x.jsonl", None)]
    assert found(f"{tmp_path}/d/**/*.jsonl") == expected
    assert found(f"{tmp_path}/d/**") == expected
    assert found(f"{tmp_path}/d/*/*.jsonl") == expected[:1]  # a link to a folder is no folder to match into
    assert found(f"{tmp_path}/d") == expected  # the walk of a folder: the same rule


def test_the_literal_part_of_a_pattern_and_a_folder_named_are_followed(tmp_path: Path) -> None:
    recording(tmp_path / "real" / "x.jsonl")
    (tmp_path / "named").symlink_to(tmp_path / "real", target_is_directory=True)
    assert found(f"{tmp_path}/named/*.jsonl") == [(f"{tmp_path}/named/x.jsonl", None)]
    assert found(f"{tmp_path}/named") == [(f"{tmp_path}/named/x.jsonl", None)]


OUTSIDE = "skipped: a link to a file outside the folder (--follow-links reads it)"


def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A folder of recordings holding a link to a secret outside it, and a link to a file within it."""
    secret = tmp_path / "home" / ".env"
    secret.parent.mkdir()
    secret.write_text(SECRET + "\n", encoding="utf-8")
    folder = tmp_path / "logs"
    recording(folder / "a.jsonl")
    (folder / "x.jsonl").symlink_to(secret)
    (folder / "sub").mkdir()
    (folder / "sub" / "same.jsonl").symlink_to(folder / "a.jsonl")  # within the folder: read
    return folder, secret


@pytest.mark.parametrize("how", ["folder", "pattern"])
def test_a_link_that_leaves_the_folder_is_read_only_when_asked(tmp_path: Path, how: str) -> None:
    folder, _ = layout(tmp_path)
    argument = str(folder) if how == "folder" else f"{folder}/**/*.jsonl"
    assert found(argument) == [
        (f"{folder}/a.jsonl", None),
        (f"{folder}/sub/same.jsonl", None),
        (f"{folder}/x.jsonl", OUTSIDE),
    ]
    assert found(argument, follow_links=True) == [
        (f"{folder}/a.jsonl", None),
        (f"{folder}/sub/same.jsonl", None),
        (f"{folder}/x.jsonl", None),
    ]


def test_a_special_file_linked_from_outside_is_skipped_even_when_links_are_followed(tmp_path: Path) -> None:
    recording(tmp_path / "a.jsonl")
    (tmp_path / "z.jsonl").symlink_to("/dev/zero")
    expected = [
        (f"{tmp_path}/a.jsonl", None),
        (f"{tmp_path}/z.jsonl", "skipped: a link to a character device, not a regular file"),
    ]
    assert found(str(tmp_path), follow_links=True) == expected


def streamfsm(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamfsm", "check", "-j", "1", "--no-progress", *argv],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "400"},
    )


@pytest.mark.parametrize("output", [[], ["--json"]], ids=["text", "json"])
def test_the_command_never_echoes_a_secret_a_folder_links_to(tmp_path: Path, output: list[str]) -> None:
    folder, _ = layout(tmp_path)
    (folder / "env.jsonl").write_text(SECRET + "\n", encoding="utf-8")  # in the folder, not a recording either
    tail = SECRET[NOT_JSON_SHOWN:]
    done = streamfsm(*output, str(folder))
    assert done.returncode == 1, done.stderr
    assert f"{folder}/x.jsonl: {OUTSIDE}" in done.stderr
    assert tail not in done.stdout + done.stderr
    followed = streamfsm(*output, "--follow-links", str(folder))
    assert followed.returncode == 1, followed.stderr
    assert "skipped" not in followed.stderr
    assert tail not in followed.stdout + followed.stderr
    if output:
        reports = [json.loads(line) for line in followed.stdout.splitlines() if line.startswith("{")]
        streams = {r["path"]: r for r in reports if "path" in r}
        assert streams[f"{folder}/x.jsonl"]["code"] == "INVALID_CHUNK"
        assert streams[f"{folder}/x.jsonl"]["chunk"] == SECRET[:NOT_JSON_SHOWN] + "\u2026"
    else:
        assert f"{folder}/x.jsonl:1: INVALID_CHUNK" in followed.stdout
        assert SECRET[:NOT_JSON_SHOWN] + "\u2026" in followed.stdout
