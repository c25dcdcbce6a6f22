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
STOP_TIMEOUT_S = 10


def seekdb_binary() -> Path:
    import pylibseekdb  # type: ignore[import-untyped]

    return Path(pylibseekdb.__file__).resolve().parent / "seekdb"


def _all_stopped(pid: int) -> bool:
    """Whether every thread of the process is stopped by a signal (state T in /proc)."""
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):  # the thread just ended
            continue
        if state != "T":
            return False
    return True


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class SeekdbServer:
    """One seekdb process on `port` over `base_dir`. It can be paused (SIGSTOP: sockets stay open and
    nothing answers), killed (SIGKILL) and started again on the same port and base directory, where
    it recovers its data from the redo log."""

    def __init__(self, base_dir: Path, port: int | None = None) -> None:
        self.base_dir = base_dir
        self.port = port or free_port()
        self._log = (base_dir / "seekdb.out").open("ab")
        self.process = self._launch()
        self._wait_ready()

    def _launch(self) -> subprocess.Popen[bytes]:
        # Note: seekdb listens on every interface whatever it is asked; tests connect to 127.0.0.1 only.
        return subprocess.Popen(
            [
                str(seekdb_binary()),
                "--nodaemon",
                "--port",
                str(self.port),
                "--base-dir",
                str(self.base_dir),
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
            cwd=self.base_dir,
            env={**os.environ, "TELEMETRY_ENABLED": "false"},
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def _connect(self) -> pymysql.connections.Connection:
        return pymysql.connect(
            host="127.0.0.1",
            port=self.port,
            user="root",
            password="",
            autocommit=True,
            # Bounded, so that waiting for a server that accepts connections but does not answer yet
            # polls again instead of hanging.
            connect_timeout=5,
            read_timeout=30,
            write_timeout=30,
        )

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

    def copy_database_url(self, source_url: str) -> str:
        """A new database holding the tables (as `CREATE TABLE ... LIKE`: columns, keys, options)
        of the migrated database `source_url` names, and its schema_migrations rows (a migration
        writes no others), as a POWERCONTEXT_SERVER_DATABASE_URL. It takes about two thirds of
        the time of migrating an empty database."""
        source = source_url.rsplit("/", 1)[1]
        url = self.new_database_url()
        name = url.rsplit("/", 1)[1]
        with self._connect() as conn, conn.cursor() as cursor:
            cursor.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (source,)
            )
            for (table,) in cursor.fetchall():
                cursor.execute(f"CREATE TABLE {name}.{table} LIKE {source}.{table}")
            cursor.execute(f"INSERT INTO {name}.schema_migrations SELECT * FROM {source}.schema_migrations")
        return url

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def pause(self) -> None:
        """SIGSTOP: the server hangs. Its sockets stay open, so clients connect and wait for answers.
        Returns once every thread has stopped: the signal is sent at once, but each thread stops
        only when it next runs, and on a loaded machine seekdb answered requests sent after it."""
        self.process.send_signal(signal.SIGSTOP)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while not _all_stopped(self.process.pid):
            if time.monotonic() >= deadline:
                raise RuntimeError(f"seekdb did not stop within {STOP_TIMEOUT_S} s of SIGSTOP")
            time.sleep(0.005)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL, as a crash: nothing is flushed or closed in order. `restart()` brings it back."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def restart(self) -> None:
        """Stop the server if it runs (SIGTERM), then start it again on the same port and base
        directory and wait until it answers; it keeps the databases and rows it had."""
        if self.process.poll() is None:
            self.resume()  # a paused process would not act on SIGTERM
            self._terminate()
        self.process = self._launch()
        self._wait_ready()

    def _terminate(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.resume()
            self._terminate()
        self._log.close()
