"""What search runs inside the store's transactions: ranked reads under the mirror's lock, each
Scope's share of a merged pool, and the index's due merges a chunk per write transaction."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager

from . import _doclists, _merge
from ._conn import Conn
from ._merger import WriterGate
from ._mirror import SearchMirror
from ._reads import IndexStats, ranked

# The store's transaction: `transaction(write)` yields a connection inside one, commits on exit.
Transaction = Callable[[bool], AbstractContextManager[Conn]]
Ranked = list[tuple[int, float]]  # (doc_key, score), best first
# While merges keep the merger busy (a long ingest makes one due after another), it still brings
# the document lists that are due up to date this often: a list left behind keeps the log from
# being pruned, and a fresh reader then replays every row since (a second at a million entries).
RELIST_EVERY_S = 1.0


@contextmanager
def ranked_reads(mirror: SearchMirror, transaction: Transaction) -> Iterator[tuple[Conn, Callable[[], None]]]:
    """A read transaction under the search mirror's lock, and a call that releases the lock early
    once ranking is done (the rest of the body reads the transaction only). Begun after the lock,
    the transaction sees every change the mirror has replayed; inside the store's `reading()` it
    may be older, which `ranked` allows for."""
    lock = mirror.lock
    lock.acquire()
    held = [True]

    def release() -> None:
        if held[0]:
            held[0] = False
            lock.release()

    try:
        with transaction(False) as conn:
            yield conn, release
    finally:
        release()


def ranked_per_scope(
    conn: Conn,
    mirror: SearchMirror,
    scope_keys: Sequence[int | None],
    family: str,
    terms: Sequence[str],
    limit: int,
    merge_cap: int | None,
    excluded: Mapping[int, Collection[int]] | None = None,
    stats: IndexStats | None = None,
) -> list[Ranked]:
    """Each Scope's ranked `doc_key`s with their scores, in `scope_keys` order (None: no such
    Scope, no hits), without its `excluded` documents. With `merge_cap`, each list is cut to its
    share of the pool that interleaving them round-robin, capped at `merge_cap`, would take: the
    merge is planned here once, and the caller reads (and interleaves) no hit past it. `stats`:
    as `ranked` takes them."""
    known = [key for key in scope_keys if key is not None]
    found = ranked(conn, mirror, known, family, terms, limit, excluded, stats)
    lists = [[] if key is None else found[key] for key in scope_keys]
    if merge_cap is None:
        return lists
    takes = merge_takes([len(keys) for keys in lists], merge_cap)
    return [keys[:take] for keys, take in zip(lists, takes, strict=True)]


def merge_takes(lengths: Sequence[int], cap: int) -> list[int]:
    """How many items of each list a round-robin interleave (first list first, each list in its
    order) takes before it holds `cap` items."""
    takes = [0] * len(lengths)
    remaining = cap
    for depth in range(max(lengths, default=0)):
        for i, length in enumerate(lengths):
            if remaining == 0:
                return takes
            if depth < length:
                takes[i] += 1
                remaining -= 1
    return takes


def merge_due(
    transaction: Transaction,
    gate: WriterGate,
    stopping: Callable[[], bool],
    pause_max_s: float = 0.0,
    pause: Callable[[float], None] = time.sleep,
) -> int:
    """Carry every due or unfinished index merge through, a chunk per write transaction, until
    none is left or `stopping()`, then the document lists due (and every RELIST_EVERY_S in
    between); the number of chunks merged. Each chunk waits for the writes queueing at `gate`
    first, and leaves the write lock free after it for as long as it held it, up to `pause_max_s`
    (the backend's `merge_pause_max_s`: other processes' writers' turn), by calling `pause` with
    the seconds."""
    with transaction(False) as conn:
        families = _merge.due(conn)
    steps, cache = 0, _merge.LoggedCache()
    relisted = time.monotonic()
    for scope_key, family in families:
        while not stopping():
            gate.wait_clear()  # requests' writes go first
            began = time.monotonic()
            with transaction(True) as conn:
                if not _merge.step(conn, scope_key, family, cache):
                    break
            steps += 1
            if pause_max_s > 0:
                pause(min(pause_max_s, time.monotonic() - began))
            if time.monotonic() - relisted >= RELIST_EVERY_S:
                _relist_due(transaction, gate, stopping)
                relisted = time.monotonic()
    _relist_due(transaction, gate, stopping)
    return steps


def _relist_due(transaction: Transaction, gate: WriterGate, stopping: Callable[[], bool]) -> None:
    """Bring the document lists that are due up to date (`_doclists.py`), a family per write
    transaction, after the merges (a fresh mirror then reads a few rows instead of a row per
    document)."""
    with transaction(False) as conn:
        families = _doclists.due(conn)
    for scope_key, family in families:
        if stopping():
            return
        gate.wait_clear()
        with transaction(True) as conn:
            _doclists.relist(conn, scope_key, family)
