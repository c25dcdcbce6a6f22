"""Merges of the full-text index (deferred writes and runs into runs), a range of terms per transaction.

Deferred writes (their postings wait in their log rows) merge into a run once they hold
MERGE_DOCUMENTS documents, and RUN_FANOUT runs of one size class merge into one. A merge used to
read every posting of its sources at once, in the write that crossed the threshold: CJK text,
whose character pairs make a vocabulary of millions, took gigabytes and minutes there. Now a merge
is begun by `step` on the store's merger thread and carried on by the next calls, each in a
transaction of its own that takes the next terms of every source in term order, at most
CHUNK_ROWS rows (and about CHUNK_POSTINGS postings) of them all, and writes them merged under the
target run, deleting them from the source runs. What a merge holds at once is that chunk (and the packed log rows of the deferred
writes it merges, each no larger than the request that wrote it); each posting is read and
written about once, so its time is linear in the postings merged.

Every transaction leaves the index exact, so readers never wait for a merge and a crash loses
nothing: `search_merges` holds the last term merged (`merged_through`) and `search_merge_sources`
the sources. A term up to `merged_through` has its postings in the target run; a later one in its
sources. The target and the source runs stay listed in `search_run_sizes` until the last chunk,
and readers skip a deferred source's terms up to `merged_through` (`_reads._merge_progress`).
Unindexing a document of a source takes it out of the target's rows too (`_writes._merge_target`);
a deferred write's log row keeps the postings of documents unindexed since, so each chunk drops
those.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _limits, _log, _postings, _writes
from ._conn import Conn, marks

# Rows read from all sources together per transaction: some 16 MiB of Python objects and arrays,
# and a write lock held for some tens of milliseconds.
CHUNK_ROWS = 16_384
# And at most about this many postings (the chunk's first term may hold more alone): a few MiB of
# arrays, and no numpy call long enough to keep the event loop from the GIL for long.
CHUNK_POSTINGS = 131_072
_RUN = -1  # search_merge_sources.generation of a run (a deferred write's is its log generation)


@dataclass(frozen=True, slots=True)
class MergeState:
    target: int
    merged_through: str  # the last term merged, "" before the first chunk
    runs: list[int]  # source runs, by segment
    deferred: list[tuple[int, int]]  # source deferred writes: (log generation, segment)


def due(conn: Conn) -> list[tuple[int, str]]:
    """The (Scope, family) pairs with a merge under way or due."""
    found = {(int(k), str(f)) for k, f in conn.execute("SELECT scope_key, family FROM search_merges")} | {
        (int(k), str(f))
        for k, f in conn.execute(
            "SELECT scope_key, family FROM search_pending GROUP BY scope_key, family HAVING SUM(documents) >= ?",
            (_limits.MERGE_DOCUMENTS,),
        )
    }
    classes: dict[tuple[int, str, int], int] = {}
    for k, f, documents in conn.execute("SELECT scope_key, family, documents FROM search_run_sizes"):
        at = (int(k), str(f), _size_class(int(documents)))
        classes[at] = classes.get(at, 0) + 1
    found |= {(k, f) for (k, f, _), runs in classes.items() if runs >= _limits.RUN_FANOUT}
    return sorted(found)


def step(conn: Conn, scope_key: int, family: str, cache: LoggedCache) -> bool:
    """One transaction's share of the family's merges: begin one if due, else merge its next
    chunk (finishing it with the last). False when there was nothing to do. `cache` keeps the
    deferred sources unpacked from one step to the next (pass the same dict)."""
    # Writers to the Scope queue behind this, as behind each other (OceanBase; SQLite's write
    # transaction holds the database lock already).
    conn.execute("SELECT scope_key FROM scopes WHERE scope_key = ? FOR UPDATE", (scope_key,)).fetchall()
    state = _state(conn, scope_key, family) or _begin(conn, scope_key, family)
    if state is None:
        return False
    _merge_chunk(conn, scope_key, family, state, cache)
    return True


def _state(conn: Conn, scope_key: int, family: str) -> MergeState | None:
    row = conn.execute(
        "SELECT target, merged_through FROM search_merges WHERE scope_key = ? AND family = ?",
        (scope_key, family),
    ).fetchone()
    if row is None:
        return None
    runs, deferred = [], []
    for segment, generation in conn.execute(
        "SELECT segment, generation FROM search_merge_sources WHERE scope_key = ? AND family = ?"
        " ORDER BY segment",
        (scope_key, family),
    ):
        if int(generation) == _RUN:
            runs.append(int(segment))
        else:
            deferred.append((int(generation), int(segment)))
    return MergeState(int(row[0]), str(row[1]), runs, sorted(deferred))


def _begin(conn: Conn, scope_key: int, family: str) -> MergeState | None:
    """Record a merge of the deferred writes if they hold MERGE_DOCUMENTS documents, else of the
    first RUN_FANOUT runs of the smallest full size class, else None. Its target is named by the
    smallest document key it will hold, so its sources' rows keep their offsets' base or gain one
    below it."""
    deferred = [
        (int(generation), int(segment), int(documents))
        for generation, segment, documents in conn.execute(
            "SELECT p.generation, l.doc_key, p.documents FROM search_pending p JOIN search_log l"
            " ON l.scope_key = p.scope_key AND l.family = p.family AND l.generation = p.generation"
            " WHERE p.scope_key = ? AND p.family = ? ORDER BY p.generation",
            (scope_key, family),
        )
    ]
    held = np.cumsum([documents for _, _, documents in deferred], dtype=np.int64)
    if len(held) and held[-1] >= _limits.MERGE_DOCUMENTS:
        # The oldest writes that reach MERGE_DOCUMENTS: a merger that fell behind still merges
        # about that many documents at a time, so the log rows it holds stay few.
        taken = deferred[: int(np.searchsorted(held, _limits.MERGE_DOCUMENTS)) + 1]
        sources = [(segment, generation) for generation, segment, _ in taken]
        target = min(segment for segment, _ in sources)
        conn.execute(
            "INSERT INTO search_run_sizes (scope_key, family, segment, documents) VALUES (?, ?, ?, ?)",
            (scope_key, family, target, sum(documents for _, _, documents in taken)),
        )
    else:
        runs = _full_class(conn, scope_key, family)
        if not runs:
            return None
        sources = [(segment, _RUN) for segment in runs]
        target = min(runs)
    conn.execute(
        "INSERT INTO search_merges (scope_key, family, target, merged_through) VALUES (?, ?, ?, '')",
        (scope_key, family, target),
    )
    conn.executemany(
        "INSERT INTO search_merge_sources (scope_key, family, segment, generation) VALUES (?, ?, ?, ?)",
        [(scope_key, family, segment, generation) for segment, generation in sources],
    )
    return _state(conn, scope_key, family)


def _size_class(documents: int) -> int:
    size, found = max(documents, 1) // _limits.MERGE_DOCUMENTS, 0
    while size >= _limits.RUN_FANOUT:
        size //= _limits.RUN_FANOUT
        found += 1
    return found


def _full_class(conn: Conn, scope_key: int, family: str) -> list[int]:
    """RUN_FANOUT runs of the smallest size class that holds that many, or none."""
    classes: dict[int, list[int]] = {}
    for segment, documents in conn.execute(
        "SELECT segment, documents FROM search_run_sizes WHERE scope_key = ? AND family = ? ORDER BY segment",
        (scope_key, family),
    ).fetchall():
        classes.setdefault(_size_class(int(documents)), []).append(int(segment))
    full = [runs for _, runs in sorted(classes.items()) if len(runs) >= _limits.RUN_FANOUT]
    return full[0][: _limits.RUN_FANOUT] if full else []


@dataclass(slots=True)
class _Blocks:
    """Postings in blocks, a block per (source, term): block i holds the term terms[i] and the
    postings [starts[i], starts[i] + sizes[i]) of held and tfs."""

    terms: list[str]
    starts: list[npt.NDArray[np.int64]]
    sizes: list[npt.NDArray[np.int64]]
    held: list[npt.NDArray[np.int64]]
    tfs: list[npt.NDArray[np.int32]]
    postings: int = 0

    def add(
        self,
        terms: Sequence[str],
        sizes: npt.NDArray[np.int64],
        held: npt.NDArray[np.int64],
        tfs: npt.NDArray[np.int32],
    ) -> None:
        self.terms += terms
        self.starts.append(np.cumsum(sizes) - sizes + self.postings)
        self.sizes.append(sizes)
        self.held.append(held)
        self.tfs.append(tfs)
        self.postings += len(held)

    def grouped(self) -> _postings.Grouped:
        if not self.terms:
            return _postings.Grouped([], [0], np.zeros(0, np.int64), np.zeros(0, np.int32))
        return _postings.by_term(
            self.terms,
            np.concatenate(self.starts),
            np.concatenate(self.sizes),
            np.concatenate(self.held),
            np.concatenate(self.tfs),
        )


def _merge_chunk(conn: Conn, scope_key: int, family: str, state: MergeState, cache: LoggedCache) -> None:
    """Merge the sources' next terms, up to the smallest last term of a source that filled its
    share (every term when none did, and the merge then finishes)."""
    share = max(1, CHUNK_ROWS // max(1, len(state.runs) + len(state.deferred)))
    after = state.merged_through
    # The runs' next terms with their sizes first, and the postings only of those the chunk takes:
    # common words of large runs hold thousands of postings a row, so a chunk's budget is spent
    # long before a run's share of rows, and reading the share whole read most rows many times.
    sized_runs = [
        conn.execute(
            "SELECT term, length(postings) FROM search_runs WHERE scope_key = ? AND family = ? AND segment = ?"
            " AND term > ? ORDER BY term LIMIT ?",
            (scope_key, family, run, after, share),
        ).fetchall()
        for run in state.runs
    ]
    writes = [_logged(conn, scope_key, family, g, segment, cache) for g, segment in state.deferred]
    starts = [bisect_right(write.terms, after) if write else 0 for write in writes]
    lasts = [str(rows[-1][0]) for rows in sized_runs if len(rows) == share] + [
        write.terms[start + share - 1]
        for write, start in zip(writes, starts, strict=True)
        if write is not None and len(write.terms) - start >= share
    ]
    through = _within_budget(sized_runs, writes, starts, share, min(lasts) if lasts else None)
    bound = "" if through is None else " AND term <= ?"
    blocks = _Blocks([], [], [], [], [])
    for run in state.runs:
        kept = conn.execute(
            "SELECT term, postings FROM search_runs WHERE scope_key = ? AND family = ? AND segment = ?"
            f" AND term > ?{bound} ORDER BY term",
            (scope_key, family, run, after, *(() if through is None else (through,))),
        ).fetchall()
        if kept:
            sizes, held, tfs = _postings.unpack_rows([run] * len(kept), [row[1] for row in kept])
            blocks.add([str(row[0]) for row in kept], sizes, held, tfs)
    _add_deferred(conn, family, blocks, writes, starts, through)
    if state.runs:
        conn.execute(
            "DELETE FROM search_runs WHERE scope_key = ? AND family = ?"
            f" AND segment IN ({marks(state.runs)}) AND term > ?{bound}",
            (scope_key, family, *state.runs, after, *(() if through is None else (through,))),
        )
    grouped = blocks.grouped()
    conn.executemany(
        "INSERT INTO search_runs (scope_key, family, segment, term, postings) VALUES (?, ?, ?, ?, ?)",
        [
            (scope_key, family, state.target, term, packed)
            for term, packed in _postings.packed_rows(
                state.target, grouped.terms, grouped.bounds, grouped.held, grouped.tfs
            )
        ],
    )
    if through is None:
        _finish(conn, scope_key, family, state)
        cache.clear()
    else:
        conn.execute(
            "UPDATE search_merges SET merged_through = ? WHERE scope_key = ? AND family = ?",
            (through, scope_key, family),
        )


# Deferred writes unpacked by earlier chunks of a merge, by (Scope, family, generation). A row
# rewritten since (an erasure takes a document's postings out) needs no fresh read: every chunk
# drops the postings of documents no longer indexed.
LoggedCache = dict[tuple[int, str, int], _log.LoggedWrite]


def _within_budget(
    sized_runs: list[Sequence[Any]],
    writes: list[_log.LoggedWrite | None],
    starts: list[int],
    share: int,
    through: str | None,
) -> str | None:
    """`through`, or an earlier last term if the rows up to it hold over CHUNK_POSTINGS postings
    (common words of a large run hold a posting per document): the terms in order, as many as fit,
    and always the first. `sized_runs`: each run's next (term, bytes of its postings)."""
    counted: list[tuple[str, int]] = []
    for rows in sized_runs:
        counted += [(str(term), _postings.postings_in(int(size))) for term, size in rows]
    for write, start in zip(writes, starts, strict=True):
        if write is not None:
            stop = min(len(write.terms), start + share)
            counted += zip(
                write.terms[start:stop], np.diff(write.bounds[start : stop + 1]).tolist(), strict=True
            )
    held = 0
    for term, postings in sorted(counted):
        if through is not None and term > through:
            break
        held += postings
        if held > CHUNK_POSTINGS:
            return term
    return through


