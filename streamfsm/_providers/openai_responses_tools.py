"""The OpenAI Responses API's own tools that the client runs: a call read from its output item, and a result written
back as the output item of the call's type.

``local_shell``, ``shell``, ``apply_patch``, ``computer`` and ``tool_search`` (with ``execution: "client"``) are
tools of the API that the client runs: each call comes whole at its ``response.output_item.done`` and becomes a
tool-call block named for the tool, its action (or operation, or arguments) as the arguments
(:func:`client_call`, for :mod:`.openai_responses`); its result goes back as the matching ``*_output`` item
(:func:`output_item`, for :mod:`.openai_responses_adapter`). A ``computer_call`` flagged with
``pending_safety_checks`` carries them in its arguments, for the agent loop to have them acknowledged before it
runs; only the acknowledged ones are echoed in its output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from .._adapter import ToolResultMessage
from .convert import malformed

__all__ = ["CLIENT_TOOLS", "NO_TEXT", "client_call", "error_note", "listed_tools", "output_item", "server_runs"]

#: The calls of the API's own tools that the client runs (each a tool-call block, named here, its action or
#: operation as the arguments), sent back with the matching ``*_output`` item. Each comes whole at its
#: ``output_item.done``.
CLIENT_TOOLS = {
    "local_shell_call": ("local_shell", "action"),
    "shell_call": ("shell", "action"),
    "apply_patch_call": ("apply_patch", "operation"),
    "computer_call": ("computer", "action"),
    "tool_search_call": ("tool_search", "arguments"),
}

#: The calls whose output item has no place for text: an error result goes back as an empty output, followed by a
#: user message that says what went wrong (:func:`error_note`).
NO_TEXT = frozenset({"computer_call", "tool_search_call"})


def _pending_checks(call_id: str, given: object) -> list[dict[str, Any]]:
    """A ``computer_call``'s ``pending_safety_checks`` (absent or null: none), each ``{id, code?, message?}``
    as it came; a list that is not of such objects is ``MALFORMED_RESPONSE`` (a flagged call is never taken for
    an unflagged one)."""
    if given is None:
        return []
    checks: list[dict[str, Any]] = []
    if isinstance(given, list):
        for check in given:
            if not isinstance(check, Mapping) or not isinstance(check.get("id"), str) or not check["id"]:
                break
            kept = {key: check[key] for key in ("id", "code", "message") if check.get(key) is not None}
            if not all(isinstance(value, str) for value in kept.values()):
                break
            checks.append(kept)
        else:
            return checks
    raise malformed(f"computer_call {call_id}: pending_safety_checks must be a list of objects with a string id")


def listed_tools(tools: list[Any]) -> list[str]:
    """The names of the client's own tools a response lists (functions and custom tools, in namespaces too)."""
    names: list[str] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        function = tool.get("function")  # a server that echoes tools in the chat-completions form
        name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
        if tool.get("type") in ("function", "custom") and isinstance(name, str):
            names.append(name)
        elif isinstance(tool.get("tools"), list):
            names.extend(listed_tools(tool["tools"]))
    return names


def server_runs(kind: str, data: Mapping[str, Any], declared: frozenset[str] | None) -> bool:
    """Whether a call item is one the server runs itself (kept for replay), as the item says: a tool search
    whose ``execution`` is not ``client``; a shell call in an ``environment`` other than ``local`` (a hosted
    container); a custom tool call whose name is none of the client's tools the response lists (xAI's
    ``x_search`` runs as ``custom_tool_call`` s named ``x_keyword_search``, ...; a response that lists no tools
    says nothing, and its calls are the client's)."""
    if kind == "tool_search_call":
        return data.get("execution") != "client"
    if kind == "shell_call":
        environment = data.get("environment")
        return isinstance(environment, Mapping) and environment.get("type") not in (None, "local")
    if kind == "custom_tool_call":
        name = data.get("name")  # not a string: the client's call, which its reading refuses as malformed
        return declared is not None and isinstance(name, str) and name not in declared
    return False


