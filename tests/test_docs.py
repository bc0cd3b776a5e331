"""The README and the docs stay true: every example runs, the diagram is the machine's, the demo works, the site
builds, the performance page is the benchmark's, and no page carries the project's history."""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import inspect
import io
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import streamfsm as sf

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")


def pages() -> list[Path]:
    """The README and every page of the docs site."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def page(name: str) -> str:
    """The text of one docs page, by its path under ``docs/``."""
    return (DOCS / name).read_text(encoding="utf-8")


def fenced(lang: str) -> list[str]:
    """The fenced blocks of one language, in the README and every docs page."""
    return [
        block
        for path in pages()
        for block in re.findall(rf"```{lang}\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    ]


# -- every Python example runs ---------------------------------------------------------------------------------

#: A comment on the line before an example's fence says how the tests run it (``<!-- test: HOW -->``); an
#: example without one runs as it is, in this process, from the repository's root.
RUNNERS = {
    "local-server": "the HTTP request goes to a local server that streams a recorded answer",
    "s3": "s3:// goes to moto's S3 server on 127.0.0.1 (marked cloud)",
    "dask-cluster": "runs as a script: a LocalCluster of process workers on 127.0.0.1 (marked cluster)",
    "script": "runs as a script, in a child interpreter: it sets what a process sets once (the reason after it)",
    "not-run": "not run, for the reason given after it",
}


@dataclass(frozen=True)
class Example:
    """A ```python block of a page: how the tests run it, and what it prints when the page shows that."""

    where: str
    code: str
    how: str
    why: str
    prints: str | None


def examples() -> list[Example]:
    found = []
    for path in pages():
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(ROOT).as_posix()
        for m in re.finditer(
            r"(?:<!-- test: ([a-z0-9-]+)(?::? ([^>]*?))? -->\n)?```python\n(.*?)```\n", text, re.DOTALL
        ):
            line = text.count("\n", 0, m.start(3))
            after = re.match(r"\n[^\n]*prints:\n\n```text\n(.*?)```", text[m.end() :], re.DOTALL)
            found.append(Example(f"{name}:{line}", m[3], m[1] or "", (m[2] or "").strip(), after and after[1]))
    return found


EXAMPLES = examples()
MARKS = {"s3": [pytest.mark.cloud], "dask-cluster": [pytest.mark.cluster]}


def test_every_example_is_found_and_says_how_it_runs() -> None:
    assert len(EXAMPLES) > 20
    assert sum(e.code == fenced("python")[i] for i, e in enumerate(EXAMPLES)) == len(fenced("python"))
    markers = sum(path.read_text(encoding="utf-8").count("<!-- test:") for path in pages())
    assert markers == sum(e.how != "" for e in EXAMPLES), "a <!-- test: ... --> comment not right before a ```python"
    for e in EXAMPLES:
        assert e.how in ("", *RUNNERS), e.where
        assert e.how not in ("not-run", "script") or e.why, f"{e.where}: say why it is not run, or run as a script"


def run_here(code: str, where: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run an example as a reader would paste it: a fresh module, the repository as the current folder."""
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, where, "exec"), {"__name__": "__main__"})
    return out.getvalue()


@pytest.mark.parametrize(
    "example", [pytest.param(e, id=e.where, marks=MARKS.get(e.how, [])) for e in EXAMPLES if e.how != "not-run"]
)
def test_the_example_runs(example: Example, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    if example.how == "local-server":
        out = run_with_a_local_server(example, monkeypatch)
    elif example.how == "s3":
        out = run_with_s3(example, monkeypatch, request)
    elif example.how == "dask-cluster":
        out = run_as_a_script(example)
        # The page says what it prints: "It prints the N files with a broken stream, then `F files, S streams`."
        page = (ROOT / example.where.rsplit(":", 1)[0]).read_text(encoding="utf-8")
        said = re.search(r"It prints the (\d+) files with a broken stream, then `([^`]+)`", page)
        assert said is not None, "the page no longer says what the example prints"
        broken, total = int(said[1]), said[2]
        assert out.splitlines()[broken:] == [total], out
    elif example.how == "script":
        out = run_as_a_script(example)
    else:
        out = run_here(example.code, example.where, monkeypatch)
    if example.prints is not None:
        assert out == example.prints, example.where


def run_with_a_local_server(example: Example, monkeypatch: pytest.MonkeyPatch) -> str:
    from .providers.test_adapters import TEXT
    from .sse_server import SSE, SSEServer, openai_events

    with SSEServer() as server:
        server.script(SSE(openai_events(TEXT)))
        code = example.code.replace("https://api.deepseek.com", server.url)
        assert code != example.code, "the example names no URL to point at the local server"
        out = run_here(code, example.where, monkeypatch)
    assert len(server.requests) == 1 and server.requests[0].path == "/chat/completions"
    assert out == "".join(c["choices"][0]["delta"].get("content") or "" for c in TEXT if c.get("choices"))
    return out


def run_with_s3(example: Example, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> str:
    from .data import SESSIONS
    from .recordings.test_reader import zst

    bucket = request.getfixturevalue("s3")
    urls = re.findall(r"s3://bucket/[^\"\s]+", example.code)
    assert urls, "the example names no s3://bucket/ object"
    session = SESSIONS / "acp-agent--snapshots--bash-tool-turn.jsonl"
    log = session.read_bytes()
    for url in urls:
        key = url.removeprefix("s3://bucket/")
        bucket.put(key, zst(log) if key.endswith(".zst") else log)
    out = run_here(example.code.replace("s3://bucket/", f"s3://{bucket.name}/"), example.where, monkeypatch)
    assert out.count(bucket.name) == len(list(sf.read_recordings(session)))  # one line a stream
    return out


def run_as_a_script(example: Example) -> str:
    """Run an example in a child interpreter, from the repository's root (this checkout's package first)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-c", example.code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_diagram_is_the_machines() -> None:
    (diagram,) = fenced("mermaid")
    assert diagram == sf.diagram()


