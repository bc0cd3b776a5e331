"""Content codings undone a step at a time (streamfsm/_providers/body.py): gzip, deflate (wrapped or raw), chains."""

from __future__ import annotations

import gzip
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm._providers.body import STEP, BodyDecoder

E = sf.ErrorCode
TEXT = b"data: " + bytes(range(32, 127)) * 2000 + b"\n\n"


def pack(data: bytes, coding: str) -> bytes:
    if coding in ("gzip", "x-gzip"):
        return gzip.compress(data)
    if coding == "deflate":
        return zlib.compress(data)
    if coding == "raw-deflate":
        packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        return packer.compress(data) + packer.flush()
    return data


def unpack(decoder: BodyDecoder, body: bytes, size: int) -> list[bytes]:
    pieces = []
    for start in range(0, len(body), size):
        pieces += decoder.decode(body[start : start + size])
    return pieces + list(decoder.end())


@settings(max_examples=60, deadline=None)
@given(
    coding=st.sampled_from(["", "identity", "gzip", "x-gzip", "deflate", "raw-deflate"]),
    size=st.integers(1, 70_000),
)
def test_every_coding_in_any_reads_gives_the_body(coding: str, size: int) -> None:
    header = "deflate" if coding == "raw-deflate" else coding
    body = pack(TEXT, coding)
    assert b"".join(unpack(BodyDecoder(header), body, size)) == TEXT


def test_a_chain_is_undone_last_coding_first() -> None:
    body = gzip.compress(zlib.compress(TEXT))
    assert b"".join(unpack(BodyDecoder("deflate, GZIP"), body, 1000)) == TEXT


def test_a_bomb_comes_out_a_step_at_a_time() -> None:
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024), 9)  # about 64 KB
    decoder = BodyDecoder("gzip")
    pieces = decoder.decode(bomb)
    first = next(pieces)
    assert len(first) == STEP  # and nothing more is made until the next piece is asked for
    assert sum(len(p) for p in pieces) + len(first) == 64 * 1024 * 1024
    assert all(len(p) <= STEP for p in decoder.decode(gzip.compress(b"\0" * 10_000_000)))


def test_a_full_step_with_no_input_left_still_gives_the_rest() -> None:
    data = bytes(range(256)) * (STEP // 256)  # exactly one step
    body = zlib.compress(data + b"tail")
    assert b"".join(BodyDecoder("deflate").decode(body)) + b"".join(BodyDecoder("deflate").end()) == data + b"tail"


def test_a_one_byte_deflate_body_is_not_lost() -> None:
    for body in (zlib.compress(b""), pack(b"", "raw-deflate")):
        assert unpack(BodyDecoder("deflate"), body, 1) == []
    assert unpack(BodyDecoder("deflate"), b"", 1) == []


def test_data_after_the_end_of_a_compressed_stream_is_ignored() -> None:
    assert b"".join(unpack(BodyDecoder("gzip"), gzip.compress(b"ok") + b"trailing junk", 5)) == b"ok"


@pytest.mark.parametrize("coding", ["br", "zstd", "compress", "gzip, br", "\x00" * 100])
def test_an_unknown_coding_is_refused(coding: str) -> None:
    with pytest.raises(sf.LlmError) as caught:
        BodyDecoder(coding)
    assert caught.value.code == E.MALFORMED_RESPONSE and len(caught.value.message) < 500  # 40 characters shown


@pytest.mark.parametrize(("coding", "body"), [("gzip", b"not gzip"), ("deflate", b"\xff" * 20)])
def test_a_broken_coding_is_malformed(coding: str, body: bytes) -> None:
    with pytest.raises(sf.LlmError) as caught:
        unpack(BodyDecoder(coding), body, 4)
    assert caught.value.code == E.MALFORMED_RESPONSE and f"{coding} coding is broken" in caught.value.message
