"""The release artifacts, built and installed as a user gets them (marked ``install``; ``--no-install`` skips it).

``python -m build`` with ``STREAMFSM_PURE=1`` gives the sdist and the pure wheel (``py3-none-any``); ``twine check``
passes both; the wheel, installed in a fresh virtualenv, runs the smoke test from a folder that is not the checkout;
and the sdist installs with ``pip`` with no C compiler on the PATH: the build says so in one line, falls back to
the pure machine, and asks for no mypy; ``streamfsm --version`` says which machine was built and why. The build
backend (``_build/streamfsm_build.py``) asks for mypyc only for a build that compiles. The build and the
virtualenvs use the interpreter running the tests.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parents[1]
#: What a build needs of the checkout (the tests, benchmarks and docs are not part of the package).
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "_build", "README.md", "LICENSE", "streamfsm")

#: Run by the installed package, from an empty folder: the command, the library, the typed marker, the demo.
SMOKE = """
import json, pathlib, subprocess, sys
import streamfsm as sf
from streamfsm import _machine
here = pathlib.Path(sf.__file__).resolve().parent
assert "site-packages" in here.parts, here
assert _machine.__file__.endswith(".py"), _machine.__file__  # the pure machine
assert (here / "py.typed").is_file()
chunks = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "hi"},
    {"type": "block-end", "index": 0, "block": {"type": "text", "text": "hi"}},
    {"type": "finish", "reason": {"kind": "stop"}},
]
assert sf.assemble(chunks, policy="harness").text == "hi"
pathlib.Path("one.jsonl").write_text("".join(json.dumps(c) + "\\n" for c in chunks))
bin = pathlib.Path(sys.executable).parent
done = subprocess.run([bin / "streamfsm", "check", "-v", "--policy", "harness", "one.jsonl"], capture_output=True,
                      text=True)
assert done.returncode == 0 and "one.jsonl: ok" in done.stdout, done
done = subprocess.run([bin / "streamfsm", "demo", "--fast"], capture_output=True, text=True)
assert done.returncode == 0 and "tool call" in done.stdout, done
done = subprocess.run([bin / "streamfsm", "--version"], capture_output=True, text=True)
assert done.returncode == 0 and done.stdout.startswith(f"streamfsm {sf.__version__}; machine: pure Python ("), done
print(done.stdout, end="")
print("smoke ok")
"""


def run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, cwd=cwd, env=env, timeout=900, check=False
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def venv(path: Path) -> Path:
    """A fresh virtualenv at ``path``: its ``bin`` (``Scripts`` on Windows) folder."""
    run(sys.executable, "-m", "venv", path, cwd=path.parent)
    return path / ("Scripts" if os.name == "nt" else "bin")


def smoke(bin_dir: Path, where: Path) -> str:
    """Run :data:`SMOKE` with the virtualenv's Python from ``where``; what ``streamfsm --version`` said."""
    where.mkdir()
    out = run(bin_dir / "python", "-c", SMOKE, cwd=where, env=clean_env())
    assert "smoke ok" in out
    return out.splitlines()[0]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without what points at the checkout (PYTHONPATH) or chooses the build (STREAMFSM_PURE)."""
    drop = {"PYTHONPATH", "STREAMFSM_PURE", "CC", "CXX", "VIRTUAL_ENV"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of what a build needs of the checkout (no build's leftovers: compiled modules, the build's record)."""
    source = tmp_path_factory.mktemp("build") / "src"
    source.mkdir()
    leftovers = shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "_built.py")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=leftovers)
        else:
            shutil.copy2(ROOT / name, source / name)
    return source


@pytest.fixture(scope="module")
def dist(sources: Path) -> Path:
    """The sdist and the pure wheel, built from a copy of the package's sources."""
    out = sources.parent / "dist"
    run(sys.executable, "-m", "build", "--outdir", out, sources, cwd=sources.parent, env=clean_env(STREAMFSM_PURE="1"))
    return out


def test_build_gives_the_sdist_and_a_pure_wheel_that_twine_accepts(dist: Path) -> None:
    names = sorted(p.name for p in dist.iterdir())
    assert names == ["streamfsm-0.1.0-py3-none-any.whl", "streamfsm-0.1.0.tar.gz"]
    run(sys.executable, "-m", "twine", "check", "--strict", *sorted(dist.iterdir()), cwd=dist)
    with zipfile.ZipFile(dist / names[0]) as wheel:
        files = set(wheel.namelist())
        metadata = wheel.read("streamfsm-0.1.0.dist-info/METADATA").decode()
        tags = wheel.read("streamfsm-0.1.0.dist-info/WHEEL").decode()
    assert "streamfsm/py.typed" in files
    assert "streamfsm/_built.py" in files  # what --version reads
    assert "streamfsm-0.1.0.dist-info/licenses/LICENSE" in files
    assert not [f for f in files if f.endswith((".so", ".pyd", ".c"))]
    assert "Tag: py3-none-any" in tags and "Root-Is-Purelib: true" in tags
    assert "License-Expression: MIT" in metadata
    assert "Classifier: Typing :: Typed" in metadata
    assert "Project-URL: Source, " in metadata


