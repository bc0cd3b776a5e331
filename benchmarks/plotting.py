"""matplotlib for the benchmarks' plots, loaded when a plot is drawn (it is an optional part of the bench extra)."""

from __future__ import annotations

import importlib
from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (no screen); ``ImportError`` when matplotlib is not installed."""
    matplotlib: Any = importlib.import_module("matplotlib")
    matplotlib.use("Agg")
    return importlib.import_module("matplotlib.pyplot")
