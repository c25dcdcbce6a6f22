"""A long index merge lets another process's writes in between its chunks (SQLite).

Two stores on one database file stand for two server processes. While one carries a merge of
eight CJK runs through, a chunk per write transaction, the other remembers entries. SQLite's busy
handler retries a waiting write only now and then, and the merger began its next chunk at once, so
the other store's first write waited for the whole merge: at a million entries that outlasted the
10 s busy timeout and the remember failed with a 503.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest

from powercontext_runtime import backend_for
from powercontext_runtime.models import Scope
from powercontext_runtime.search import IndexMerger, _limits
from powercontext_runtime.store import memory, scopes
from powercontext_runtime.store.sql_store import SqlStore


def cjk(rng: random.Random, chars: int) -> str:
    return "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(chars))


def test_writes_of_another_process_complete_while_a_merge_is_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    monkeypatch.setattr(_limits, "DEFER_DOCUMENTS", 2)
    monkeypatch.setattr(_limits, "MERGE_DOCUMENTS", 128)
    monkeypatch.setattr(IndexMerger, "nudge", lambda self: None)  # merges only when the test says
    merging = SqlStore(backend_for(url))
    merging.run(scopes.create_scope, Scope("s:merged", "", "", (), 1))
    merging.run(scopes.create_scope, Scope("s:other", "", "", (), 1))
    rng = random.Random(37)
    fanout = _limits.RUN_FANOUT
    monkeypatch.setattr(_limits, "RUN_FANOUT", fanout + 1)  # the runs wait for the test
    for _ in range(fanout):
        merging.run(
            memory.remember_batch, "s:merged", [(cjk(rng, 200), "fact", None) for _ in range(128)], None
        )
        merging.merge_index()
    monkeypatch.setattr(_limits, "RUN_FANOUT", fanout)
    writing = SqlStore(backend_for(url))
    merged = threading.Event()
    chunks: list[int] = []
    thread = threading.Thread(target=lambda: (chunks.append(merging.merge_index()), merged.set()))
    thread.start()
    done_during_merge = 0
    n = 0
    while not merged.is_set():
        writing.run(memory.remember_batch, "s:other", [(f"note {n}", "fact", None)], None)
        n += 1
        done_during_merge += not merged.is_set()
        time.sleep(0.01)
    thread.join()
    assert chunks[0] > 4  # the merge took several transactions
    assert done_during_merge >= 5, (done_during_merge, chunks)
    writing.close()
    merging.close()
