"""The provider layer: a converter (and an HTTP adapter) per wire API, and the pieces they share.

Modelled on httpx's ``_transports``: flat modules, private to streamfsm, whose public names are re-exported
here and, from here, by :mod:`streamfsm` (import them from there). The dependency goes one way: this package
imports the core (the adapter contract in ``streamfsm/_adapter.py``, the chunk types, the errors, what a
recording is: ``streamfsm/_recordings.py``); the core does not import it. Above it stand ``streamfsm/__init__.py``,
which re-exports it, and the one reader of recordings (``streamfsm/_reader.py``), which reads a provider's
recording through ``recorded.py``.

Every wire API has the same files, named for the API: ``<api>.py``, its sans-IO converter (the class, the
``from_<api>_<events>`` function and the usage reader), and ``<api>_adapter.py``, its HTTP adapter, where it has one
(it imports the converter; the converter knows nothing of HTTP):

- ``openai_chat.py`` + ``openai_chat_adapter.py``: OpenAI-compatible chat completions (``chat.completion.chunk``,
  and the legacy completions API's ``text_completion`` chunks): :class:`OpenAIConverter`,
  :func:`from_openai_chunks`; :class:`OpenAICompatibleAdapter`.
- ``anthropic_messages.py`` + ``anthropic_messages_adapter.py``: the Anthropic Messages API:
  :class:`AnthropicConverter`, :func:`from_anthropic_events`; :class:`AnthropicAdapter`.
- ``openai_responses.py`` + ``openai_responses_adapter.py``: the OpenAI Responses API:
  :class:`OpenAIResponsesConverter`, :func:`from_openai_responses_events`; :class:`OpenAIResponsesAdapter`. The
  API's own tools that the client runs (a call read from its item, a result written as its output item) are
  ``openai_responses_tools.py``, which both use.
- ``gemini.py`` + ``gemini_adapter.py``: Gemini ``streamGenerateContent``: :class:`GeminiConverter`,
  :func:`from_gemini_chunks`; :class:`GeminiAdapter`.
- ``bedrock.py``: Bedrock ``ConverseStream`` (the events boto3 yields): :class:`BedrockConverter`,
  :func:`from_bedrock_events`. No HTTP adapter: a Bedrock request is SigV4-signed by boto3.
- ``cohere.py``: the Cohere v2 chat stream: :class:`CohereConverter`, :func:`from_cohere_events`. No HTTP
  adapter: users hold the ``cohere`` SDK's stream.

Beside them, ``<api>_body.py`` reads the wire API's non-streamed answer (one response body, a dict or the SDK's
object) into a :class:`~streamfsm.StreamResult`: it turns the body into the events its stream would have been
(each block whole, in one delta) and runs them through the API's converter and the machine (``convert.answer``),
so that a body gives what its stream gives, by the same rules: ``openai_chat_body.py``
(:func:`from_openai_completion`), ``anthropic_messages_body.py`` (:func:`from_anthropic_message`),
``openai_responses_body.py`` (:func:`from_openai_response`), ``gemini_body.py`` (:func:`from_gemini_response`),
``bedrock_body.py`` (:func:`from_bedrock_response`), ``cohere_body.py`` (:func:`from_cohere_response`).

The shared pieces, each named for what it holds:

- ``convert.py``: driving a converter over sync or async events, dicts or SDK objects (``convert``,
  ``as_event``); reading one event (``event_object``, ``string``); a malformed event; token counts (``count``);
  stop reasons (``finish_reason``; ``stop_reason`` and ``refuse_empty``, the opening of every ``end()``) and
  the closing chunks (``closing``, the last of every ``end()``); what may follow a turn's end, one rule for every
  API (``ended_turn``: only its usage; anything else begins another turn or is ``MALFORMED_RESPONSE``); a
  non-streamed answer given to its converter as the events its stream would have been (``BodyReader``).
- ``frame.py``: ``TurnState``, the base class of the six converters (what every converter has of its turn).
- ``arguments.py``: tool-call arguments that stream as values at JSON paths (Gemini's ``partialArgs``), written
  as the JSON text of the arguments as they come (``ArgumentWriter``).
- ``blocks.py``: ``ProviderBlock``, a block as it is converted (its chunks; whether a tool call's arguments
  are complete JSON yet).
- ``recorded.py``: a recorded provider stream (an SSE body, or its events as JSON lines) read for the one reader:
  parsed by ``sse.py`` as a live body is, converted turn by turn, each chunk knowing its event's line.
- ``sdk_streams.py``: an SDK's own stream checked as it passes (:func:`checked`): its objects yielded unchanged, each
  converted (through ``turns.TURN_APIS``) and fed to the machine.
- ``turns.py``: a recording of several turns, one stream per turn (:func:`read_turns`): each converter's
  ``begins_turn`` says where its API ends a turn, ``convert.Turns`` cuts there, for users and the reader.
- ``held.py``: ``BlockQueue``, which holds back a block the provider interleaves (a later parallel tool call)
  until the open one may end, so that the output is valid under ``Policy.STRICT``; what it holds counts against
  the machine's ``Limits`` (a converter's ``limits``: an adapter gives its converter ``options.limits``); at the end,
  ``finish`` ends them all.
- ``replay.py``: what a turn keeps for replay (``Keeper``, within ``MAX_KEPT_CHARS``), how users read it
  (:class:`KeptBlock`, :func:`kept_blocks`, :func:`describe_kept`) and how a request builder puts it back.
- ``classify.py``: every failure a provider reports, as an ``ErrorCode``: an HTTP error status (with
  ``retry-after`` and the request id), an error sent inside a stream (its numeric ``code`` or ``status`` read
  as an HTTP status first), the wordings of a context overflow or an exhausted quota, a failed Responses
  response's error codes.
- ``base.py``: :class:`HttpAdapter`, the base of the adapters over HTTP (key, headers, bounds, redaction).
- ``http.py``: one streamed POST within bounds, ended by an abort or a deadline (the ``http`` extra).
- ``sse.py``: the bounded server-sent-events parser; ``body.py``: bounded content decoding;
  ``secrets.py``: key and header checks, and redaction.

A new wire API goes in one new module named for it (as ``gemini.py``, ``bedrock.py``, ``cohere.py`` did), and its
HTTP adapter, if any, in ``<api>_adapter.py``; they provide:

1. A sans-IO converter class: ``feed(event: Mapping) -> list[StreamChunk]`` (the chunks one provider event
   completes), ``end() -> list[StreamChunk]`` (the input is over) and ``begins_turn(event) -> bool`` (the
   event starts another turn, this one over: ``feed`` refuses it with ``another_turn(...)``), the
   ``TurnConverter`` protocol of ``convert.py``; it goes in ``turns.TURN_APIS``.
   It subclasses ``frame.TurnState``, the frame of the six converters, which takes ``limits`` (the converter's
   one constructor argument) and owns what every converter has: ``over`` (what ended the turn on the wire,
   its end event or the error event that failed it, :meth:`failed`; ``None`` while it may go on) and ``ended``
   (``end()`` has run); ``end()``, the after-end guard around the converter's ``close()``; ``queue``, the
   ``BlockQueue`` its blocks go through when the provider may interleave them, bounded by the limits;
   ``keeper`` and ``keep()``, what the turn keeps for replay; ``usage``; ``calls``, the client tool calls
   that make the API's ``stop`` a ``tool-calls``; and ``closed(finish, replay_state)``, what every ``close()``
   ends with (the blocks ended, an empty ``stop`` refused, then usage and finish). The converter writes only
   what its API says: ``feed``, ``begins_turn`` and ``close()``. It builds its blocks as ``ProviderBlock`` s;
   raises ``malformed(...)`` for an event outside the provider's documented format; raises
   ``stream_failure(...)`` (or classifies with ``classify_failure``) for a failure the provider reports, so
   that every API's failures get the codes the HTTP adapters give; maps stop reasons with ``finish_reason``
   (``stop_reason`` when the input is over). What the block protocol has no word for is to be kept verbatim
   for replay, not rejected.
2. ``from_<api>_<events>(events, *, limits=None)`` (``from_openai_responses_events``, ``from_gemini_chunks``,
   ...), typed by ``@sync_or_async`` and returning ``convert(TheConverter(limits), events, "<one event>")``:
   it takes sync or async iterables of dicts or of the official SDK's objects (``as_event`` dumps those, or
   the API's own reader given to ``convert``) and gives the same kind of iterator back. Its non-streamed
   answer's reader is ``BodyReader(TheConverter, events_of_the_body, "<the body>")``.
3. Optionally, in ``<api>_adapter.py``, an :class:`HttpAdapter` subclass, its constructor parameters spelled
   out (not ``**kwargs``: users read them), with ``provider_headers()`` (how the key is sent),
   ``request_body(options)`` and ``stream(options)``, which returns
   ``self._converted(TheConverter(options.limits), path, body, options.signal, end)`` (``generate`` sets
   ``options.limits`` to the machine's, so that one setting bounds both).
   It imports ``httpx`` only under ``TYPE_CHECKING``: ``import streamfsm`` must work without the extra.

Then it gets its row in ``streamfsm/_wire_apis.py`` (``WIRE_APIS``: its format, functions, classes, SDK and
OpenTelemetry names, from which ``FORMATS``, ``READERS`` and ``otel.PROVIDER_NAMES`` are read), its ``TurnApi`` in
``turns.py`` and its body reader in ``recorded.py``; ``streamfsm/_recordings.py`` and ``streamfsm/_bodies.py``
learn to tell its events and its body; its public names are re-exported below and by ``streamfsm/__init__.py``,
and the docs get a page for it (docs/guides/wire-apis/). docs/project/development.md lists the steps.
"""