def _logged(
    conn: Conn, scope_key: int, family: str, generation: int, segment: int, cache: LoggedCache
) -> _log.LoggedWrite | None:
    """A deferred source's log row, unpacked lazily, read once per merge."""
    cached = cache.get((scope_key, family, generation))
    if cached is not None:
        return cached
    row = conn.execute(
        "SELECT added FROM search_log WHERE scope_key = ? AND family = ? AND generation = ?",
        (scope_key, family, generation),
    ).fetchone()
    if row is None or row[0] is None:
        return None
    write = cache[(scope_key, family, generation)] = _log.unpack(segment, bytes(row[0]), lazy=True)
    return write


def _add_deferred(
    conn: Conn,
    family: str,
    blocks: _Blocks,
    writes: list[_log.LoggedWrite | None],
    starts: list[int],
    through: str | None,
) -> None:
    """The deferred writes' postings of terms after their `starts` up to `through`, without those
    of documents unindexed since their write."""
    taken: list[tuple[_log.LoggedWrite, int, int]] = []
    for write, start in zip(writes, starts, strict=True):
        if write is None:
            continue
        stop = len(write.terms) if through is None else bisect_right(write.terms, through, lo=start)
        if stop > start:
            taken.append((write, start, stop))
    if not taken:
        return
    spans = [(int(write.bounds[start]), int(write.bounds[stop])) for write, start, stop in taken]
    held_all = [
        write.doc_keys[write.positions[first:last]]
        for (write, _, _), (first, last) in zip(taken, spans, strict=True)
    ]
    alive = _writes.indexed_documents(conn, family, np.unique(np.concatenate(held_all)))
    for (write, start, stop), (first, last), held in zip(taken, spans, held_all, strict=True):
        keep = np.isin(held, alive)
        sizes = np.diff(write.bounds[start : stop + 1])
        kept_sizes = np.bincount(np.repeat(np.arange(stop - start), sizes)[keep], minlength=stop - start)
        present = kept_sizes > 0
        blocks.add(
            list(itertools.compress(write.terms[start:stop], present.tolist())),
            kept_sizes[present].astype(np.int64),
            held[keep],
            write.tfs[first:last][keep],
        )


