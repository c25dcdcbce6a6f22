"""The server under test as a real process: `powercontext serve`, with CPU and memory from /proc."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
REPO = Path(__file__).resolve().parents[1]
# The repository's own venv, else the one running this (a worktree that shares another's venv).
_OWN = REPO / ".venv" / "bin" / "powercontext"
POWERCONTEXT = _OWN if _OWN.exists() else Path(sys.executable).with_name("powercontext")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """`powercontext serve --port P` on 127.0.0.1 with the given database URL, default log level.

    `kill()` ends it as a crash would (SIGKILL to it and every worker), and `restart()` starts it
    again on the same port with the same environment."""

    def __init__(
        self,
        database_url: str,
        log_path: Path,
        extra_env: dict[str, str] | None = None,
        port: int | None = None,
    ) -> None:
        self.port = port or free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_SERVER_")}
        env["POWERCONTEXT_SERVER_DATABASE_URL"] = database_url
        env["POWERCONTEXT_SERVER_DATA_DIR"] = str(log_path.parent)
        env.update(extra_env or {})
        self._env = env
        self._log = log_path.open("ab")
        self.process = self._launch()
        self.pid = self.process.pid
        self._wait_ready()

    def _launch(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [str(POWERCONTEXT), "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            env=self._env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def _wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._log.flush()
                tail = Path(self._log.name).read_text(errors="replace").splitlines()[-15:]
                raise RuntimeError(f"server exited with {self.process.returncode}:\n" + "\n".join(tail))
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/health/ready")
                if conn.getresponse().status == 200:
                    conn.close()
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("server did not become ready")

    def processes(self) -> list[int]:
        """The server's pid and its descendants' (the worker processes, when there are several)."""
        found, pending = [], [self.pid]
        while pending:
            pid = pending.pop()
            found.append(pid)
            for task in Path(f"/proc/{pid}/task").glob("*/children"):
                try:
                    children = task.read_text()
                except FileNotFoundError:  # the thread ended between the listing and the read
                    continue
                pending.extend(int(child) for child in children.split())
        return found

    def cpu_seconds(self) -> float:
        """User plus system CPU of every thread of every server process so far (/proc/<pid>/stat)."""
        total = 0
        for pid in self.processes():
            raw = Path(f"/proc/{pid}/stat").read_text()
            fields = raw[raw.rindex(")") + 2 :].split()
            total += int(fields[11]) + int(fields[12])
        return total / CLOCK_TICKS

    def status_kib(self, key: str) -> int:
        """A /proc status figure (such as VmHWM) summed over the server's processes."""
        total = 0
        for pid in self.processes():
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith(key + ":"):
                    total += int(line.split()[1])
        return total

    def kill(self) -> None:
        """SIGKILL the server and its workers at once, as a crash: no request is finished and
        nothing is closed in order. Returns when none of them runs any more."""
        pids = self.processes() if self.process.poll() is None else []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait(timeout=20)
        deadline = time.monotonic() + 20
        for pid in pids[1:]:  # workers, reparented once the server died: wait until they are gone
            while _alive(pid):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"server worker {pid} survived SIGKILL")
                time.sleep(0.02)

    def restart(self) -> None:
        """Start the server again (after `kill()` or `stop()`) on the same port, database and
        environment, and wait until it is ready."""
        if self.process.poll() is None:
            raise RuntimeError("the server is still running")
        if self._log.closed:
            self._log = Path(self._log.name).open("ab")  # noqa: SIM115 (closed by stop())
        self.process = self._launch()
        self.pid = self.process.pid
        self._wait_ready()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie, dead but not yet reaped, does not)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return raw[raw.rindex(")") + 2] != "Z"


class Client:
    """One keep-alive HTTP/1.1 connection (stdlib), for sequential, count-bounded latency runs."""

    def __init__(self, port: int) -> None:
        self._conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        return self.request("POST", path, body, {"content-type": "application/json"})

    def request(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        self._conn.request(method, path, body=body, headers=headers)
        response = self._conn.getresponse()
        return response.status, response.read()

    def get(self, path: str) -> tuple[int, bytes]:
        self._conn.request("GET", path)
        response = self._conn.getresponse()
        return response.status, response.read()

    def close(self) -> None:
        self._conn.close()
