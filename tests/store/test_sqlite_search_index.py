"""The shared search index on SQLite: ranking, upkeep under every write, and the upgrade path."""

from __future__ import annotations

import itertools
import random
import sqlite3
import struct
from collections import Counter
from pathlib import Path

import pytest

from powercontext_runtime.models import ExperienceFields, MemoryCitation, Scope
from powercontext_runtime.search import _limits, _log, document_terms, parse_query
from powercontext_runtime.search._postings import pack_postings, unpack_postings
from powercontext_runtime.store import memory, scopes
from powercontext_runtime.store.backends import SqliteBackend
from powercontext_runtime.store.migrations import statements as _statements
from powercontext_runtime.store.sql_store import SqlStore
from powercontext_runtime.store.sqlite_schema import MIGRATIONS
from tests.store.writes import churn, small_merges


def test_document_terms_hold_words_cjk_characters_and_pairs() -> None:
    assert document_terms("Hello 记忆系统 hello") == Counter(
        {"hello": 2, "记": 1, "忆": 1, "系": 1, "统": 1, "记忆": 1, "忆系": 1, "系统": 1}
    )


# Postings as (Scope, family) -> term -> {document key: term frequency}.
Postings = dict[tuple[int, str], dict[str, dict[int, int]]]


def head_postings(db: Path) -> Postings:
    """What the index must hold, recomputed from the stored heads (a Memory head's document key is
    its version key)."""
    conn = sqlite3.connect(db)
    found: Postings = {}
    for scope_key, version_key, text in conn.execute(
        "SELECT scope_key, version_key, text FROM memory_entry_versions WHERE removed_revision IS NULL"
    ):
        for term, tf in document_terms(text).items():
            found.setdefault((scope_key, "memory"), {}).setdefault(term, {})[version_key] = tf
    conn.close()
    return found


def stored_postings(segment: int, postings: int | bytes) -> dict[int, int]:
    """A segment or run row decoded by its documented layout, not by the code that wrote it: the tf
    alone for the segment's own document, else n little-endian int32 tfs, then n little-endian
    uint32 offsets of the documents' keys from the segment."""
    if isinstance(postings, int):
        return {segment: postings}
    count = len(postings) // 8
    tfs = struct.unpack(f"<{count}i", postings[: 4 * count])
    offsets = struct.unpack(f"<{count}I", postings[4 * count :])
    return {segment + offset: tf for offset, tf in zip(offsets, tfs, strict=True)}


