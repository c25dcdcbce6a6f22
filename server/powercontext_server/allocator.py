"""Keep freed memory in the process, so ranking's large temporary arrays do not page-fault.

Ranking a Scope at 100k entries builds a few arrays of about a megabyte per query (postings
concatenated, scores). glibc serves allocations that large with fresh `mmap` pages and returns
them on `free`, so every query touches hundreds of new pages; in a virtual machine each first
touch is a costly page fault (measured here: about 1,500 per prepare at 100k entries per Scope,
a third of its time). Raising the mmap threshold to its maximum and the trim threshold well above
ranking's working set makes those arrays come from, and return to, the heap.
"""

from __future__ import annotations

import ctypes
import ctypes.util

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 2**20  # glibc's largest on 64-bit
TRIM_THRESHOLD = 128 * 2**20


def keep_freed_memory() -> bool:
    """Tune glibc's allocator for this process; False where the C library has no `mallopt`."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
