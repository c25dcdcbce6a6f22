"""The OceanBase URL's parameters: `connect_timeout` bounds reaching the database (connect, login,
begin), `read_timeout` bounds each wait inside a transaction, and `charset=utf8mb4`, which most
MySQL URLs carry, is accepted (the only character set PowerContext can run with)."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from devtools.seekdb import SeekdbServer
from devtools.server_process import POWERCONTEXT, ServerProcess
from powercontext_runtime import backend_for
from powercontext_runtime.config import ConfigurationError
from powercontext_runtime.errors import RetrievalUnavailable
from powercontext_runtime.store.backends import MysqlBackend, mysql_target_from_url
from powercontext_runtime.store.sql_store import SqlStore

URL = "mysql+pymysql://root@127.0.0.1:2881/pc"


def test_the_url_sets_the_timeouts_and_defaults_them() -> None:
    plain = mysql_target_from_url(URL)
    assert (plain.connect_timeout, plain.read_timeout) == (1.0, 30.0)
    tuned = mysql_target_from_url(URL + "?connect_timeout=0.5&read_timeout=600")
    assert (tuned.connect_timeout, tuned.read_timeout) == (0.5, 600.0)
    assert (tuned.host, tuned.port, tuned.user, tuned.database) == ("127.0.0.1", 2881, "root", "pc")


@pytest.mark.parametrize(
    "query",
    ["?connect_timeout=0", "?read_timeout=-1", "?read_timeout=nan", "?read_timeout=inf", "?read_timeout=",
     "?connect_timeout=1s", "?charset=utf8", "?charset=latin1", "?read_timeout", "?sslmode=on"],
)  # fmt: skip
def test_a_malformed_timeout_or_unknown_parameter_stops_the_server(query: str) -> None:
    with pytest.raises(ConfigurationError, match="OceanBase URL"):
        backend_for(URL + query)


def test_charset_utf8mb4_is_accepted_in_any_case_and_no_other() -> None:
    for query in ("?charset=utf8mb4", "?charset=UTF8MB4&read_timeout=5", "?read_timeout=5&charset=utf8mb4"):
        assert mysql_target_from_url(URL + query).database == "pc"
    for query in ("?charset=utf8", "?charset=latin1", "?charset="):
        with pytest.raises(ValueError, match="charset must be utf8mb4") as refused:
            mysql_target_from_url(URL + query)
        assert "latin1" not in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(
        ValueError, match="unknown parameter 'ssl_mode'; it accepts connect_timeout, read_timeout, charset"
    ):
        mysql_target_from_url(URL + "?ssl_mode=REQUIRED")


def test_a_server_on_a_utf8mb4_url_serves_four_byte_text(
    seekdb_server: SeekdbServer, start_server: Callable[..., ServerProcess]
) -> None:
    server = start_server(seekdb_server.new_database_url() + "?charset=utf8mb4")
    base = f"http://127.0.0.1:{server.port}"
    assert httpx.post(f"{base}/v1/scopes", json={"scope_id": "project:charset"}).status_code == 201
    remembered = httpx.post(
        f"{base}/v1/memory/remember",
        json={"scope_id": "project:charset", "text": "deploys ship 🚀 on Fridays"},
    )
    assert remembered.status_code == 200
    found = httpx.post(f"{base}/v1/memory/search", json={"scope_id": "project:charset", "query": "deploys"})
    assert [hit["text"] for hit in found.json()["hits"]] == ["deploys ship 🚀 on Fridays"]


def test_a_server_on_another_charset_stops_with_one_line(seekdb_server: SeekdbServer, tmp_path: Path) -> None:
    env = {"POWERCONTEXT_SERVER_DATABASE_URL": seekdb_server.new_database_url() + "?charset=latin1"}
    stopped = subprocess.run(
        [str(POWERCONTEXT), "serve", "--port", "9"],
        env={**env, "PATH": "/usr/bin:/bin", "POWERCONTEXT_SERVER_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert stopped.returncode != 0
    assert stopped.stdout == ""
    assert stopped.stderr.count("\n") == 1, stopped.stderr
    assert "charset must be utf8mb4" in stopped.stderr


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose connections the kernel accepts and nobody ever answers: a hung database."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield int(listener.getsockname()[1])


def test_a_database_that_never_answers_is_unavailable_within_the_connect_timeout(silent_port: int) -> None:
    backend = backend_for(f"mysql+pymysql://root@127.0.0.1:{silent_port}/pc?connect_timeout=0.3")
    started = time.perf_counter()
    with pytest.raises(RetrievalUnavailable):
        SqlStore(backend)  # opening the store reads the schema version first
    assert time.perf_counter() - started < 1.0


def test_statements_may_outlast_the_connect_timeout_but_not_the_read_timeout(
    seekdb_server: SeekdbServer,
) -> None:
    backend = backend_for(seekdb_server.new_database_url() + "?connect_timeout=0.3&read_timeout=1")
    assert isinstance(backend, MysqlBackend)
    conn = backend.connect()
    backend.begin(conn, write=False)
    assert conn.execute("SELECT SLEEP(0.6)").fetchone() is not None  # twice connect_timeout: fine
    backend.commit(conn)

    backend.begin(conn, write=False)
    started = time.perf_counter()
    with pytest.raises(backend.errors):
        conn.execute("SELECT SLEEP(5)")
    assert time.perf_counter() - started < 2.0
    with pytest.raises(backend.errors):  # the connection that timed out is closed, never reused
        backend.rollback(conn)
