"""The adapter contract: options never silently dropped, reasoning metadata, checked output, AbortSignal."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import pytest

import streamfsm as sf

from ..data import SEED_CHUNKS as SEED

E = sf.ErrorCode
ASK = sf.GenerateOptions(model="m", messages=(sf.UserMessage(content="hi"),))

#: A value for each optional field of GenerateOptions.
SET: dict[str, Any] = {
    "system": "s",
    "tools": (sf.ToolSchema(name="t"),),
    "temperature": 0.0,
    "max_tokens": 10,
    "stop": ("x",),
    "reasoning_effort": "high",
    "signal": sf.AbortController().signal,
    "session_id": "session-1",
}


class Scripted(sf.LlmAdapter):
    """Yields a fixed list of chunks; counts how often it was called."""

    supported_options: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        chunks: list[Any] | None = None,
        *,
        models: dict[str, sf.ModelInfo] | None = None,
        error: BaseException | None = None,
    ) -> None:
        self.chunks: list[Any] = SEED if chunks is None else chunks
        self.models = models or {}
        self.error = error
        self.calls: list[sf.GenerateOptions] = []

    async def resolve_model(self, model: str) -> sf.ModelInfo:
        return self.models.get(model) or await super().resolve_model(model)

    async def stream(self, options: sf.GenerateOptions) -> AsyncIterator[sf.StreamChunk]:
        self.calls.append(options)
        for chunk in self.chunks:
            yield chunk
        if self.error is not None:
            raise self.error


def run(adapter: sf.LlmAdapter, options: sf.GenerateOptions = ASK, **kwargs: Any) -> list[sf.StreamChunk]:
    async def main() -> list[sf.StreamChunk]:
        return [chunk async for chunk in adapter.generate(options, **kwargs)]

    return asyncio.run(main())


def refused(adapter: sf.LlmAdapter, options: sf.GenerateOptions = ASK) -> sf.LlmError:
    with pytest.raises(sf.LlmError) as caught:
        run(adapter, options)
    return caught.value


# --- Options ----------------------------------------------------------------------------------------


#: The fields of GenerateOptions that are not options an adapter may refuse: the request, and the machine's limits.
REQUIRED = {"provider", "model", "messages", "limits"}


def test_every_optional_field_is_covered() -> None:
    assert set(SET) == set(sf.GenerateOptions.model_fields) - REQUIRED


def test_generate_gives_the_adapter_the_machines_limits() -> None:
    adapter = Scripted()
    limits = sf.Limits(max_blocks=7)
    run(adapter, limits=limits)
    run(adapter)
    assert [options.limits for options in adapter.calls] == [limits, None]  # a converter it makes takes them


def test_the_options_limits_bound_the_machine_when_generate_is_given_none() -> None:
    error = refused(Scripted(), ASK.model_copy(update={"limits": sf.Limits(max_chunks=1)}))
    assert error.code == E.LIMIT_EXCEEDED and "more than 1 chunks" in error.message


@pytest.mark.parametrize("field", sorted(SET))
def test_an_unsupported_option_is_refused_by_name_before_any_request(field: str) -> None:
    adapter = Scripted()
    error = refused(adapter, ASK.model_copy(update={field: SET[field]}))
    assert error.code == E.UNSUPPORTED_OPTION and repr(field) in error.message
    assert adapter.calls == []


@pytest.mark.parametrize("adapter", [sf.OpenAICompatibleAdapter("http://127.0.0.1:9"), sf.AnthropicAdapter()])
def test_the_http_adapters_refuse_session_id_before_any_request(adapter: sf.LlmAdapter) -> None:
    # Port 9 (discard) would fail with TRANSPORT if a request were made.
    error = refused(adapter, ASK.model_copy(update={"session_id": "s-1"}))
    assert error.code == E.UNSUPPORTED_OPTION and "'session_id'" in error.message


def test_calling_stream_directly_checks_options_too() -> None:
    adapter = sf.OpenAICompatibleAdapter("http://127.0.0.1:9")

    async def main() -> None:
        async for _ in adapter.stream(ASK.model_copy(update={"session_id": "s-1"})):
            pass

    with pytest.raises(sf.LlmError, match="session_id"):
        asyncio.run(main())


def test_supported_options_are_passed_on() -> None:
    class Everything(Scripted):
        supported_options = frozenset(sf.GenerateOptions.model_fields) - REQUIRED

    adapter = Everything(models={"m": reasoning_model(("high",))})
    options = ASK.model_copy(update=SET)
    run(adapter, options)
    assert adapter.calls == [options]


def test_options_are_validated() -> None:
    with pytest.raises(ValueError):
        sf.GenerateOptions(model="")
    with pytest.raises(ValueError):
        sf.GenerateOptions(model="m", max_tokens=0)


# --- Reasoning effort ---------------------------------------------------------------------------------


def reasoning_model(ids: tuple[str, ...], default: str | None = None) -> sf.ModelInfo:
    efforts = tuple(sf.ReasoningEffortInfo(id=i, name=i.title() or "?") for i in ids)
    reasoning = sf.ModelReasoningInfo(efforts=efforts, default_effort=default)
    return sf.ModelInfo(provider="p", id="m", name="M", reasoning=reasoning)


class Reasoning(Scripted):
    supported_options = frozenset({"reasoning_effort"})


@pytest.mark.parametrize(
    ("model", "requested", "sent"),
    [
        (reasoning_model(("off", "low", "high")), "low", "low"),
        (reasoning_model(("off", "low", "high")), "off", "off"),
        (reasoning_model(("off", "low", "high"), default="high"), None, "high"),  # omitted: the default
        (reasoning_model(("off", "low", "high")), None, None),  # no default: the provider's own
        (None, None, None),
    ],
)
def test_accepted_efforts(model: sf.ModelInfo | None, requested: str | None, sent: str | None) -> None:
    adapter = Reasoning(models={"m": model} if model else {})
    run(adapter, ASK.model_copy(update={"reasoning_effort": requested}))
    assert adapter.calls[0].reasoning_effort == sent


@pytest.mark.parametrize(
    ("model", "requested", "code", "words"),
    [
        (
            reasoning_model(("off", "low")),
            "high",
            E.UNSUPPORTED_REASONING_EFFORT,
            "does not support reasoning effort 'high'",
        ),
        (
            reasoning_model(("off", "low")),
            "LOW",
            E.UNSUPPORTED_REASONING_EFFORT,
            "'LOW'",
        ),  # ids are opaque: no case folding
        (None, "low", E.UNSUPPORTED_REASONING_EFFORT, "no selectable reasoning effort"),
        (reasoning_model(()), "low", E.INVALID_MODEL_REASONING, "lists no efforts"),
        (reasoning_model(()), None, E.INVALID_MODEL_REASONING, "lists no efforts"),
        (reasoning_model(("low", "low")), None, E.INVALID_MODEL_REASONING, "listed twice"),
        (reasoning_model(("low",), default="high"), None, E.INVALID_MODEL_REASONING, "default reasoning effort 'high'"),
        (reasoning_model(("low", "")), None, E.INVALID_MODEL_REASONING, "empty id"),
    ],
)
def test_refused_efforts(model: sf.ModelInfo | None, requested: str | None, code: sf.ErrorCode, words: str) -> None:
    adapter = Reasoning(models={"m": model} if model else {})
    error = refused(adapter, ASK.model_copy(update={"reasoning_effort": requested}))
    assert error.code == code and words in error.message
    assert adapter.calls == []


def test_the_adapters_list_is_kept_whole_and_in_order() -> None:
    model = reasoning_model(("off", "minimal", "low", "medium", "high"), default="medium")
    adapter = sf.OpenAICompatibleAdapter("http://127.0.0.1:9", models=[model])
    (listed,) = asyncio.run(adapter.list_models())
    assert listed.reasoning is not None
    assert [e.id for e in listed.reasoning.efforts] == ["off", "minimal", "low", "medium", "high"]
    assert asyncio.run(adapter.resolve_model("m")) == model


def test_the_default_effort_is_sent_to_the_provider() -> None:
    from ..providers.test_adapters import TEXT
    from ..sse_server import SSE, SSEServer, openai_events

    with SSEServer() as server:
        server.script(SSE(openai_events(TEXT)))
        adapter = sf.OpenAICompatibleAdapter(server.url, models=[reasoning_model(("low", "high"), default="high")])
        run(adapter)
        assert server.requests[0].json()["reasoning_effort"] == "high"


# --- Checked output -----------------------------------------------------------------------------------


def test_generate_passes_a_valid_stream_through() -> None:
    assert run(Scripted()) == SEED


def test_a_broken_adapter_is_caught_at_the_chunk_where_it_broke() -> None:
    broken = [*SEED[:3], {"type": "text-delta", "index": 5, "text": "?"}, *SEED[3:]]
    error = refused(Scripted(broken))
    assert (error.code, error.chunk_index) == (E.BLOCK_NOT_OPEN, 3)


def test_harness_policy_and_no_policy() -> None:
    interleaved: list[Any] = [
        {"type": "block-start", "index": 0, "blockType": "reasoning"},
        {"type": "block-start", "index": 1, "blockType": "text"},
        {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": ""}},
        {"type": "block-end", "index": 1, "block": {"type": "text", "text": ""}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    assert refused(Scripted(interleaved)).code == E.BLOCKS_INTERLEAVED
    assert run(Scripted(interleaved), policy=sf.Policy.HARNESS) == interleaved
    anything: list[Any] = [{"type": "anything"}]
    assert run(Scripted(anything), policy=None) == anything


@pytest.mark.parametrize("policy", [sf.Policy.STRICT, None])
def test_an_exception_from_an_adapter_becomes_unknown(policy: sf.Policy | None) -> None:
    cause = ConnectionError("socket closed")
    with pytest.raises(sf.LlmError) as caught:
        run(Scripted(SEED[:3], error=cause), policy=policy)
    assert caught.value.code == E.UNKNOWN and caught.value.__cause__ is cause
    # Through the machine the upstream's exception is the entry point's to wrap; without it, the adapter's.
    where = "the upstream failed after 3 chunk(s)" if policy else "Scripted failed"
    assert caught.value.message == f"{where}: ConnectionError: socket closed"


def test_an_llm_error_from_an_adapter_reaches_the_caller_unchanged() -> None:
    error = sf.LlmError("slow down", E.RATE_LIMIT, status=429, retry_after_ms=100)
    with pytest.raises(sf.LlmError) as caught:
        run(Scripted(SEED[:3], error=error))
    assert caught.value is error


# --- AbortSignal --------------------------------------------------------------------------------------


def test_abort_signal_listeners_and_reason() -> None:
    controller = sf.AbortController()
    signal = controller.signal
    heard: list[str] = []
    remove = signal.add_listener(lambda: heard.append("a"))
    signal.add_listener(lambda: heard.append("b"))
    remove()
    assert not signal.aborted and signal.reason is None
    signal.throw_if_aborted()
    assert controller.abort("enough") is True
    assert controller.abort("again") is False
    assert heard == ["b"] and signal.aborted and signal.reason == "enough"
    signal.add_listener(lambda: heard.append("late"))  # already aborted: called at once
    assert heard == ["b", "late"]
    with pytest.raises(sf.LlmError, match="enough") as caught:
        signal.throw_if_aborted()
    assert caught.value.code == E.ABORTED


def test_abort_signal_wait_across_threads() -> None:
    controller = sf.AbortController()

    async def main() -> None:
        threading.Timer(0.02, controller.abort).start()
        await asyncio.wait_for(controller.signal.wait(), 2)
        await controller.signal.wait()  # already aborted: returns at once

    asyncio.run(main())
    assert controller.signal.aborted


def test_attribution_headers() -> None:
    assert sf.attribution_headers() == {
        "user-agent": f"streamfsm/{sf.__version__} (+https://github.com/streamfsm/streamfsm)"
    }
    assert sf.attribution_headers(sf.AppIdentity("x", "1", "u")) == {"user-agent": "x/1 (+u)"}


def test_assistant_message_from_result() -> None:
    result = sf.assemble(SEED)
    message = sf.AssistantMessage.from_result(result)
    assert message.blocks == tuple(result.blocks) and message.tool_calls == result.tool_calls


def test_a_listener_that_raises_does_not_keep_the_others_from_hearing() -> None:
    controller = sf.AbortController()
    heard: list[str] = []

    def broken() -> None:
        raise RuntimeError("listener bug")

    controller.signal.add_listener(broken)
    controller.signal.add_listener(lambda: heard.append("second"))
    with pytest.raises(RuntimeError, match="listener bug"):
        controller.abort()
    assert heard == ["second"] and controller.signal.aborted


def test_an_exception_from_resolve_model_becomes_unknown() -> None:
    class Unresolvable(Scripted):
        async def resolve_model(self, model: str) -> sf.ModelInfo:
            raise KeyError(model)

    error = refused(Unresolvable())
    assert error.code == E.UNKNOWN and isinstance(error.__cause__, KeyError)
    assert error.message == "Unresolvable failed: KeyError: 'm'"


def test_aborting_after_a_waiters_loop_was_closed_does_not_raise() -> None:
    controller = sf.AbortController()
    loop = asyncio.new_event_loop()
    waiting = loop.create_task(controller.signal.wait())
    loop.run_until_complete(asyncio.sleep(0))  # the task now waits on the signal
    loop.close()  # closed under it, the task never finished (nor removed its waiter)
    assert controller.abort() is True
    assert not waiting.done()
    waiting._log_destroy_pending = False  # type: ignore[attr-defined]  # pending on purpose: no report at exit
