"""The OceanBase seekdb server that ships in the `pylibseekdb` wheel, started for the tests and the benchmark.

It runs as a child process on a free loopback port with its own base directory and is stopped by
pid. A server that does not come up is a test failure, never a skip.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pymysql

READY_TIMEOUT_S = 90


def seekdb_binary() -> Path:
    import pylibseekdb

    return Path(pylibseekdb.__file__).resolve().parent / "seekdb"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class SeekdbServer:
    def __init__(self, base_dir: Path) -> None:
        self.base_dir = base_dir
        self.port = free_port()
        self._log = (base_dir / "seekdb.out").open("wb")
        # Note: seekdb listens on every interface whatever it is asked; tests connect to 127.0.0.1 only.
        self.process = subprocess.Popen(
            [
                str(seekdb_binary()),
                "--nodaemon",
                "--port",
                str(self.port),
                "--base-dir",
                str(base_dir),
                "--log-level",
                "WARN",
                "--variable",
                "time_zone=+00:00",
                "--parameter",
                "memory_budget=2G",
                "--parameter",
                "log_disk_size=2G",
                "--parameter",
                "_lcl_op_interval=30ms",
            ],
            cwd=base_dir,
            env={**os.environ, "TELEMETRY_ENABLED": "false"},
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()

    def _connect(self) -> pymysql.connections.Connection:  # type: ignore[type-arg]
        return pymysql.connect(host="127.0.0.1", port=self.port, user="root", password="", autocommit=True)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"seekdb exited with {self.process.returncode}; see {self.base_dir / 'seekdb.out'}"
                )
            try:
                with self._connect() as conn, conn.cursor() as cursor:
                    cursor.execute("SELECT 1")
                    return
            except pymysql.err.Error:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"seekdb did not answer within {READY_TIMEOUT_S} s")

    def new_database_url(self) -> str:
        """A fresh, empty database on this server, as a POWERCONTEXT_SERVER_DATABASE_URL."""
        name = "pc_" + uuid.uuid4().hex[:12]
        with self._connect() as conn, conn.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {name}")
        return f"mysql+pymysql://root@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._log.close()
