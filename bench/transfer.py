"""`python -m bench.transfer`: memory of moving one big Scope, over the API and offline.

    .venv/bin/python -m bench.transfer                       # Scopes of 10,000 and 100,000 entries
    .venv/bin/python -m bench.transfer --entries 20000 --entries 200000

For each size, a SQLite database with one Scope of that many Memory entries (`bench/datagen.py`
texts, about 200 bytes each on average), then:

- offline, the baseline: `powercontext export` and `powercontext import` on the database files
  (the server package's commands), each process's peak RSS;
- over the API: a `powercontext serve` process on the database; `powercontext --url ... export`,
  DELETE of the Scope, `powercontext --url ... import` of the file (the client's commands, in
  processes of their own). The server's VmRSS is sampled every 20 ms: its value before each step
  and its peak during it; each client process's peak RSS.

Memory is flat when the peaks do not grow with the Scope: compare the rows of the two sizes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.datagen import memory_text
from powercontext_api.models import RememberBatchRequest, ScopeCreateRequest
from powercontext_runtime import Settings, open_application

SCOPE = "bench:transfer"
BATCH = 1000


@dataclass
class Figures:
    entries: int
    file_mb: float
    offline_export_mb: float
    offline_import_mb: float
    server_idle_mb: float
    server_export_peak_mb: float
    server_import_peak_mb: float
    client_export_mb: float
    client_import_mb: float
    api_export_s: float
    api_import_s: float


def seed(url: str, entries: int) -> None:
    rng = random.Random(11)
    app = open_application(Settings(database_url=url))
    try:
        app.create_scope(ScopeCreateRequest(scope_id=SCOPE, title="Transfer bench"))
        for start in range(0, entries, BATCH):
            texts = [{"text": memory_text(rng)} for _ in range(min(BATCH, entries - start))]
            app.remember_batch(RememberBatchRequest.model_validate({"scope_id": SCOPE, "entries": texts}))
    finally:
        app.close()


def child_peak_mb(argv: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """(peak VmRSS in MB, seconds) of a command run to completion; it must succeed. Sampled, not
    `ru_maxrss`, which counts the bench's own pages the child had before it exec'd."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0.0
    while process.poll() is None:
        with contextlib.suppress(OSError, RuntimeError):  # it may end between poll and read
            peak = max(peak, rss_mb(process.pid))
        time.sleep(0.02)
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} failed: {process.stderr.read().decode() if process.stderr else ''}"
        )
    return peak, seconds


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


@contextlib.contextmanager
def sampled(pid: int) -> Iterator[list[float]]:
    """The process's VmRSS every 20 ms while the block runs."""
    samples: list[float] = [rss_mb(pid)]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            samples.append(rss_mb(pid))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        done.set()
        thread.join()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def server(data_dir: Path, env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "powercontext_server.cli",
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
        ],
        env={**env, "POWERCONTEXT_SERVER_LOG_LEVEL": "warning"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/health/ready", timeout=1):
                break
            time.sleep(0.1)
        yield process, url
    finally:
        process.terminate()
        process.wait(timeout=30)


def measure(entries: int, root: Path, env: dict[str, str]) -> Figures:
    source = root / f"source-{entries}"
    source.mkdir()
    url = f"sqlite:///{source / 'powercontext.sqlite3'}"
    print(f"seeding {entries} entries ...", file=sys.stderr, flush=True)
    seed(url, entries)
    python = sys.executable
    offline_file = root / f"offline-{entries}.jsonl"
    export_mb, _ = child_peak_mb(
        [
            python,
            "-m",
            "powercontext_server.cli",
            "export",
            SCOPE,
            "-o",
            str(offline_file),
            "--database-url",
            url,
        ],
        env,
    )
    target = f"sqlite:///{root / f'target-{entries}.sqlite3'}"
    import_mb, _ = child_peak_mb(
        [python, "-m", "powercontext_server.cli", "import", str(offline_file), "--database-url", target], env
    )
    api_file = root / f"api-{entries}.jsonl"
    with server(source, env) as (process, base):
        client = [python, "-m", "powercontext_client", "--url", base]
        idle = rss_mb(process.pid)
        with sampled(process.pid) as exporting:
            client_export_mb, export_s = child_peak_mb([*client, "export", SCOPE, "-o", str(api_file)], env)
        request = urllib.request.Request(f"{base}/v1/scopes/{SCOPE}", method="DELETE")
        with urllib.request.urlopen(request, timeout=600):
            pass
        with sampled(process.pid) as importing:
            client_import_mb, import_s = child_peak_mb([*client, "import", str(api_file)], env)
    return Figures(
        entries=entries,
        file_mb=round(api_file.stat().st_size / 1e6, 1),
        offline_export_mb=round(export_mb, 1),
        offline_import_mb=round(import_mb, 1),
        server_idle_mb=round(idle, 1),
        server_export_peak_mb=round(max(exporting), 1),
        server_import_peak_mb=round(max(importing), 1),
        client_export_mb=round(client_export_mb, 1),
        client_import_mb=round(client_import_mb, 1),
        api_export_s=round(export_s, 1),
        api_import_s=round(import_s, 1),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, action="append", help="Scope sizes (default 10000 and 100000)")
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-transfer-") as directory:
        for entries in args.entries or [10_000, 100_000]:
            rows.append(measure(entries, Path(directory), env))
    fields = list(Figures.__dataclass_fields__)
    print(" | ".join(fields))
    for row in rows:
        print(" | ".join(str(getattr(row, name)) for name in fields))
    return 0


if __name__ == "__main__":
    sys.exit(main())
