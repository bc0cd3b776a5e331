"""Reading a recording of several turns: one converted stream per turn, for every wire API.

Agent loops and SDK test suites record a conversation: several responses, one after another, in one body or
file. Each wire API says where its turn ends (each converter's ``begins_turn``), :class:`~.convert.Turns` is the
one rule that cuts there, and :func:`read_turns` gives it to users, as :func:`streamfsm.read_session` gives the
streams of a session log. A provider recording is read (``recorded.py``, for the one reader) through the
same :data:`TURN_APIS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from .._wire import StreamChunk
from .anthropic_messages import MESSAGE_STREAM_HELPERS, AnthropicConverter, from_anthropic_events
from .bedrock import BedrockConverter, from_bedrock_events, sdk_errors
from .cohere import CohereConverter, from_cohere_events
from .convert import TurnConverter, Turns, as_event
from .gemini import GeminiConverter, from_gemini_chunks, gemini_event
from .openai_chat import CHAT_STREAM_HELPERS, OpenAIConverter, chat_event, from_openai_chunks
from .openai_responses import OpenAIResponsesConverter, from_openai_responses_events, responses_event

if TYPE_CHECKING:
    from .._config import Limits

__all__ = ["TURN_APIS", "NewConverter", "TurnApi", "read_turns"]


class NewConverter(Protocol):
    """A wire API's converter class: a fresh converter, given the machine's limits (to bound what it holds back)."""

    def __call__(self, limits: Limits | None = None) -> TurnConverter: ...


def _dumped(event: Any, what: str) -> Mapping[str, Any]:
    return as_event(event, what)


def _gemini(event: Any, what: str) -> Mapping[str, Any]:
    return gemini_event(event)


@dataclass(frozen=True, slots=True)
class TurnApi:
    """A wire API as its events are read: its converter, and each event as a mapping."""

    #: The ``from_...`` function that converts one turn of it.
    reader: Callable[..., Any]
    #: A fresh converter, for each turn.
    new: NewConverter
    #: What one event is called in messages.
    what: str
    #: One event as a mapping, as the ``from_...`` function reads it (an SDK object dumped).
    event: Callable[[Any, str], Mapping[str, Any]] = _dumped
    #: Whether the provider's errors are raised by the SDK while its stream is read, to be coded (botocore's).
    coded: bool = False
    #: The ``type`` of the events an SDK's stream helper adds, which repeat what the API's own events carry (the
    #: ``anthropic`` SDK's ``MessageStream``, the ``openai`` SDK's ``ChatCompletionStream``): passed over by
    #: :func:`streamfsm.checked`, unread.
    helpers: frozenset[str] = frozenset()

    def events(self, events: Iterable[Any]) -> Iterator[Mapping[str, Any]]:
        """``events`` read as the ``from_...`` function reads them (SDK objects dumped, SDK errors coded)."""
        event, what = self.event, self.what
        return (event(e, what) for e in (sdk_errors(events) if self.coded else events))


#: Every wire API, by its ``from_...`` function's name.
TURN_APIS: Final = {
    api.reader.__name__: api
    for api in (
        TurnApi(
            from_openai_chunks, OpenAIConverter, "a chat.completion.chunk", chat_event, helpers=CHAT_STREAM_HELPERS
        ),
        TurnApi(from_anthropic_events, AnthropicConverter, "an event", helpers=MESSAGE_STREAM_HELPERS),
        TurnApi(from_openai_responses_events, OpenAIResponsesConverter, "a Responses stream event", responses_event),
        TurnApi(from_gemini_chunks, GeminiConverter, "a GenerateContentResponse", _gemini),
        TurnApi(from_bedrock_events, BedrockConverter, "a ConverseStream event", coded=True),
        TurnApi(from_cohere_events, CohereConverter, "a v2 chat stream event"),
    )
}


def read_turns(reader: Callable[..., Any], events: Iterable[Any]) -> Iterator[Iterator[StreamChunk]]:
    """The turns of a recording of one wire API, each as the block-protocol chunks of one stream.

    ``reader`` names the wire API by its converting function (``sf.from_anthropic_events``,
    ``sf.from_openai_responses_events``, ...); ``events`` are what that function takes (dicts or the SDK's
    objects), synchronously. A recording holds one or more turns, and a turn ends where its API says: Anthropic at
    ``message_stop``; Responses at its terminal event (``response.completed``, ``.incomplete``, ``.failed``);
    Cohere at ``message-end``; Bedrock at ``messageStop`` and its ``metadata``; Gemini at a chunk with a new
    ``responseId`` after a ``finishReason``; chat completions at a chunk with a new ``id`` after a
    ``finish_reason``. A turn that starts before the one before it ended is spliced into it:
    ``MALFORMED_RESPONSE``, raised while its chunks are read, as any conversion error. A turn the provider failed
    (its error event, a failed response) is followed by the next; one its converter could not read
    (``MALFORMED_RESPONSE``, ``LIMIT_EXCEEDED``) is the last.

    Each turn is converted by a fresh converter, as it is read (give it to :func:`streamfsm.assemble`, or to
    :func:`streamfsm.validate`); asking for the next turn reads what is left of the one before. The first turn
    always comes. The ``from_...`` function itself converts one turn and refuses the first event of a second.
    """
    api = TURN_APIS.get(getattr(reader, "__name__", ""))
    if api is None or api.reader is not reader:
        known = ", ".join(f"sf.{name}" for name in TURN_APIS)
        raise TypeError(f"read_turns reads the turns of a wire API named by its converting function: one of {known}")
    return iter(Turns(api.new, api.events(events)))
