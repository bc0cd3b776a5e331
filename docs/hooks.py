"""MkDocs hook: the docstrings' Sphinx roles (``:class:`LlmError```) as links to the reference, or as code.

The package's docstrings are written for Sphinx-style readers; mkdocstrings renders the role's name as text.
A role naming a public name becomes a link to its entry (through mkdocs-autorefs, left as code when the name
has no entry); any other becomes its code alone.
"""

from __future__ import annotations

import re
from typing import Any

import streamfsm

ROLE = re.compile(r":(?:class|func|meth|data|attr|exc|mod|obj|const):<code>~?([\w.]+)</code>")


def _link(match: re.Match[str]) -> str:
    name = match[1]
    if name.startswith("streamfsm."):
        name = name.removeprefix("streamfsm.")
    head = name.split(".")[0]
    if head in streamfsm.__all__:
        return f'<autoref identifier="streamfsm.{name}" optional><code>{name}</code></autoref>'
    return f"<code>{name}</code>"


def on_page_content(html: str, **_: Any) -> str:
    return ROLE.sub(_link, html)
