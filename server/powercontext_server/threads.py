"""Which worker threads run an operation's Runtime call.

Every call runs off the event loop, in anyio's worker threads, so the loop keeps reading requests,
keeping deadlines and answering health probes while the Runtime works. Most calls share anyio's
default pool (40 threads at once). Reads on an embedded SQLite database do not: one runs at a time
(`POWERCONTEXT_SERVER_READ_THREADS` to change it), and the others wait their turn on the event loop,
holding no thread.

Why: such a read is CPU work under the GIL, and Python 3.11's sqlite3 module lets go of the GIL
around every statement, row and column it reads. With eight reads in eight threads, each letting go
is a hand-over to another thread and back: about 120 context switches per `assembly: {}` prepare
against 8 with one client (10k entries, `perf stat`), and 1.7 times the CPU per prepare in issue
34's measurement (bench/concurrency_tax.py measures both).
With one read thread they stay as few as with one client (with two, the two already traded the GIL
about 30 times per legacy prepare), and nothing is lost: one thread runs Python at a time anyway,
and the event loop's thread reads and writes the sockets meanwhile.

Reads that wait on a network (OceanBase, or the embedding endpoint of Memory recall) keep the
shared pool, where waiting costs no CPU and a narrow pool would queue requests behind each other's
round trips. Writes keep it too: the Runtime lets one write at a time in itself, and a write waiting
for another process's must not hold up reads. So do streams (an import waits on its client).
"""

from __future__ import annotations

from typing import Any

from anyio import CapacityLimiter

from powercontext_api.operations import Operation

from .settings import HttpSettings

# Reads that only read: their calls never wait on anything but the database (and a streamed
# body's client, which no read has).
READ_ACCESS = "scope.read"
SQLITE_READ_THREADS = 1


def read_threads(http: HttpSettings, reads_in_process: bool) -> int | None:
    """How many reads run at once, or None for as many as the shared pool allows. A database read
    in process (the backend's `reads_in_process`: embedded SQLite) is CPU work under the GIL."""
    if http.read_threads is not None:
        return http.read_threads
    if reads_in_process and http.embedding is None:
        return SQLITE_READ_THREADS
    return None


def limiter_for(operation: Operation[Any], reads: CapacityLimiter | None) -> CapacityLimiter | None:
    """The limiter an operation's calls run under (None: anyio's default one)."""
    return reads if operation.access == READ_ACCESS else None
