"""The in-memory search mirror ranks exactly as BM25 recomputed from the stored heads, however
writes, other store instances, a pruned log or eviction interleave with queries.

Rule: search order is the shared index's (search/_bm25.py): BM25 with Lucene idf, scores rounded to
9 digits, ties to the newer document, and a Memory hit gains a share of its neighbour's score
(search/_neighbours.py); the mirror is a cache, so it must never change an answer.
"""

from __future__ import annotations

import math
import random
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from powercontext_runtime.models import MemoryCitation, Scope
from powercontext_runtime.search import (
    SearchMirror,
    _limits,
    _log,
    _mirror,
    document_terms,
    parse_query,
    query_terms,
)
from powercontext_runtime.search._bm25 import K1, SCORE_DIGITS, B
from powercontext_runtime.search._neighbours import NEIGHBOUR_WEIGHT
from powercontext_runtime.store import memory, scopes
from powercontext_runtime.store.backends import SqliteBackend
from powercontext_runtime.store.sql_store import SqlStore
from tests.store.writes import churn, small_merges

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "记忆", "系统", "heron", "the", "a"]
QUERIES = ["alpha beta", "the heron", "记忆系统", "gamma delta epsilon a", "zeta", "the a alpha"]


def reference_ranking(db: Path, scope_id: str, query: str, limit: int) -> list[str]:
    """Texts of the best heads, by BM25 recomputed in plain Python from the heads themselves."""
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT v.version_key, v.text FROM memory_entry_versions v JOIN scopes s ON s.scope_key = v.scope_key"
        " WHERE s.scope_id = ? AND v.removed_revision IS NULL",
        (scope_id,),
    ).fetchall()
    conn.close()
    docs = {key: document_terms(text) for key, text in rows}
    texts = dict(rows)
    if not docs:
        return []
    average = sum(sum(t.values()) for t in docs.values()) / len(docs)
    df = Counter(term for terms in docs.values() for term in terms)
    scored = []
    for key, terms in docs.items():
        length = sum(terms.values())
        score = 0.0
        for term in query_terms(parse_query(query)):
            if term in terms:
                weight = math.log(1.0 + (len(docs) - df[term] + 0.5) / (df[term] + 0.5))
                tf = float(terms[term])
                score += weight * (tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average)))
        if score > 0:
            scored.append((float(np.round(score, SCORE_DIGITS)), key))
    scored.sort(reverse=True)
    return [texts[key] for _, key in with_neighbours(scored, sorted(docs))[:limit]]


def with_neighbours(scored: list[tuple[float, int]], live_keys: list[int]) -> list[tuple[float, int]]:
    """Memory's rescoring, written out: each matching document gains NEIGHBOUR_WEIGHT times the
    score of the better of the live heads just before and after it in key order (0 for one that
    does not match)."""
    best = {key: score for score, key in scored}
    rescored = []
    for score, key in scored:
        at = live_keys.index(key)
        near = [live_keys[i] for i in (at - 1, at + 1) if 0 <= i < len(live_keys)]
        gain = max((best.get(other, 0.0) for other in near), default=0.0)
        rescored.append((float(np.round(score + NEIGHBOUR_WEIGHT * gain, SCORE_DIGITS)), key))
    return sorted(rescored, reverse=True)


