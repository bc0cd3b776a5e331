"""JSON data as the machine keeps it: whether a value is JSON data, its size written compactly, a deep copy.

Each walk is iterative (no recursion limit below the data's depth) and visits each container object once,
so data built from shared references costs time linear in its distinct objects, not in its expansion.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import orjson

__all__ = ["MAX_JSON_DEPTH", "copy_json", "is_json_value", "json_size"]


#: The deepest nesting of arrays and objects :func:`is_json_value` accepts (a replay state, an attachment).
MAX_JSON_DEPTH: Final = 512


def is_json_value(value: object, max_depth: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` is JSON data (dict with str keys, list, str, finite number, bool, None).

    Arrays and objects may nest ``max_depth`` levels; a cycle is not JSON. The walk is iterative (no
    recursion limit) and checks each container object once per depth it is met at, so data built from
    shared references (``v = [v, v]`` forty levels deep) costs time linear in its distinct objects, not in
    its expansion.
    """
    seen: dict[int, int] = {}  # id of a container checked -> the shallowest depth it was checked at
    path: set[int] = set()  # containers entered and not yet left: the ancestors of the current one
    stack: list[tuple[object, int, bool]] = [(value, 0, False)]
    while stack:
        item, depth, leaving = stack.pop()
        if leaving:
            path.discard(id(item))
            continue
        if item is None or isinstance(item, (str, bool, int)):
            continue
        if isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                return False
            continue
        if not isinstance(item, (Mapping, list, tuple)):
            return False
        key = id(item)
        if key in path or depth >= max_depth:
            return False  # a cycle, or too deep
        checked = seen.get(key)
        if checked is not None and checked <= depth:
            continue  # checked whole from here or shallower: everything below it fits
        seen[key] = depth
        path.add(key)
        stack.append((item, depth, True))
        if isinstance(item, Mapping):
            for k, v in item.items():
                if not isinstance(k, str):
                    return False
                stack.append((v, depth + 1, False))
        else:
            stack.extend((v, depth + 1, False) for v in item)
    return True


def json_size(value: Any) -> int:
    """The UTF-8 size of JSON data (checked by :func:`is_json_value`) written compactly, as orjson writes it.

    Iterative, and computed once per container object: data built from shared references has the size of
    its expansion (which may be astronomical: a limit then refuses it) at the cost of its distinct objects.
    """
    sizes: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, children_done = stack.pop()
        if not isinstance(item, (Mapping, list, tuple)) or (not children_done and id(item) in sizes):
            continue
        members = list(item.items()) if isinstance(item, Mapping) else list(enumerate(item))
        if not children_done:
            stack.append((item, True))
            stack.extend((v, False) for _, v in members if isinstance(v, (Mapping, list, tuple)))
            continue
        total = 2 + max(len(members) - 1, 0)  # brackets and commas
        for key, v in members:
            if isinstance(item, Mapping):
                total += _scalar_size(key) + 1  # the key and its colon
            total += sizes[id(v)] if isinstance(v, (Mapping, list, tuple)) else _scalar_size(v)
        sizes[id(item)] = total
    return sizes[id(value)] if isinstance(value, (Mapping, list, tuple)) else _scalar_size(value)


def _scalar_size(value: Any) -> int:
    if type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        try:
            return len(int.__repr__(value))
        except ValueError:  # past Python's 4,300-digit conversion limit: digits from the bit length
            return int(abs(value).bit_length() * 0.30102999566398120) + 1 + (value < 0)
    try:
        return len(orjson.dumps(value))
    except TypeError:
        return len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def copy_json(value: Any) -> Any:
    """A deep copy of JSON data (checked by :func:`is_json_value`), iterative: no recursion limit below its depth.

    Shared references stay shared (as ``copy.deepcopy`` keeps them), so data built from them is copied in
    time linear in its distinct objects. Mappings become dicts, tuples lists.
    """
    if not isinstance(value, (Mapping, list, tuple)):
        return value
    copies: dict[int, Any] = {}
    root: Any = {} if isinstance(value, Mapping) else []
    copies[id(value)] = root
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, Mapping) else enumerate(source)
        for key, item in items:
            if isinstance(item, (Mapping, list, tuple)):
                copied = copies.get(id(item))
                if copied is None:
                    copied = copies[id(item)] = {} if isinstance(item, Mapping) else []
                    stack.append((item, copied))
                item = copied
            if isinstance(target, dict):
                target[key] = item
            else:
                target.append(item)
    return root
