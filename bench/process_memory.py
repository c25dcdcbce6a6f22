"""What a process holds, read from /proc: resident memory by kind (from smaps), its open SQLite
connections and its minor page faults (bench/memory.py samples the server with these)."""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

MIB = 2**20
# glibc's per-thread arenas live in heaps of HEAP_MAX_SIZE (64 MiB on 64-bit), aligned to it.
ARENA_HEAP = 64 * MIB
_MAPPING = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ (\d+)\s*(.*)$")


@dataclass
class Region:
    start: int
    end: int
    perms: str
    name: str  # "" for anonymous memory, "file" for a file's pages, else "[heap]", "[stack]", ...
    rss_kib: int = 0


def regions(pid: int) -> list[Region]:
    found: list[Region] = []
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        match = _MAPPING.match(line)
        if match:
            start, end, perms, inode, name = match.groups()
            found.append(Region(int(start, 16), int(end, 16), perms, "file" if inode != "0" else name))
        elif line.startswith("Rss:") and found:
            found[-1].rss_kib = int(line.split()[1])
    return found


def memory_breakdown(pid: int) -> dict[str, float]:
    """The server's resident memory in MiB by kind: glibc's main heap, its other arenas (each a
    64 MiB-aligned reservation, partly mapped), thread stacks, the rest of the anonymous memory
    (Python's object arenas, blocks above the mmap threshold), and files (code, libraries)."""
    found = regions(pid)
    out = {"heap": 0.0, "arenas": 0.0, "stacks": 0.0, "other_anon": 0.0, "files": 0.0}
    for i, region in enumerate(found):
        after = found[i + 1] if i + 1 < len(found) else None
        before = found[i - 1] if i else None
        if region.name == "[heap]":
            kind = "heap"
        elif region.name == "file":
            kind = "files"
        elif region.name:
            kind = "other_anon"  # [stack], [vvar], [vdso]
        elif region.start % ARENA_HEAP == 0 and (
            region.end - region.start == ARENA_HEAP
            or (after is not None and after.start == region.end and after.perms == "---p")
        ):
            kind = "arenas"  # the used part of an arena's heap, the reserved rest follows
        elif before is not None and before.end == region.start and before.perms == "---p":
            kind = "stacks"  # above its guard page
        else:
            kind = "other_anon"
        out[kind] += region.rss_kib / 1024
    return {key: round(value, 1) for key, value in out.items()}


def sqlite_connections(pid: int) -> int:
    """Open file descriptors on SQLite database files: one per connection."""
    count = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            if os.readlink(fd).endswith(".sqlite3"):
                count += 1
    return count


def minor_faults(pid: int) -> int:
    raw = Path(f"/proc/{pid}/stat").read_text()
    return int(raw[raw.rindex(")") + 2 :].split()[7])