@contextmanager
def snapshot_before(store: SqlStore, scope_id: str, newer_request: Callable[[], None]) -> Iterator[None]:
    """Begin this thread's read snapshot, run `newer_request` to its end on another thread (its
    writes and searches move the shared mirror on), then run the body in the older snapshot. A
    failed assertion in `newer_request` fails the test."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            newer_request()
        except BaseException as exc:
            failures.append(exc)

    with store.reading():
        assert store.run(scopes.get_scope, scope_id) is not None  # the snapshot starts here
        other = threading.Thread(target=run)
        other.start()
        other.join(10)
        assert not other.is_alive(), "the newer request did not finish within 10 s"
        if failures:
            raise failures[0]
        yield


def texts(store: SqlStore, query: str, limit: int = 5) -> list[str]:
    return [hit.text for hit in store.search_memory(["s:1"], parse_query(query), limit)[0]]


def test_two_stores_on_one_database_stay_exact_while_both_write(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    first, second = SqlStore(SqliteBackend(str(db))), SqlStore(SqliteBackend(str(db)))
    first.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    rng = random.Random(11)
    live: list[MemoryCitation] = []
    for round_ in range(30):
        writer = first if round_ % 2 else second
        # Writes through one store drop the other's citations; keep them valid by re-reading.
        live = [hit.citation for hit in writer.search_memory(["s:1"], parse_query(" ".join(WORDS)), 1000)[0]]
        churn(writer, rng, live, rng.randint(1, 6), WORDS)
        for query in QUERIES:
            expected = reference_ranking(db, "s:1", query, 5)
            assert texts(first, query) == expected, query
            assert texts(second, query) == expected, query
    first.close()
    second.close()


def test_deferred_writes_rank_exactly_before_and_after_they_are_merged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches whose postings wait in the log: the writer, a mirror replaying it, and a store that
    reads every term cold all rank as BM25 over the heads does, as batches wait, merge into runs,
    runs merge, and their entries are revised, retired and erased."""
    small_merges(monkeypatch, 11)
    db = tmp_path / "db.sqlite3"
    writer, replaying = SqlStore(SqliteBackend(str(db))), SqlStore(SqliteBackend(str(db)))
    writer.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    rng = random.Random(23)
    live: list[MemoryCitation] = []
    for _ in range(25):
        churn(writer, rng, live, rng.randint(1, 5), WORDS)
        stranger = SqlStore(SqliteBackend(str(db)))
        for query in QUERIES:
            expected = reference_ranking(db, "s:1", query, 5)
            assert texts(writer, query) == expected, query
            assert texts(replaying, query) == expected, query
            assert texts(stranger, query) == expected, query
        stranger.close()
    writer.close()
    replaying.close()