def index_postings(db: Path) -> Postings:
    """The postings as the index holds them: its segments and runs, and the deferred writes'
    postings of documents it still holds (but those of terms a merge under way has moved). Read in
    one transaction: the store's merger thread may commit a chunk meanwhile, and reads in two
    snapshots would see a posting in neither place or in both."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    found: Postings = {}

    def add(scope_key: int, family: str, term: str, held: dict[int, int]) -> None:
        into = found.setdefault((scope_key, family), {}).setdefault(term, {})
        assert not into.keys() & held.keys(), (term, held)  # a posting is stored once
        into.update(held)

    for scope_key, family, term, segment, postings in conn.execute(
        "SELECT scope_key, family, term, segment, postings FROM search_segments"
        " UNION ALL SELECT scope_key, family, term, segment, postings FROM search_runs"
    ):
        add(scope_key, family, term, stored_postings(segment, postings))
    indexed = set(conn.execute("SELECT family, doc_key FROM search_docs"))
    for scope_key, family, base, added, merged_through in conn.execute(
        "SELECT l.scope_key, l.family, l.doc_key, l.added, m.merged_through FROM search_pending p"
        " JOIN search_log l ON l.scope_key = p.scope_key AND l.family = p.family AND l.generation = p.generation"
        " LEFT JOIN search_merge_sources s ON s.scope_key = p.scope_key AND s.family = p.family"
        " AND s.generation = p.generation"
        " LEFT JOIN search_merges m ON m.scope_key = s.scope_key AND m.family = s.family"
    ):
        write = _log.unpack(base, added)
        for i, term in enumerate(write.terms):
            if merged_through is not None and term <= merged_through:
                continue  # a merge under way moved it into its target run
            start, end = write.bounds[i], write.bounds[i + 1]
            held = {
                int(key): int(tf)
                for key, tf in zip(
                    write.doc_keys[write.positions[start:end]], write.tfs[start:end], strict=True
                )
                if (family, int(key)) in indexed
            }
            if held:
                add(scope_key, family, term, held)
    conn.close()
    return found


@pytest.mark.parametrize("deferred", [False, True], ids=["direct", "deferred"])
def test_the_index_always_equals_a_rebuild_from_the_heads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deferred: bool
) -> None:
    """Deferred: every batch waits in the log, and merges into runs happen every few batches, runs
    merging in turn, with entries revised, retired and erased before and after their batch was
    merged, and after their run was."""
    if deferred:
        small_merges(monkeypatch, 9)
    db = tmp_path / "db.sqlite3"
    store = SqlStore(SqliteBackend(str(db)))
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "记忆", "系统", "delta"]
    live: list[MemoryCitation] = []
    waiting, runs = [], []
    for _ in range(12):
        churn(store, rng, live, 10, words)
        assert index_postings(db) == head_postings(db)
        conn = sqlite3.connect(db)
        waiting.append(conn.execute("SELECT COUNT(*) FROM search_pending").fetchone()[0])
        runs.append(conn.execute("SELECT COUNT(*), MAX(documents) FROM search_run_sizes").fetchone())
        conn.close()
    if deferred:  # writes waited and were merged, and runs merged into larger ones
        assert max(waiting) > 0 and any(b < a for a, b in itertools.pairwise(waiting)), waiting
        assert any(b[0] < a[0] for a, b in itertools.pairwise(runs)), runs
        assert max(size for _, size in runs if size) >= 2 * _limits.MERGE_DOCUMENTS, runs
    store.close()


def test_postings_rows_keep_their_documented_layout() -> None:
    """Databases already hold rows in this layout, and OceanBase keeps a lone tf as its digits."""
    assert pack_postings(100, [100], [3]) == 3
    assert pack_postings(100, [105], [1]) == bytes.fromhex("0100000005000000")
    packed = pack_postings(100, [100, 105, 70_000], [2, 7, 1])
    assert packed == bytes.fromhex(
        "02000000070000000100000000000000050000000c110100"
    )  # 70,000 - 100 = 0x1110c
    for row, expected in ((3, {100: 3}), (b"3", {100: 3}), (packed, {100: 2, 105: 7, 70_000: 1})):
        keys, tfs = unpack_postings(100, row)
        assert dict(zip(keys.tolist(), tfs.tolist(), strict=True)) == expected


def test_ranking_prefers_rarer_and_more_frequent_terms(tmp_path: Path) -> None:
    store = SqlStore(SqliteBackend(str(tmp_path / "db.sqlite3")))
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    for text in ("common words here", "common rare words", "common common common", "nothing else"):
        store.run(memory.remember, "s:1", text, "fact", None)
    hits = store.search_memory(["s:1"], parse_query("rare common"), 10)[0]
    assert [h.text for h in hits] == ["common rare words", "common common common", "common words here"]
    store.close()


def test_upgrading_an_fts5_database_indexes_its_existing_heads(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
    for migration in MIGRATIONS[:2]:
        for statement in _statements(migration.sql):
            conn.execute(statement)
        conn.execute("INSERT INTO schema_migrations VALUES (?, 'then')", (migration.version,))
    conn.execute(
        "INSERT INTO scopes (scope_key, scope_id, title, summary, version, memory_revision, entry_counter,"
        " created_at, updated_at) VALUES (1, 's:old', '', '', 1, 2, 2, 'then', 'then')"
    )
    conn.execute("INSERT INTO memory_entries VALUES (1, 'entry-1', 1, 'fact', 1, NULL)")
    conn.execute("INSERT INTO memory_entries VALUES (1, 'entry-2', 2, 'fact', 1, 2)")
    conn.execute(
        "INSERT INTO memory_entry_versions VALUES (1, 1, 'entry-1', 1, 'entry-1-v1', 'kept heron', 1, NULL)"
    )
    conn.execute(
        "INSERT INTO memory_entry_versions VALUES (2, 1, 'entry-2', 1, 'entry-2-v1', 'retired heron', 2, 2)"
    )
    conn.execute(
        "INSERT INTO artifact_revisions VALUES (1, 1, 'experience', 'experience-1', 1,"
        ' \'{"situation": "heron", "action": "a", "outcome": "o", "lesson": "l"}\', \'then\')'
    )
    conn.execute("INSERT INTO artifact_heads VALUES (1, 'experience', 'experience-1', 1, 1)")
    conn.close()

    store = SqlStore(SqliteBackend(str(db)))
    assert [h.text for h in store.search_memory(["s:old"], parse_query("heron"), 5)[0]] == ["kept heron"]
    found = store.search_experience(["s:old"], parse_query("heron"), 5)[0]
    assert [e.fields for e in found] == [ExperienceFields("heron", "a", "o", "l")]
    store.close()


def test_a_batch_writes_a_row_per_distinct_term_and_erasing_one_entry_rewrites_only_its_terms(
    tmp_path: Path,
) -> None:
    db = tmp_path / "db.sqlite3"
    store = SqlStore(SqliteBackend(str(db)))
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    texts = ["shared heron one", "shared heron two", "shared zanzibar three"]
    cited = store.run(memory.remember_batch, "s:1", [(t, "fact", None) for t in texts], None)
    citations = [c for c, _ in cited]
    conn = sqlite3.connect(db)
    distinct = {term for text in texts for term in document_terms(text)}
    assert conn.execute("SELECT COUNT(*) FROM search_segments").fetchone()[0] == len(distinct)

    store.run(memory.erase_memory_entry, "s:1", citations[2].entry_id)
    terms = {term for (term,) in conn.execute("SELECT term FROM search_segments")}
    assert terms == {term for text in texts[:2] for term in document_terms(text)}  # zanzibar, three gone
    assert index_postings(db) == head_postings(db)
    conn.close()
    hits = store.search_memory(["s:1"], parse_query("shared"), 10)[0]
    assert sorted(h.text for h in hits) == texts[:2]
    store.close()
