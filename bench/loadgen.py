"""wrk as the separate load generator: concurrent throughput and single-client ingest."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "wrk" / "requests.lua"


@dataclass(frozen=True)
class WrkResult:
    requests: int
    seconds: float
    errors: int
    p50_ms: float
    p99_ms: float

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def wrk_available() -> bool:
    return shutil.which("wrk") is not None


def wrk_version() -> str:
    if not wrk_available():
        return "not installed"
    out = subprocess.run(["wrk", "--version"], capture_output=True, text=True, check=False)
    return (out.stdout or out.stderr).splitlines()[0].split(" Copyright")[0].strip()


def write_bodies(path: Path, bodies: Sequence[bytes]) -> Path:
    path.write_bytes(b"\n".join(bodies) + b"\n")
    return path


def run_wrk(
    port: int,
    method: str,
    path: str,
    bodies_file: Path | None,
    *,
    connections: int,
    seconds: int,
    threads: int | None = None,
) -> WrkResult:
    """One bounded wrk run against 127.0.0.1 (it stops by itself after `seconds`)."""
    threads = threads or min(2, connections)
    args = [
        "wrk",
        f"-t{threads}",
        f"-c{connections}",
        f"-d{seconds}s",
        "--timeout",
        "60s",
        "-s",
        str(SCRIPT),
        f"http://127.0.0.1:{port}",
        "--",
        method,
        path,
    ]
    if bodies_file is not None:
        args.append(str(bodies_file))
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=seconds + 120)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("WRK_JSON "))
    data = json.loads(line[len("WRK_JSON ") :])
    errors = sum(
        data[k] for k in ("connect_errors", "read_errors", "write_errors", "timeouts", "status_errors")
    )
    return WrkResult(
        requests=int(data["requests"]),
        seconds=data["duration_us"] / 1e6,
        errors=int(errors),
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
    )