from __future__ import annotations

from .anthropic_messages import AnthropicConverter, from_anthropic_events
from .anthropic_messages_adapter import AnthropicAdapter
from .anthropic_messages_body import from_anthropic_message
from .base import HttpAdapter, HttpSettings
from .bedrock import BedrockConverter, from_bedrock_events
from .bedrock_body import from_bedrock_response
from .cohere import CohereConverter, from_cohere_events
from .cohere_body import from_cohere_response
from .gemini import GeminiConverter, from_gemini_chunks
from .gemini_adapter import GeminiAdapter
from .gemini_body import from_gemini_response
from .openai_chat import OpenAIConverter, from_openai_chunks
from .openai_chat_adapter import OpenAICompatibleAdapter
from .openai_chat_body import from_openai_completion
from .openai_responses import OpenAIResponsesConverter, from_openai_responses_events
from .openai_responses_adapter import OpenAIResponsesAdapter
from .openai_responses_body import from_openai_response
from .replay import KeptBlock, describe_kept, kept_blocks
from .sdk_streams import AsyncChecked, Checked, checked
from .turns import read_turns

__all__ = [
    "AnthropicAdapter",
    "AnthropicConverter",
    "AsyncChecked",
    "BedrockConverter",
    "Checked",
    "CohereConverter",
    "GeminiAdapter",
    "GeminiConverter",
    "HttpAdapter",
    "HttpSettings",
    "KeptBlock",
    "OpenAICompatibleAdapter",
    "OpenAIConverter",
    "OpenAIResponsesAdapter",
    "OpenAIResponsesConverter",
    "checked",
    "describe_kept",
    "from_anthropic_events",
    "from_anthropic_message",
    "from_bedrock_events",
    "from_bedrock_response",
    "from_cohere_events",
    "from_cohere_response",
    "from_gemini_chunks",
    "from_gemini_response",
    "from_openai_chunks",
    "from_openai_completion",
    "from_openai_response",
    "from_openai_responses_events",
    "kept_blocks",
    "read_turns",
]
