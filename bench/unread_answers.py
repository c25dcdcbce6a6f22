"""`python -m bench.unread_answers`: the server's memory while clients ask for large answers and never read.

    .venv/bin/python -m bench.unread_answers                  # 300 sockets, 3.2 MB entry list each
    .venv/bin/python -m bench.unread_answers --sockets 100 --send-timeout 5

A real `powercontext serve` on SQLite (`POWERCONTEXT_SERVER_SEND_TIMEOUT_S` set to `--send-timeout`)
and a Scope of 200 entries of 16,000 characters, so that its entry list is 3.2 MB. `--sockets`
sockets with a 4 KiB receive window each send the list request and never read, and stay open;
then as many again. Printed, for each wave: the server's VmRSS 3 s after the requests and after
the send deadline has passed, and how many of the connections the server still holds. (RSS
does not shrink when the answers are freed, as the allocator keeps the memory for reuse: what
shows the bound is that the second wave does not add to it.)
"""

from __future__ import annotations

import argparse
import json
import socket
import tempfile
import time
from pathlib import Path

from devtools.server_process import Client, ServerProcess

SCOPE = "project:unread"


def fill(port: int) -> bytes:
    """The Scope and its entries; returns the raw list request."""
    client = Client(port)
    client.post("/v1/scopes", json.dumps({"scope_id": SCOPE}).encode())
    for start in range(0, 200, 50):
        entries = [{"text": f"{i} " + "x" * 15_990} for i in range(start, start + 50)]
        status, _ = client.post(
            "/v1/memory/remember/batch", json.dumps({"scope_id": SCOPE, "entries": entries}).encode()
        )
        assert status == 200, status
    client.close()
    body = json.dumps({"scope_id": SCOPE, "limit": 200}).encode()
    head = b"POST /v1/memory/entries/list HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def server_connections(port: int) -> int:
    """Established TCP connections whose local end is the server's port (from /proc/net/tcp)."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        if state == "01" and int(local.split(":")[1], 16) == port:
            count += 1
    return count


def open_unread(port: int, request: bytes, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", port))
        sock.sendall(request)
        sockets.append(sock)
    return sockets


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sockets", type=int, default=300)
    parser.add_argument("--send-timeout", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        env = {
            "POWERCONTEXT_SERVER_SEND_TIMEOUT_S": str(args.send_timeout),
            "POWERCONTEXT_SERVER_MAX_BODY_BYTES": str(4 * 1024 * 1024),
        }
        server = ServerProcess(f"sqlite:///{Path(scratch) / 'u.sqlite3'}", Path(scratch) / "s.log", env)
        sockets: list[socket.socket] = []
        try:
            request = fill(server.port)
            print(f"RSS before: {server.status_kib('VmRSS') / 1024:.0f} MiB")
            # Two waves, the first wave's sockets kept open: does the second add as much again?
            for wave in (1, 2):
                sockets += open_unread(server.port, request, args.sockets)
                time.sleep(3)
                during = server.status_kib("VmRSS") / 1024
                time.sleep(args.send_timeout + 5)
                after = server.status_kib("VmRSS") / 1024
                open_ = server_connections(server.port)
                print(
                    f"wave {wave}: {args.sockets} more sockets asking for a 3.2 MB list, never reading: "
                    f"RSS {during:.0f} MiB after 3 s, {after:.0f} MiB after {args.send_timeout + 8} s; "
                    f"the server holds {open_} of the {len(sockets)} connections"
                )
        finally:
            for sock in sockets:
                sock.close()
            server.stop()


if __name__ == "__main__":
    main()
