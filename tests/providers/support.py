"""What the converter tests share: a list given as an async iterable, and text cut into random pieces."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

from hypothesis import strategies as st


async def async_items(items: Iterable[Any]) -> AsyncIterator[Any]:
    """``items`` as an async iterable: what an async SDK gives a converter."""
    for item in items:
        yield item


def split(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at up to six random places (pieces may be empty)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
