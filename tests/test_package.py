"""The package ``streamfsm`` imports its modules when a name is first used (PEP 562): every public name is still
there, the same object its module defines, for ``sf.NAME``, ``from streamfsm import NAME``, ``import *``, type
checkers (the imports under ``TYPE_CHECKING``, the one list of public names) and ``dir()``; and ``import streamfsm``
alone loads none of them."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

import streamfsm as sf

from .cli_support import child_env

INIT = Path(sf.__file__).read_text(encoding="utf-8")


def type_checking_imports() -> dict[str, str]:
    """What type checkers see: each name imported under ``if TYPE_CHECKING:`` in ``__init__.py``, with its module."""
    found: dict[str, str] = {}
    for node in ast.parse(INIT).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.level == 1:
                    for alias in statement.names:
                        assert alias.asname == alias.name, alias.name  # an explicit re-export
                        assert alias.name not in found, alias.name  # each name once
                        found[alias.name] = str(statement.module)
    return found


PUBLIC = sorted(set(sf.__all__) - {"__version__"})


def test_the_public_names_are_written_once_and_the_rest_derived() -> None:
    """The imports under ``TYPE_CHECKING`` are the face; ``__all__``, ``dir()`` and the lazy imports are read from
    them: a name imported there is public everywhere, and no other list exists to forget it in."""
    seen = type_checking_imports()
    assert sorted(seen) == PUBLIC
    assert sf._face() == seen
    assert len(sf.__all__) == len(set(sf.__all__))
    assert set(sf.__all__) <= set(dir(sf))
    code = INIT.removeprefix(f'"""{sf.__doc__}"""')  # the docstring's map is checked below
    assert len(re.findall(r"\bassemble_jsonl\b", code)) == 2  # "assemble_jsonl as assemble_jsonl": one statement


def test_the_package_docstring_is_an_example_and_a_map_of_every_public_name() -> None:
    """``help(streamfsm)`` opens with it: an example that runs (a doctest), then each public name once, by use."""
    import doctest

    assert sf.__doc__ is not None
    assert doctest.testmod(sf, report=False, raise_on_error=True).attempted >= 3
    mapped = re.findall(r"``(\w+)``", sf.__doc__.split("The public names", 1)[1])
    public = [name for name in mapped if name in PUBLIC]
    assert sorted(public) == PUBLIC, "a public name missing from the map, or mapped twice"
    assert "_machine" not in sf.__doc__ and "TYPE_CHECKING" not in sf.__doc__  # no internals


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_is_its_modules_object(name: str) -> None:
    module = importlib.import_module(f"streamfsm.{type_checking_imports()[name]}")
    assert getattr(sf, name) is getattr(module, name)
    assert name in dir(sf)


def test_the_version_is_the_installed_distributions() -> None:
    assert sf.__version__ == importlib.metadata.version("streamfsm")


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"^module 'streamfsm' has no attribute 'assembel'$"):
        sf.assembel  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(sf, "_machine_typo")


#: Run in a fresh interpreter: ``import streamfsm`` loads no module of its own nor any dependency; then every
#: public name resolves on first use (``from streamfsm import *`` too) to its module's object.
FRESH = """
import importlib, sys
import streamfsm as sf
heavy = sorted(m for m in sys.modules if m.startswith("streamfsm.") or m.split(".")[0] in
               {"pydantic", "pydantic_core", "orjson", "httpx", "httpx_sse", "jsonschema", "transitions"})
assert heavy == [], heavy
assert "assemble" not in vars(sf)
namespace = {}
exec("from streamfsm import *", namespace)
assert sorted(set(namespace) - {"__builtins__"}) == sorted(sf.__all__)
for name, module in sf._face().items():
    assert namespace[name] is getattr(importlib.import_module("streamfsm." + module), name), name
    assert vars(sf)[name] is namespace[name], name  # kept: asked once
print(namespace["__version__"])
"""


def test_import_streamfsm_loads_nothing_until_a_name_is_used() -> None:
    done = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, timeout=120, env=child_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{importlib.metadata.version('streamfsm')}\n"


def test_the_installed_requirements_agree() -> None:
    """``pip check`` of the environment the tests run in: the extras and the test tools installed together (``pip
    install '.[test]'``, what each ``nox`` session does in a fresh virtualenv) leave no requirement broken."""
    done = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_test_extra_holds_every_runtime_extra() -> None:
    """The test tools are installed with every extra the package has (but the bench and fuzz tools): a conflict
    between an extra and a test tool shows in ``pip install '.[test]'``, not later in a user's environment."""
    import tomllib

    extras = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    in_test = {r.split("[", 1)[1].split("]", 1)[0] for r in extras["test"] if r.startswith("streamfsm[")}
    assert set(extras) - {"test", "bench", "fuzz", "docs"} <= in_test
