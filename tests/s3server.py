"""A real S3 API for the tests: moto's server on the loopback, started by the tests themselves, and the ``AWS_*``
environment a data root reads it with (the same a cluster node sets for a real bucket)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class S3Server:
    """A running S3 server: its endpoint and the environment that reaches it."""

    endpoint: str
    process: subprocess.Popen[bytes]

    @property
    def env(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "distill-test",
            "AWS_SECRET_ACCESS_KEY": "distill-test",
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="distill-test",
            aws_secret_access_key="distill-test",
            region_name="us-east-1",
        )

    def bucket(self) -> str:
        """A new empty bucket's name."""
        name = f"lake-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str) -> list[str]:
        listed = self.client().list_objects_v2(Bucket=bucket)
        return sorted(o["Key"] for o in listed.get("Contents", []))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on a free loopback port, for the block."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"moto's S3 server did not start on port {port}")
            time.sleep(0.1)
        yield S3Server(f"http://127.0.0.1:{port}", process)
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``values`` set, for the block."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