def client_call(kind: str, data: Mapping[str, Any]) -> tuple[str, str, str]:
    """The call of item ``data`` of type ``kind`` (one of :data:`CLIENT_TOOLS`): its id, the tool's name, and its
    action (or operation, or arguments) as the arguments' JSON text; a computer call's pending safety checks go
    with its action. An item without a call id, or whose action is not JSON data, is ``MALFORMED_RESPONSE``."""
    name, field = CLIENT_TOOLS[kind]
    call_id = data.get("call_id") or data.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise malformed(f"a {kind} without a call_id")
    action = data.get(field)
    if kind == "computer_call":
        if action is None and isinstance(data.get("actions"), list):
            action = {"actions": data["actions"]}  # the computer tool's batched actions
        checks = _pending_checks(call_id, data.get("pending_safety_checks"))
        if checks:  # flagged: the checks go with the action, for the loop to have them acknowledged
            body = action if isinstance(action, Mapping) else {"action": action}
            action = {**body, "pending_safety_checks": checks}
    if isinstance(action, str):
        return call_id, name, action
    try:
        return call_id, name, orjson.dumps({} if action is None else action).decode()
    except (orjson.JSONEncodeError, TypeError) as exc:
        raise malformed(f"{kind} {call_id}: its {field} is not JSON data ({exc})") from exc


def _json(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def error_note(kind: str, result: ToolResultMessage) -> dict[str, Any]:
    """The message that tells the model why a call of ``kind`` (one of :data:`NO_TEXT`) failed."""
    given = _json(result.content)
    why = given.get("message") if isinstance(given, dict) and isinstance(given.get("message"), str) else None
    name = CLIENT_TOOLS[kind][0]
    text = f"The {name} call {result.tool_call_id} failed: {why if why is not None else result.content}"
    return {"role": "user", "content": [{"type": "input_text", "text": text}]}


def output_item(kind: str, result: ToolResultMessage) -> dict[str, Any]:
    """A tool result as the output item of its call's type (``kind``, the call's item type).

    ``function_call_output`` and ``custom_tool_call_output`` carry the content as it is (the API has no way to mark
    a result as an error: the content says it). The API's own tools take their own items: ``local_shell_call_output``
    (the content as ``output``; the call is named by ``id``, as the API's type has it); ``shell_call_output`` (the
    content, if it is a JSON list of ``{stdout, stderr, outcome}``, is the ``output``; otherwise it is the stdout
    of one command that exited 0, or 1 for an error result); ``apply_patch_call_output`` (``status`` ``failed``
    for an error result, else ``completed``; the content as ``output``); ``computer_call_output`` (the content, a
    JSON ``computer_screenshot`` object or an image URL, as ``output``; an error result has a screenshot without
    an image; the safety checks the application acknowledged as ``acknowledged_safety_checks``);
    ``tool_search_output`` (the content, a JSON list of tool definitions, as ``tools``; an error result, or a
    content that is no such list, an empty list). An error result of these last two is followed by a user
    message that says what went wrong (:func:`error_note`): their items have no place for it.
    """
    call_id, content = result.tool_call_id, result.content
    if kind == "custom_tool_call":
        return {"type": "custom_tool_call_output", "call_id": call_id, "output": content}
    if kind == "local_shell_call":
        return {"type": "local_shell_call_output", "id": call_id, "output": content}
    if kind == "shell_call":
        given = _json(content)
        chunks = given if isinstance(given, list) and all(isinstance(c, dict) and "outcome" in c for c in given) else []
        if not chunks:
            outcome = {"type": "exit", "exit_code": 1 if result.is_error else 0}
            chunks = [{"stdout": content, "stderr": "", "outcome": outcome}]
        return {"type": "shell_call_output", "call_id": call_id, "output": chunks}
    if kind == "apply_patch_call":
        status = "failed" if result.is_error else "completed"
        return {"type": "apply_patch_call_output", "call_id": call_id, "status": status, "output": content}
    if kind == "computer_call":
        given = _json(content)
        if isinstance(given, dict) and given.get("type") == "computer_screenshot":
            screenshot = given
        elif result.is_error:
            screenshot = {"type": "computer_screenshot"}
        else:
            screenshot = {"type": "computer_screenshot", "image_url": content}
        item = {"type": "computer_call_output", "call_id": call_id, "output": screenshot}
        if result.acknowledged_safety_checks:
            item["acknowledged_safety_checks"] = [check.to_wire() for check in result.acknowledged_safety_checks]
        return item
    if kind == "tool_search_call":
        tools = None if result.is_error else _json(content)
        listed = tools if isinstance(tools, list) else []
        return {"type": "tool_search_output", "call_id": call_id, "execution": "client", "tools": listed}
    return {"type": "function_call_output", "call_id": call_id, "output": content}