def _finish(conn: Conn, scope_key: int, family: str, state: MergeState) -> None:
    """The last chunk is merged: the target alone stands for its sources."""
    keys = (scope_key, family)
    documents = sum(
        int(n)
        for (n,) in conn.execute(
            "SELECT documents FROM search_run_sizes WHERE scope_key = ? AND family = ?"
            f" AND segment IN ({marks(state.runs or [state.target])})",
            (*keys, *(state.runs or [state.target])),
        )
    )
    moved = [segment for _, segment in state.deferred] + state.runs
    conn.execute(
        "DELETE FROM search_run_sizes WHERE scope_key = ? AND family = ?"
        f" AND segment IN ({marks([*state.runs, state.target])})",
        (*keys, *state.runs, state.target),
    )
    conn.execute(
        "INSERT INTO search_run_sizes (scope_key, family, segment, documents) VALUES (?, ?, ?, ?)",
        (*keys, state.target, documents),
    )
    if state.deferred:
        generations = [generation for generation, _ in state.deferred]
        conn.execute(
            "DELETE FROM search_pending WHERE scope_key = ? AND family = ?"
            f" AND generation IN ({marks(generations)})",
            (*keys, *generations),
        )
    conn.execute(
        "UPDATE search_docs SET segment = ? WHERE scope_key = ? AND family = ?"
        f" AND segment IN ({marks(moved)})",
        (state.target, *keys, *moved),
    )
    for table in ("search_merges", "search_merge_sources"):
        conn.execute(f"DELETE FROM {table} WHERE scope_key = ? AND family = ?", keys)