def test_a_deferred_write_outlives_the_log_it_waits_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pruning keeps the log row of a write whose postings wait there, however old."""
    monkeypatch.setattr(_limits, "DEFER_DOCUMENTS", 2)
    monkeypatch.setattr(_limits, "LOG_RETAIN", 4)
    monkeypatch.setattr(_limits, "PRUNE_EVERY", 2)
    db = tmp_path / "db.sqlite3"
    writer = SqlStore(SqliteBackend(str(db)))
    writer.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    writer.run(
        memory.remember_batch,
        "s:1",
        [("heron alpha", "fact", None), ("heron beta", "fact", None), ("gamma", "fact", None)],
        None,
    )
    for i in range(12):
        writer.run(memory.remember, "s:1", f"delta {i}", "fact", None)
    stranger = SqlStore(SqliteBackend(str(db)))
    assert sorted(texts(stranger, "heron")) == ["heron alpha", "heron beta"]
    assert texts(stranger, "heron") == reference_ranking(db, "s:1", "heron", 5)
    for store in (writer, stranger):
        store.close()


def test_a_mirror_behind_the_pruned_log_rebuilds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "LOG_RETAIN", 4)
    monkeypatch.setattr(_limits, "PRUNE_EVERY", 2)
    db = tmp_path / "db.sqlite3"
    reader, writer = SqlStore(SqliteBackend(str(db))), SqlStore(SqliteBackend(str(db)))
    writer.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    rng = random.Random(5)
    live: list[MemoryCitation] = []
    churn(writer, rng, live, 10, WORDS)
    assert texts(reader, "alpha heron") == reference_ranking(db, "s:1", "alpha heron", 5)
    churn(writer, rng, live, 40, WORDS)  # far more than the 4 generations kept
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM search_log").fetchone()[0] < 10
    conn.close()
    for query in QUERIES:
        assert texts(reader, query) == reference_ranking(db, "s:1", query, 5), query
    reader.close()
    writer.close()


def test_eviction_under_a_tiny_budget_changes_no_answer(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    store = SqlStore(SqliteBackend(str(db)), SearchMirror(max_postings=3))  # evicts on every query
    for scope_id in ("s:1", "s:2"):
        store.run(scopes.create_scope, Scope(scope_id, "", "", (), 1))
    rng = random.Random(3)
    for _ in range(40):
        for scope_id in ("s:1", "s:2"):
            store.run(memory.remember, scope_id, " ".join(rng.choice(WORDS) for _ in range(4)), "fact", None)
    for query in QUERIES:
        found = store.search_memory(["s:1", "s:2"], parse_query(query), 5)
        assert [h.text for h in found[0]] == reference_ranking(db, "s:1", query, 5)
        assert [h.text for h in found[1]] == reference_ranking(db, "s:2", query, 5)
    store.close()


def test_ties_go_to_the_newer_document(tmp_path: Path) -> None:
    store = SqlStore(SqliteBackend(str(tmp_path / "db.sqlite3")))
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    for text in ("same words", "same words", "same words"):
        store.run(memory.remember, "s:1", text, "fact", None)
    hits = store.search_memory(["s:1"], parse_query("same"), 2)[0]
    assert [h.citation.entry_id for h in hits] == ["entry-3", "entry-2"]
    store.close()


def test_a_snapshot_older_than_the_mirror_answers_for_its_moment_and_leaves_the_mirror_whole(
    tmp_path: Path,
) -> None:
    """Rule (Store.reading): a prepare reads every family from one snapshot. Another request may
    replay newer writes into the shared mirror meanwhile; the older snapshot must neither see them
    nor leave postings in the mirror that lack them."""
    store = SqlStore(SqliteBackend(str(tmp_path / "db.sqlite3")))
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    store.run(memory.remember, "s:1", "quokka by the river", "fact", None)
    store.run(memory.remember, "s:1", "heron on the bank", "fact", None)

    def newer_request() -> None:
        store.run(memory.remember, "s:1", "quokka and heron together", "fact", None)
        assert len(texts(store, "heron")) == 2  # replays the write into the mirror

    with snapshot_before(store, "s:1", newer_request):
        assert texts(store, "heron") == ["heron on the bank"]
        assert texts(store, "quokka") == ["quokka by the river"]  # a term the mirror had not loaded
    assert sorted(texts(store, "quokka")) == ["quokka and heron together", "quokka by the river"]
    store.close()


@pytest.mark.parametrize("history", [4096, 1])
def test_a_snapshot_older_than_the_mirror_still_finds_the_version_it_sees_as_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, history: int
) -> None:
    """Rule (issue #14): an entry that always has one active version is never missing. Another
    request revises it and moves the mirror on while an older snapshot is open: the old snapshot
    still ranks the version it sees as head, for terms the mirror knew and for terms it learned
    only after the old version was removed. With no history left (`history=1`) the reader ranks
    on a private mirror built from its own snapshot."""
    monkeypatch.setattr(_mirror, "HISTORY", history)
    store = SqlStore(SqliteBackend(str(tmp_path / "db.sqlite3")))
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    first = store.run(memory.remember, "s:1", "heron quokka version one", "fact", None)
    store.run(memory.remember, "s:1", "heron quokka version one", "fact", None)
    assert len(texts(store, "heron")) == 2

    def newer_request() -> None:
        store.run(memory.revise_memory_entry, "s:1", first.citation, "heron quokka version two")
        assert "heron quokka version two" in texts(store, "heron")  # the mirror moves on
        assert "heron quokka version two" in texts(store, "quokka version")  # learned after the removal

    with snapshot_before(store, "s:1", newer_request):
        assert texts(store, "heron") == ["heron quokka version one"] * 2
        assert texts(store, "quokka version") == ["heron quokka version one"] * 2
    assert sorted(texts(store, "heron")) == ["heron quokka version one", "heron quokka version two"]
    store.close()


def test_a_batch_is_indexed_and_replayed_exactly_as_single_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch takes one generation per document, in order, and one log row: a mirror that replays
    it, one that rebuilds after the log was pruned across it, and BM25 over the heads all agree."""
    monkeypatch.setattr(_limits, "LOG_RETAIN", 8)
    monkeypatch.setattr(_limits, "PRUNE_EVERY", 4)
    db = tmp_path / "db.sqlite3"
    writer, replaying = SqlStore(SqliteBackend(str(db))), SqlStore(SqliteBackend(str(db)))
    writer.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    rng = random.Random(17)
    writer.run(memory.remember, "s:1", "alpha heron", "fact", None)
    assert texts(replaying, "alpha") == ["alpha heron"]  # builds its mirror before the batches
    for size in (3, 1, 5):
        entries = [(" ".join(rng.choice(WORDS) for _ in range(4)), "fact", None) for _ in range(size)]
        citations = [c for c, _ in writer.run(memory.remember_batch, "s:1", entries, None)]
        assert [writer.run(memory.get_memory_entry, "s:1", c).text for c in citations] == [
            t for t, _, _ in entries
        ]  # type: ignore[union-attr]
        for query in QUERIES:
            expected = reference_ranking(db, "s:1", query, 5)
            assert texts(replaying, query) == expected, query
            assert texts(writer, query) == expected, query
    conn = sqlite3.connect(db)
    logged = [
        (g, len(_log.unpack(k, added).doc_keys))
        for g, k, added in conn.execute(
            "SELECT generation, doc_key, added FROM search_log ORDER BY generation"
        )
    ]
    conn.close()
    # A row per write, named by the last generation it takes; the first remember (1) was pruned.
    assert logged == [(4, 3), (5, 1), (10, 5)]
    stranger = SqlStore(SqliteBackend(str(db)))
    for query in QUERIES:
        assert texts(stranger, query) == reference_ranking(db, "s:1", query, 5), query
    for store in (writer, replaying, stranger):
        store.close()


def test_a_key_that_comes_back_after_an_erasure_is_a_new_document(tmp_path: Path) -> None:
    """SQLite hands out the highest key again once its row is gone: a mirror that saw the erased
    document must index the new one under that key, with its own terms."""
    db = tmp_path / "db.sqlite3"
    writer, reader = SqlStore(SqliteBackend(str(db))), SqlStore(SqliteBackend(str(db)))
    writer.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    writer.run(memory.remember, "s:1", "alpha heron", "fact", None)
    writer.run(memory.remember, "s:1", "heron heron heron gamma", "fact", None)
    assert texts(reader, "heron") == ["heron heron heron gamma", "alpha heron"]
    writer.run(memory.erase_memory_entry, "s:1", "entry-2")
    writer.run(memory.remember, "s:1", "delta heron", "fact", None)  # takes the erased version's key
    for store in (reader, writer):
        for query in ("heron", "delta", "gamma"):
            assert texts(store, query) == reference_ranking(db, "s:1", query, 5), query
    reader.close()
    writer.close()


@pytest.mark.parametrize("strong", [70, 300])  # 70: plain Python's few postings; 300: numpy's path
def test_a_hit_far_below_the_first_ranks_rises_beside_a_strong_one(tmp_path: Path, strong: int) -> None:
    """The rule holds at any depth: an entry BM25 alone ranks last, below `strong` better ones,
    comes second beside the best of them (more than 64 first hits, the old cut, stand above it)."""
    db = tmp_path / "db.sqlite3"
    store = SqlStore(SqliteBackend(str(db)))
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    entries = [("violin violin monday", "fact", None), ("lovely weather", "fact", None)] * (strong - 1)
    entries += [
        ("violin violin tuesday", "fact", None),
        ("violin played", "fact", None),
        ("lovely weather", "fact", None),
    ]
    store.run(memory.remember_batch, "s:1", entries, None)
    expected = reference_ranking(db, "s:1", "violin", 3)
    assert expected == ["violin violin tuesday", "violin played", "violin violin monday"]
    assert texts(store, "violin", 3) == expected
    store.close()
