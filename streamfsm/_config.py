"""What an assembler is configured with: its policy and its limits (plain Python; the machine is compiled)."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_LIMITS", "Limits", "Policy"]


class Policy(StrEnum):
    """Which rules apply (SPEC §4)."""

    #: All rules of SPEC §2: blocks never interleave, usage is required before a stop,
    #: tool-calls or max-tokens finish. The default.
    STRICT = "strict"
    #: As DeepSeek Harness streams: blocks may interleave, usage is optional.
    HARNESS = "harness"

    @classmethod
    def _missing_(cls, value: object) -> Policy:
        """A policy named in any case (``"HARNESS"``, ``"Strict"``) is that policy; any other value is a
        ``ValueError`` that names the policies."""
        if isinstance(value, str):
            for member in cls:
                if member.value == value.lower():
                    return member
        names = ", ".join(member.value for member in cls)
        raise ValueError(f"{value!r} is not a policy: one of {names} (in any case), or a Policy")


class Limits(BaseModel):
    """Bounds no normal stream reaches; passing one is ``LIMIT_EXCEEDED`` at the chunk that passed it."""

    model_config = ConfigDict(frozen=True)

    #: Chunks in one stream.
    max_chunks: int = Field(default=50_000_000, ge=1)
    #: Blocks in one stream.
    max_blocks: int = Field(default=100_000, ge=1)
    #: UTF-8 bytes of one block's text or tool arguments (an image's or unknown block's: its JSON); and of a tool
    #: call's id, and of its name, each on its own.
    max_block_bytes: int = Field(default=64 * 1024 * 1024, ge=1)
    #: UTF-8 bytes of every block of one stream together (text, reasoning, tool arguments, other blocks), tool calls'
    #: ids and names included: every string the machine keeps.
    max_stream_bytes: int = Field(default=256 * 1024 * 1024, ge=1)


DEFAULT_LIMITS: Final = Limits()