def test_the_pure_wheel_works_in_a_fresh_virtualenv(dist: Path, tmp_path: Path) -> None:
    bin_dir = venv(tmp_path / "venv")
    run(bin_dir / "python", "-m", "pip", "install", "--quiet", *dist.glob("*.whl"), cwd=tmp_path, env=clean_env())
    assert smoke(bin_dir, tmp_path / "run").endswith("machine: pure Python (STREAMFSM_PURE=1 was set at build time)")


@pytest.mark.skipif(os.name == "nt", reason="the PATH without a compiler is set up for POSIX")
def test_the_sdist_installs_with_no_compiler_on_the_path(dist: Path, tmp_path: Path) -> None:
    """No ``gcc``/``cc`` on the PATH (only the virtualenv's ``bin``): one warning line, whole, no mypy in the build's
    environment, and the pure machine, which ``streamfsm --version`` says and why."""
    bin_dir = venv(tmp_path / "venv")
    assert not shutil.which("gcc", path=str(bin_dir)) and not shutil.which("cc", path=str(bin_dir))
    sdist = next(dist.glob("*.tar.gz"))
    env = clean_env(PATH=str(bin_dir))
    output = run(bin_dir / "python", "-m", "pip", "install", "-v", "--no-cache-dir", sdist, cwd=tmp_path, env=env)
    warnings = [line for line in output.splitlines() if "streamfsm: WARNING: no working C compiler" in line]
    assert len(warnings) == 1, output[-3000:]
    assert warnings[0].rstrip().endswith("or set STREAMFSM_PURE=1 to choose this build.")  # not cut short
    # What pip installed into the build's environment (the package itself goes into the virtualenv, last).
    build_env = [line for line in output.splitlines() if "Successfully installed" in line and "streamfsm-" not in line]
    assert any("setuptools" in line for line in build_env) and not any("mypy" in line for line in build_env), output
    said = smoke(bin_dir, tmp_path / "run")
    assert said.startswith("streamfsm 0.1.0; machine: pure Python (no working C compiler ("), said


@pytest.fixture(scope="module")
def backend(sources: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Any]:
    """The value of an expression about the build backend (``b``), computed as pip's build process computes it: in
    an environment with only what ``[build-system] requires`` names, from the sources' folder."""
    bin_dir = venv(tmp_path_factory.mktemp("backend") / "venv")
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]["requires"]
    run(bin_dir / "python", "-m", "pip", "install", "--quiet", *requires, cwd=sources, env=clean_env())

    def value(expression: str, **env: str) -> Any:
        code = f"import streamfsm_build as b; print(repr({expression}))"
        out = run(bin_dir / "python", "-c", code, cwd=sources, env=clean_env(PYTHONPATH=str(sources / "_build"), **env))
        return ast.literal_eval(out.strip().splitlines()[-1])

    return value


@pytest.mark.parametrize("hook", ["wheel", "editable"])
def test_the_backend_asks_for_mypyc_only_for_a_build_that_compiles(hook: str, backend: Callable[..., Any]) -> None:
    """No mypy for ``STREAMFSM_PURE=1`` nor without a working compiler; mypy and the typed dependencies for a build
    that compiles (when this machine has a compiler); none for the sdist."""
    wants = f"b.get_requires_for_build_{hook}()"
    for env in ({"STREAMFSM_PURE": "1"}, {"CC": "/bin/false"}):
        assert not any(r.startswith("mypy") for r in backend(wants, **env)), env
    assert not any(r.startswith("mypy") for r in backend("b.get_requires_for_build_sdist()"))
    if backend("b.compiler_problem()") is None:
        assert set(backend("b.MYPYC_REQUIRES")) <= set(backend(wants))


@pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal")
def test_the_fallback_warning_reaches_the_terminal_when_pip_holds_the_output_back() -> None:
    """pip shows a build's output only with ``-v``: the warning also goes to the build's controlling terminal."""
    import pty

    code = "import streamfsm_build as b; b.warn('no working C compiler (cc: not found)')"
    pid, terminal = pty.fork()
    if pid == 0:  # the build, its standard error a pipe pip keeps (here: nowhere), its terminal the pty
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.dup2(devnull, 1)
        env = clean_env(PYTHONPATH=str(ROOT / "_build"))
        os.execve(sys.executable, [sys.executable, "-c", code], env)
    shown = b""
    while True:
        try:
            data = os.read(terminal, 4096)
        except OSError:  # the child is gone
            break
        if not data:
            break
        shown += data
    _, status = os.waitpid(pid, 0)
    assert status == 0
    warning = (
        "streamfsm: WARNING: no working C compiler (cc: not found); building the pure-Python machine (same behaviour, "
        "about half the speed). Install a compiler and the Python headers to compile it, or set STREAMFSM_PURE=1 to "
        "choose this build."
    )
    assert shown.decode().splitlines().count(warning) == 1, shown
