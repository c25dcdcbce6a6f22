"""The server keeps freed memory (allocator.py): large temporary arrays, as ranking makes at 100k
entries per Scope, stop page-faulting once the process has tuned glibc's allocator; and its threads
share two arenas instead of holding one each."""

from __future__ import annotations

import subprocess
import sys

import pytest

from powercontext_runtime import ConfigurationError
from powercontext_server.allocator import keep_freed_memory, mode

PROBE = """
import resource, sys
import numpy as np
if sys.argv[1] == "tuned":
    from powercontext_server.allocator import keep_freed_memory
    assert keep_freed_memory()
parts = [np.random.default_rng(1).random(70_000) for _ in range(4)]  # 4 x 560 KB
def query():
    scores = np.bincount(np.arange(280_000) % 100_000, weights=np.concatenate(parts), minlength=100_000)
    return float(scores.max())
for _ in range(5):
    query()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    query()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 50)
"""


def faults_per_query(mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
    return float(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator is Linux's")
def test_tuned_process_reuses_freed_memory_instead_of_faulting_new_pages() -> None:
    assert faults_per_query("tuned") < 5  # about 700 pages of arrays per query, served from the heap


ARENAS = """
import ctypes, sys, threading
if sys.argv[1] == "tuned":
    from powercontext_server.allocator import keep_freed_memory
    assert keep_freed_memory()
together = threading.Barrier(8)
def work():
    blocks = [bytearray(100_000) for _ in range(4)]  # malloc'd in this thread's arena
    together.wait()  # all 8 threads hold theirs at once
threads = [threading.Thread(target=work) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
ctypes.CDLL(None).malloc_stats()  # to stderr: "Arena 0:", "Arena 1:", ...
"""


def arenas(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", ARENAS, mode], capture_output=True, text=True, check=True)
    return sum(1 for line in out.stderr.splitlines() if line.startswith("Arena "))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator is Linux's")
def test_tuned_process_keeps_two_arenas_however_many_threads_allocate() -> None:
    assert arenas("default") > 2  # glibc: an arena per thread, up to 8 per core
    assert arenas("tuned") == 2


def test_malloc_setting_leaves_glibc_alone_or_refuses_a_bad_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERCONTEXT_SERVER_MALLOC", "default")
    assert keep_freed_memory() is False  # nothing tuned: glibc's defaults and MALLOC_* variables
    monkeypatch.setenv("POWERCONTEXT_SERVER_MALLOC", "off")
    with pytest.raises(ConfigurationError, match="POWERCONTEXT_SERVER_MALLOC"):
        keep_freed_memory()
    assert mode({}) == mode({"POWERCONTEXT_SERVER_MALLOC": ""}) == "tuned"
