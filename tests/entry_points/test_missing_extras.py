"""A part of streamfsm used without the extra it needs says so where it is first used, naming the extra and how to
install it: the HTTP adapters when constructed (not at their first request), ``streamfsm.otel`` when imported,
``check --scheduler`` when it starts. The packages are hidden from a child interpreter by a finder placed first
on ``sys.meta_path``, as if they were not installed; the rest of the package works without them."""

from __future__ import annotations

import pytest

from ..cli_support import without

ADAPTERS = ["OpenAICompatibleAdapter", "AnthropicAdapter", "OpenAIResponsesAdapter", "GeminiAdapter"]


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_an_http_adapter_without_httpx_fails_when_constructed_naming_the_extra(adapter: str) -> None:
    done = without(
        {"httpx"},
        f"""
        import streamfsm as sf
        assert sf.assemble_jsonl('{{"type":"finish","reason":{{"kind":"stop"}}}}', policy="harness").text == ""
        sf.from_openai_chunks  # the converters need no httpx
        try:
            sf.{adapter}(base_url="http://127.0.0.1:9", api_key="k")
        except ImportError as exc:
            print(exc)
            assert isinstance(exc.__cause__, ModuleNotFoundError) and exc.__cause__.name == "httpx"
        else:
            raise SystemExit("constructed without httpx")
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"{adapter} needs the 'http' extra: pip install 'httpx>=0.27' (or pip install '.[http]' in a clone of "
        "streamfsm; see docs/install.md)\n"
    )


def test_the_adapters_construct_with_httpx() -> None:
    import streamfsm as sf

    for adapter in ADAPTERS:
        assert getattr(sf, adapter)(base_url="http://127.0.0.1:9").base_url == "http://127.0.0.1:9"


def test_streamfsm_otel_without_opentelemetry_names_the_extra() -> None:
    done = without({"opentelemetry"}, "import streamfsm.otel")
    assert done.returncode == 1
    assert done.stderr.rstrip().endswith(
        "ImportError: streamfsm.otel needs the 'otel' extra: pip install 'opentelemetry-api>=1.30' (or pip install "
        "'.[otel]' in a clone of streamfsm; see docs/install.md)"
    )


def test_check_on_a_dask_cluster_without_dask_names_the_extra() -> None:
    done = without(
        {"dask", "distributed"},
        """
        from streamfsm._cli import main
        raise SystemExit(main(["check", "--scheduler", "local", "--no-progress", "tests/fixtures/harness-sessions"]))
        """,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "streamfsm: error: --scheduler needs the 'dask' extra: pip install 'dask[distributed]>=2024.1' (or pip "
        "install '.[dask]' in a clone of streamfsm; see docs/install.md)\n"
    )