def test_the_error_codes_page_lists_every_code() -> None:
    errors = page("concepts/errors.md")
    for code in sf.ErrorCode:
        assert f"`{code.value}`" in errors, code


def test_public_names_have_docstrings() -> None:
    """Read from the source: the compiled machine (mypyc) keeps no docstrings at run time."""
    documented: dict[str, bool] = {}
    for path in (ROOT / "streamfsm").rglob("*.py"):  # the provider subpackage too
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                # An @overload stub has no docstring; the implementation after it does.
                documented[node.name] = documented.get(node.name, False) or ast.get_docstring(node) is not None
    for name in sf.__all__:
        obj = getattr(sf, name)
        if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj):
            assert documented.get(name), name


def test_the_compiled_machine_is_not_stale() -> None:
    """A compiled machine module older than its source would shadow it: rebuild with pip install -e ."""
    import importlib

    from .builders import MACHINE_MODULES

    modules = [importlib.import_module(f"streamfsm.{name}") for name in MACHINE_MODULES]
    # The modules compiled together share one library (``<hash>__mypyc``); each module's own file only loads it, and
    # is left as it was when its source changes.
    shared = [m.__file__ for name, m in sys.modules.items() if name.endswith("__mypyc") and m.__file__]
    for name, module in zip(MACHINE_MODULES, modules, strict=True):
        if module.__file__ is None or module.__file__.endswith(".py"):
            continue  # running the source itself (STREAMFSM_PURE=1)
        built = max(Path(f).stat().st_mtime for f in [module.__file__, *shared])
        source = ROOT / "streamfsm" / f"{name}.py"
        assert built >= source.stat().st_mtime, f"rebuild {name}: pip install -e ."


