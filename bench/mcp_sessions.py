"""`python -m bench.mcp_sessions`: what a flood of MCP `initialize` requests does to `powercontext mcp --http`.

    .venv/bin/python -m bench.mcp_sessions                 # 10,000 sessions opened and left open
    .venv/bin/python -m bench.mcp_sessions --sessions 2000

Starts `powercontext mcp --http 0` (it needs no PowerContext server to open sessions), sends
`--sessions` `initialize` requests over one keep-alive connection and never closes one, then asks
as a new client would (another `initialize`). Printed: the process's VmRSS before and after, the
time the flood took, how many of the flood's sessions still answer (a sample of the last 200,
by `ping`) and the newcomer's status (200, or 503 "Too many open sessions" with the SDK's limits).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

POWERCONTEXT = Path(sys.executable).with_name("powercontext")
ADDRESS = re.compile(r"streamable HTTP on (http://\S+/mcp)")
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
VERSION = "2025-06-18"
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "b", "version": "0"},
        },
    }
).encode()
PING = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    sessions = parser.parse_args(argv).sessions
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "mcp.log"
        with log.open("wb") as stderr:
            process = subprocess.Popen(
                [POWERCONTEXT, "--url", "http://127.0.0.1:9", "mcp", "--http", "0"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        try:
            while (found := ADDRESS.search(log.read_text())) is None:
                if process.poll() is not None:
                    raise SystemExit(log.read_text())
                time.sleep(0.05)
            url = found.group(1)
            before = rss_mib(process.pid)
            started = time.perf_counter()
            ids: list[str] = []
            with httpx.Client(timeout=60) as http:
                for _ in range(sessions):
                    response = http.post(url, content=INITIALIZE, headers=HEADERS)
                    if "mcp-session-id" in response.headers:
                        ids.append(response.headers["mcp-session-id"])
                seconds = time.perf_counter() - started
                after = rss_mib(process.pid)
                sample = ids[-200:]
                headers = {**HEADERS, "mcp-protocol-version": VERSION}
                answering = sum(
                    http.post(url, content=PING, headers={**headers, "mcp-session-id": s}).status_code == 200
                    for s in sample
                )
                newcomer = http.post(url, content=INITIALIZE, headers=HEADERS).status_code
            print(
                f"{sessions} initialize in {seconds:.1f} s; RSS {before:.0f} -> {after:.0f} MiB; "
                f"{answering} of the last {len(sample)} sessions still answer; newcomer: {newcomer}"
            )
        finally:
            process.terminate()
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
