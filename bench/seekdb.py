"""OceanBase for the benchmark without installing one: the seekdb server that the `pylibseekdb`
wheel ships, started on a free loopback port in a scratch directory and stopped by pid.

`BENCH_OCEANBASE_URL=seekdb` selects it; any other value is used as the database URL template.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

from .server import free_port

READY_TIMEOUT_S = 120


def create_database(url: str) -> None:
    """CREATE DATABASE IF NOT EXISTS for the database a mysql+pymysql:// URL names."""
    import pymysql

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not name.replace("_", "").isalnum():
        raise ValueError(f"unexpected database name {name!r}")
    conn = pymysql.connect(
        host=parts.hostname,
        port=parts.port or 2881,
        user=parts.username or "root",
        password=parts.password or "",
    )
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE IF NOT EXISTS {name}")
    finally:
        conn.close()


class Seekdb:
    def __init__(self, base_dir: Path) -> None:
        import pylibseekdb  # type: ignore[import-untyped]

        base_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self._log = (base_dir / "seekdb.out").open("wb")
        binary = Path(pylibseekdb.__file__).resolve().parent / "seekdb"
        self.process = subprocess.Popen(
            [
                str(binary),
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
            ],
            cwd=base_dir,
            env={**os.environ, "TELEMETRY_ENABLED": "false"},
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()

    @property
    def url_template(self) -> str:
        return f"mysql+pymysql://root@127.0.0.1:{self.port}/pcbench_{{n}}"

    def _wait_ready(self) -> None:
        import pymysql

        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"seekdb exited with {self.process.returncode}")
            try:
                conn = pymysql.connect(host="127.0.0.1", port=self.port, user="root", password="")
                conn.close()
                return
            except pymysql.err.Error:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"seekdb did not answer within {READY_TIMEOUT_S} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._log.close()