def test_demo_runs_without_network() -> None:
    """The Set up section's demo (``streamfsm demo``; ``python -m streamfsm demo`` is the same command)."""
    assert "&& .venv/bin/streamfsm demo\n" in README
    done = subprocess.run(
        [sys.executable, "-m", "streamfsm", "demo", "--fast"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("streamfsm demo: the seed example through the agent loop")
    assert 'Let me check the project files.\n  → tool call call-123: bash({"command":"ls streamfsm"})' in done.stdout
    assert "  ← result: __init__.py, __main__.py," in done.stdout  # the tool ran
    assert "done: stop; 280 prompt + 70 completion tokens; 1 tool call(s)" in done.stdout
    assert "rejected: BLOCK_NOT_OPEN at chunk 4" in done.stdout and "done: error" in done.stdout
    assert done.stderr == ""


@pytest.mark.slow
def test_the_docs_site_builds_strict(tmp_path: Path) -> None:
    """``mkdocs build --strict``: every page in the nav, every link and anchor resolved, every API page rendered."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "reference" / "streams" / "index.html").read_text(encoding="utf-8").count("doc-heading") > 5
    # The signatures are formatted (one parameter a line, not one long line the page clips): by ruff, which the
    # docs extra brings.
    agent = (tmp_path / "reference" / "agent" / "index.html").read_text(encoding="utf-8")
    signatures = re.findall(r'class="doc-signature highlight"><pre><span></span><code>(.*?)</code>', agent, re.S)
    assert signatures and any("(</span>\n    <span" in s for s in signatures)
    assert "Formatting signatures requires" not in done.stderr
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert any(r.startswith(("ruff", "black")) for r in extras["docs"])


def test_the_performance_page_is_the_benchmarks() -> None:
    """docs/project/performance.md is what ``python -m benchmarks.docs`` writes from benchmarks/RESULTS.md."""
    from benchmarks import docs

    assert docs.stale() == [], "run python -m benchmarks.docs"


#: What history looks like on a page: a commit id, a reference to an earlier state of the work.
HISTORY = re.compile(r"\b[0-9a-f]{7,40}\b|\bbefore #[0-9]+|\b(?:this|last|that) session\b|\bused to\b")


def test_no_page_tells_the_projects_history() -> None:
    """History goes to CHANGELOG.md; the README and the docs say what is (the README not even "session")."""
    for path in pages():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert not HISTORY.search(line), f"{path.relative_to(ROOT)}:{number}: {line}"
    assert not re.search(r"\bsession\b", README), "README.md: say 'log' or 'run', not 'session'"
    assert (ROOT / "CHANGELOG.md").exists()


def test_the_readme_is_a_front_door() -> None:
    """At most 250 lines of reasonable length, and every link to a file of the repository resolves."""
    lines = README.splitlines()
    assert len(lines) <= 250
    assert [n for n, line in enumerate(lines, 1) if len(line) > 120 and not line.startswith("broken.jsonl:")] == []
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README):
        assert (ROOT / target).exists(), target


def test_the_reference_documents_every_public_name() -> None:
    """Each name of ``streamfsm.__all__`` has its entry (``::: streamfsm.NAME``) on a page of docs/reference/."""
    listed = re.findall(
        r"^::: streamfsm\.(\w+)$", "".join(p.read_text(encoding="utf-8") for p in DOCS.glob("reference/*.md")), re.M
    )
    assert sorted(set(sf.__all__) - set(listed) - {"__version__"}) == []
    assert len(listed) == len(set(listed)), "a name documented twice"


def documented_commands() -> list[tuple[str, list[str]]]:
    """``(page, argv)`` of every command of a ```sh block, its ``&&`` parts apart, comments dropped."""
    found = []
    for path in pages():
        for block in re.findall(r"```sh\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.DOTALL):
            for line in block.splitlines():
                for part in re.sub(r"\s+#.*$", "", line).split("&&"):
                    if part.strip():
                        found.append((path.relative_to(ROOT).as_posix(), shlex.split(part)))
    return found


def test_every_documented_command_is_one_the_repo_has(tmp_path: Path) -> None:
    """Each ``streamfsm`` command of the README and the docs is one the command's parser accepts, and each one
    that names only files of the repository runs as shown (``demo`` runs in test_demo_runs_without_network;
    URLs, clusters and folders of your own are the examples' stand-ins' business); each ``python -m`` names a
    module of the repository."""
    from streamfsm import _cli

    commands = documented_commands()
    ran = 0
    for where, argv in commands:
        if argv[0] in ("streamfsm", ".venv/bin/streamfsm"):
            try:
                args = _cli.build_parser().parse_args(argv[1:])
            except SystemExit as exc:  # argparse's way to refuse
                raise AssertionError(f"{where}: {' '.join(argv)}") from exc
            paths = [a for a in argv[2:] if not a.startswith("-") and a not in ("harness", "strict", "local")]
            if args.command == "check" and paths and all((ROOT / a).exists() for a in paths):
                done = subprocess.run(
                    [sys.executable, "-m", "streamfsm", *argv[1:], "--no-progress"],
                    capture_output=True,
                    text=True,
                    cwd=ROOT,
                    timeout=120,
                )
                assert done.returncode in (0, 1), (where, argv, done.stderr)
                ran += 1
        elif re.fullmatch(r"(?:.*/)?python3?", argv[0]) and argv[1] == "-m":
            assert importlib.util.find_spec(argv[2]) is not None, f"{where}: {argv[2]}"
    assert ran >= 1


def test_ci_runs_the_whole_suite_the_readme_names() -> None:
    """``.ci/run`` runs the README's test command, the whole suite: no ``--quick``, no ``--no-...`` option."""
    readme = re.search(r"## Run the tests\n\n```sh\n([^\n]*)\n```", README)
    assert readme is not None
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci.replace(" -q ", " ").endswith(readme[1]), (ci, readme[1])
    assert readme[1].endswith(".venv/bin/python -m pytest") and "--" not in ci
    assert ".venv/bin/python -m pytest --quick" in README  # the contributor's loop, said beside it
