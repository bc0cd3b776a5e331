"""A real S3-compatible server for the ``cloud`` tests: moto's server mode on 127.0.0.1, and a bucket a test.

The fixtures ``s3_endpoint`` (one server a session) and ``s3`` (a new bucket, the environment pointing s3fs there)
are offered to every test by ``tests/conftest.py``. Without moto or the ``cloud`` extra the tests that use them fail.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server, in a thread of this process, on a free port of 127.0.0.1."""
    from moto.server import ThreadedMotoServer  # missing: the cloud tests fail (pip install -e '.[test]')

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@dataclass
class Bucket:
    """A bucket of its own for one test, and the s3fs client the code under test also gets."""

    fs: Any
    name: str
    endpoint: str

    def url(self, key: str) -> str:
        return f"s3://{self.name}/{key}"

    def put(self, key: str, data: bytes) -> str:
        self.fs.pipe(f"{self.name}/{key}", data)
        return self.url(key)


@pytest.fixture
def s3(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Bucket]:
    """A new bucket on the server, with the environment pointing s3fs there as a user would (docs/guides/corpora.md)."""
    import s3fs

    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "streamfsm-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "streamfsm-test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))  # a developer's ~/.aws stays out
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s3fs.S3FileSystem.clear_instance_cache()  # a client made before these settings is not reused
    fs = s3fs.S3FileSystem()
    bucket = Bucket(fs, f"streamfsm-{uuid.uuid4().hex[:16]}", s3_endpoint)
    fs.mkdir(bucket.name)
    try:
        yield bucket
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
