"""The server keeps freed memory (allocator.py): large temporary arrays, as ranking makes at 100k
entries per Scope, stop page-faulting once the process has tuned glibc's allocator."""

from __future__ import annotations

import subprocess
import sys

import pytest

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
