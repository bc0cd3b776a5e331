"""LiteLLM's proxy with mock models, a real third-party server for the probe's tests: no network, no key.

LiteLLM's ``litellm[proxy]`` pins versions of packages the test environment holds at others (rich,
importlib-metadata, websockets), so it is not one of the test dependencies: :func:`litellm_command` installs it,
from the package index, into a virtualenv of its own under the user's cache (``~/.cache/streamfsm-tests``, or
``STREAMFSM_TEST_CACHE``), once, and reuses it afterwards. :func:`start` runs the proxy on a free port of 127.0.0.1
with :data:`CONFIG`, whose models answer from ``mock_response`` (and ``mock_tool_calls``) without calling any
provider.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

#: The LiteLLM the tests run: pinned, so that its verdicts are the ones the tests assert.
VERSION = "1.108.7"
#: The key the proxy asks for.
MASTER_KEY = "sk-probe-tests"
#: What the text model says, streamed or not.
MOCK_TEXT = "Hello from the mock. It streams this sentence in pieces."

CONFIG = f"""\
model_list:
  - model_name: mock-text
    litellm_params:
      model: openai/mock-text
      mock_response: "{MOCK_TEXT}"
  - model_name: mock-tool
    litellm_params:
      model: openai/mock-tool
      mock_response: "Calling the tool."
      mock_tool_calls:
        - id: call_1
          type: function
          function:
            name: get_weather
            arguments: '{{"city": "Paris"}}'
general_settings:
  master_key: {MASTER_KEY}
"""


def cache_folder() -> Path:
    return Path(os.environ.get("STREAMFSM_TEST_CACHE") or Path.home() / ".cache" / "streamfsm-tests")


def litellm_command() -> Path:
    """The ``litellm`` script of the virtualenv the proxy runs from, made (``pip install``) on first use."""
    venv = cache_folder() / f"litellm-{VERSION}-py{sys.version_info.major}{sys.version_info.minor}"
    script = venv / ("Scripts/litellm.exe" if os.name == "nt" else "bin/litellm")
    ready = venv / "installed"
    if ready.is_file() and script.is_file():
        return script
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", f"litellm[proxy]=={VERSION}"],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if done.returncode:
        raise RuntimeError(f"installing litellm[proxy]=={VERSION} failed:\n{done.stderr[-4000:]}")
    ready.write_text(VERSION)
    return script


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def start(folder: Path, *, seconds: float = 180.0) -> Iterator[str]:
    """Run the proxy with :data:`CONFIG` until the block ends; yields its URL (``http://127.0.0.1:PORT``)."""
    command = litellm_command()
    config = folder / "litellm.yaml"
    config.write_text(CONFIG)
    port = _free_port()
    log = (folder / "litellm.log").open("wb")
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # the model prices it ships with: no fetch
        "LITELLM_TELEMETRY": "False",
        "NO_COLOR": "1",
    }
    process = subprocess.Popen(
        [str(command), "--config", str(config), "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + seconds
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the LiteLLM proxy exited ({process.returncode}):\n{_tail(folder)}")
            try:
                with urllib.request.urlopen(f"{url}/health/liveliness", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the LiteLLM proxy did not answer within {seconds:g} s:\n{_tail(folder)}")
            time.sleep(0.5)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 15)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
        log.close()


def _tail(folder: Path) -> str:
    return (folder / "litellm.log").read_text(errors="replace")[-4000:]
