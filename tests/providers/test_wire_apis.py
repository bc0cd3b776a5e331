"""Each wire API is declared once, as one row of ``streamfsm._wire_apis.WIRE_APIS``: what must hold a function
itself (the turns' readers, the body readers of recordings, ``checked``'s ``api=``) is held against the rows here."""

from __future__ import annotations

from typing import get_args

import streamfsm as sf
from streamfsm._providers import recorded, turns
from streamfsm._providers.sdk_streams import Api
from streamfsm._wire_apis import WIRE_APIS, wire_api
from streamfsm.otel import PROVIDER_NAMES

FORMATS = tuple(api.format for api in WIRE_APIS)


def test_every_row_names_public_functions_and_classes() -> None:
    for api in WIRE_APIS:
        for name in (api.reader, api.body, api.converter, api.adapter):
            if name is not None:
                assert name in sf.__all__ and getattr(sf, name).__doc__, name
        assert wire_api(api.format) is api


def test_the_formats_are_the_rows() -> None:
    assert ("auto", "jsonl", "harness-session", *FORMATS) == sf.FORMATS
    assert get_args(Api) == FORMATS  # checked(api=...) names a wire API as its recordings do


def test_the_provider_layers_tables_hold_one_entry_a_row() -> None:
    assert list(turns.TURN_APIS) == [api.reader for api in WIRE_APIS]
    assert all(turns.TURN_APIS[api.reader].new is getattr(sf, api.converter) for api in WIRE_APIS)
    assert list(recorded._BODIES) == list(FORMATS)
    assert all(recorded._BODIES[api.format].events.__module__.endswith("_body") for api in WIRE_APIS)


def test_each_adapter_routes_as_its_row_says() -> None:
    for api in WIRE_APIS:
        if api.adapter is not None:
            assert getattr(sf, api.adapter).default_provider == api.route
        assert PROVIDER_NAMES[api.route] == api.otel
