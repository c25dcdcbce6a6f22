"""Tune glibc's allocator at start: large temporary arrays stay in the heap; two arenas only.

Thresholds. Ranking a Scope at 100k entries builds a few arrays of about a megabyte per query
(postings concatenated, scores). glibc serves allocations that large with fresh `mmap` pages and
returns them on `free` (or trims them off the heap's top), so every query touches hundreds of new
pages; in a virtual machine each first touch is a costly page fault (measured in process: about
1,500 per prepare at 100k entries per Scope, a third of its time; 7.8 -> 3.1 ms once tuned).
Raising the mmap threshold to its maximum and the trim threshold well above ranking's working set
makes those arrays come from, and return to, the heap. tests/server/test_allocator.py's probe:
1,418 page faults per ranking-sized query with glibc's defaults, 0 tuned. In the server, whose
requests run in pool threads, glibc's own adaptive threshold got there too once warm
(`make bench-memory`, 100k entries, 5 interleaved rounds: 0.0 faults per prepare either way, p50
6.5 ms tuned, 7.1 ms with glibc's defaults, within the machine's noise).

Arenas. glibc gives each thread that allocates an arena of its own, up to 8 per core, and keeps
what a thread frees in that arena for its next allocations. The server runs requests on a pool
of threads, so it held an arena per thread (9 for 8 threads: the test above), each with free
memory of its own. Two suffice: Python runs one thread at a time, and only SQLite and numpy
allocate outside the GIL. With 10k entries in each of 4 Scopes, 4 clients and 40 s windows of
prepares, searches and remembers (docs/benchmarks.md, Memory), RSS after windows 1 and 4 and
glibc's arenas besides the main heap:

| allocator | RSS, MiB | arenas, MiB | prepares/s, 4 clients (interleaved) |
| --- | --- | --- | --- |
| glibc's defaults | 120 -> 126 | 28 -> 32 | 283 |
| mmap 32 MiB, trim 128 MiB, arenas as glibc likes (before) | 122 -> 127 | 30 -> 33 | 285 |
| the same with 2 arenas (now) | 115 -> 120 | 14 -> 16 | 283 |

The main heap stayed between 17 and 36 MiB, so the 128 MiB trim threshold never held memory back
there. No allocator setting made RSS grow (issue 14): that was the search mirror keeping every
term ever queried, and a database connection left open by every thread the pool retired.

`POWERCONTEXT_SERVER_MALLOC=default` leaves glibc alone (its own `MALLOC_*` variables then apply),
for measuring; unset, empty or `tuned`, the settings above apply.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Mapping

from powercontext_runtime import ConfigurationError

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
MMAP_THRESHOLD = 32 * 2**20  # glibc's largest on 64-bit
TRIM_THRESHOLD = 128 * 2**20
ARENA_MAX = 2
MODES = ("tuned", "default")


def mode(env: Mapping[str, str] | None = None) -> str:
    """`POWERCONTEXT_SERVER_MALLOC`: `tuned` (unset or empty) or `default` (glibc's own settings)."""
    raw = (os.environ if env is None else env).get("POWERCONTEXT_SERVER_MALLOC") or "tuned"
    if raw not in MODES:
        raise ConfigurationError("POWERCONTEXT_SERVER_MALLOC must be tuned or default.")
    return raw


def keep_freed_memory() -> bool:
    """Tune glibc's allocator for this process; False where it is left alone (a C library
    without `mallopt`, or POWERCONTEXT_SERVER_MALLOC=default)."""
    if mode() == "default":
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    settings = (
        (_M_MMAP_THRESHOLD, MMAP_THRESHOLD),
        (_M_TRIM_THRESHOLD, TRIM_THRESHOLD),
        (_M_ARENA_MAX, ARENA_MAX),
    )
    return all([bool(mallopt(param, value)) for param, value in settings])
