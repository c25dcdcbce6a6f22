"""`POWERCONTEXT_SERVER_WORKERS`: several server processes on one database answer as one server.

Rule (recall, RFC "Selection"): prepare reads the current Scope's committed Memory. With two worker
processes each keeping its own search mirror, every acknowledged remember must be recalled by the
very next prepare, whichever process receives either request.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import NO_KEEPALIVE, database_env

POWERCONTEXT = Path(sys.executable).with_name("powercontext")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def two_workers(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_SERVER_")}
    env |= {"POWERCONTEXT_SERVER_WORKERS": "2", "POWERCONTEXT_SERVER_LOG_LEVEL": "warning"}
    env |= database_env(request, backend)
    log = (tmp_path / "server.log").open("wb")
    process = subprocess.Popen(
        [
            str(POWERCONTEXT),
            "serve",
            "--port",
            str(port),
            *([] if "POWERCONTEXT_SERVER_DATABASE_URL" in env else ["--data-dir", str(tmp_path / "data")]),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (tmp_path / "server.log").read_text()
            try:
                if httpx.get(base + "/health/ready", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not become ready"
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_every_remember_is_recalled_by_the_next_prepare_on_any_worker(two_workers: str) -> None:
    # Each prepare comes on a new connection: the kernel spreads them over both workers.
    with (
        httpx.Client(base_url=two_workers, timeout=30) as writer,
        httpx.Client(base_url=two_workers, timeout=30, limits=NO_KEEPALIVE) as reader,
    ):
        assert writer.post("/v1/scopes", json={"scope_id": "w:main"}).status_code == 201
        for i in range(25):
            text = f"heron sighting number marker{i} near the old mill"
            assert writer.post(
                "/v1/memory/remember", json={"scope_id": "w:main", "text": text}
            ).status_code in (200, 201)
            for _ in range(3):
                response = reader.post(
                    "/v1/context/prepare",
                    json={"scope_id": "w:main", "query": f"marker{i} heron", "assembly": {}},
                )
                assert response.status_code == 200, response.text
                assert text in response.json()["content"]
