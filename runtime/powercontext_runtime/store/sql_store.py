"""The store: every operation as SQL over one `Backend` (SQLite embedded, or OceanBase).

One transaction per operation. Writes first lock the Scope row they change (`FOR UPDATE`), so
writers to one Scope queue behind each other under OceanBase's READ COMMITTED isolation just as
they do behind SQLite's database lock: a counter or revision is read and bumped by one writer at a
time, and a stale `expected_*` or citation is a 409, never a lost or duplicated revision.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress

from ..candidates import interleave_takes
from ..errors import (
    EntryNotFound,
    InvalidRequest,
    PowerContextError,
    RetrievalUnavailable,
    RevisionConflict,
    ScopeAlreadyExists,
    ScopeNotFound,
)
from ..models import (
    EXPERIENCE_FAMILY,
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    TOPIC_FAMILY,
    ArtifactRef,
    ArtifactRevision,
    CandidateRecord,
    Experience,
    MemoryCitation,
    MemoryEntry,
    MemoryHit,
    MemoryRevision,
    ProfileSnapshot,
    Proposal,
    Scope,
    Topic,
)
from ..search_index import query_terms
from ..text_search import SearchQuery
from . import migrations, sql_search
from . import sql_artifacts as artifacts
from .backends import Backend, Conn
from .search_mirror import SearchMirror
from .sql_artifacts import now


class SqlStore:
    def __init__(self, backend: Backend, search_mirror: SearchMirror | None = None) -> None:
        self._backend = backend
        self._local = threading.local()
        self._connections: list[Conn] = []
        self._lock = threading.Lock()
        self._search = search_mirror or SearchMirror()
        self._migrate()

    # Connections and transactions ----------------------------------------------------------------
    def _conn(self) -> Conn:
        conn: Conn | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._backend.connect()
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Every read on this thread inside shares one read transaction, hence one snapshot."""
        if getattr(self._local, "reading", None) is not None:
            yield
            return
        with self._transaction(write=False) as conn:
            self._local.reading = conn
            try:
                yield
            finally:
                self._local.reading = None

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Conn]:
        shared: Conn | None = getattr(self._local, "reading", None)
        if shared is not None:
            if write:
                raise RuntimeError("a write cannot join the shared read transaction of reading()")
            yield shared
            return
        errors = self._backend.errors
        try:
            conn = self._conn()
            self._backend.begin(conn, write)
        except errors as exc:
            self._local.conn = None  # a broken connection is not reused
            raise RetrievalUnavailable() from exc
        try:
            yield conn
            self._backend.commit(conn)
        except BaseException as exc:
            try:
                self._backend.rollback(conn)
            except errors:
                self._local.conn = None
            if isinstance(exc, self._backend.duplicate_key) and not isinstance(exc, PowerContextError):
                # Two writers raced to create the same row: the later one lost.
                raise RevisionConflict("A concurrent write changed the same data.") from exc
            if isinstance(exc, errors):
                raise RetrievalUnavailable() from exc
            raise

    def _migrate(self) -> None:
        with self._transaction(write=True) as conn:
            migrations.apply(conn, self._backend.migrations, now())

    def ping(self) -> None:
        with self._transaction(write=False) as conn:
            conn.execute("SELECT 1").fetchone()

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                with suppress(*self._backend.errors):
                    self._backend.close(conn)
            self._connections.clear()
        self._local = threading.local()
        self._backend.stop()

    # Scopes -------------------------------------------------------------------------------------
    def create_scope(self, scope: Scope) -> Scope:
        with self._transaction(write=True) as conn:
            if conn.execute(
                "SELECT 1 FROM scopes WHERE scope_id = ? FOR UPDATE", (scope.scope_id,)
            ).fetchone():
                raise ScopeAlreadyExists()
            ref_keys = _reference_keys(conn, scope.context_references)
            stamp = now()
            cur = conn.execute(
                "INSERT INTO scopes (scope_id, title, summary, version, created_at, updated_at)"
                " VALUES (?, ?, ?, 1, ?, ?)",
                (scope.scope_id, scope.title, scope.summary, stamp, stamp),
            )
            _write_references(conn, int(cur.lastrowid or 0), ref_keys)
            return _load_scope(conn, scope.scope_id) or scope

    def get_scope(self, scope_id: str) -> Scope | None:
        with self._transaction(write=False) as conn:
            return _load_scope(conn, scope_id)

    def list_scopes(self, after_scope_id: str | None, limit: int) -> list[Scope]:
        with self._transaction(write=False) as conn:
            ids = [
                row[0]
                for row in conn.execute(
                    "SELECT scope_id FROM scopes WHERE scope_id > ? ORDER BY scope_id LIMIT ?",
                    (after_scope_id or "", limit),
                )
            ]
            return [s for s in (_load_scope(conn, i) for i in ids) if s is not None]

    def update_scope(
        self,
        scope_id: str,
        expected_version: int,
        title: str | None,
        summary: str | None,
        context_references: Sequence[str] | None,
    ) -> Scope:
        with self._transaction(write=True) as conn:
            row = conn.execute(
                "SELECT scope_key, version FROM scopes WHERE scope_id = ? FOR UPDATE", (scope_id,)
            ).fetchone()
            if row is None:
                raise ScopeNotFound()
            scope_key, version = row
            if version != expected_version:
                raise RevisionConflict("The expected version of the Scope is stale.")
            if context_references is not None:
                ref_keys = _reference_keys(conn, context_references)
                conn.execute("DELETE FROM scope_references WHERE scope_key = ?", (scope_key,))
                _write_references(conn, scope_key, ref_keys)
            conn.execute(
                "UPDATE scopes SET title = COALESCE(?, title), summary = COALESCE(?, summary),"
                " version = version + 1, updated_at = ? WHERE scope_key = ?",
                (title, summary, now(), scope_key),
            )
            updated = _load_scope(conn, scope_id)
            assert updated is not None
            return updated

    # Memory -------------------------------------------------------------------------------------
    def remember(self, scope_id: str, text: str, kind: str, expected_revision: int | None) -> MemoryEntry:
        with self._transaction(write=True) as conn:
            row = conn.execute(
                "SELECT scope_key, memory_revision, entry_counter FROM scopes WHERE scope_id = ? FOR UPDATE",
                (scope_id,),
            ).fetchone()
            if row is None:
                raise ScopeNotFound()
            scope_key, revision, counter = row
            if expected_revision is not None and expected_revision != revision:
                raise RevisionConflict("The expected Memory revision is stale.")
            revision += 1
            number = counter + 1
            entry_id = f"entry-{number}"
            conn.execute(
                "INSERT INTO memory_entries (scope_key, entry_id, entry_number, kind, head_version)"
                " VALUES (?, ?, ?, ?, 1)",
                (scope_key, entry_id, number, kind),
            )
            version_id = _insert_version(conn, scope_key, entry_id, 1, text, revision)
            _commit_revision(conn, scope_key, revision, "remember", entry_id, entry_counter=number)
            return MemoryEntry(MemoryCitation(revision, entry_id, version_id), text, kind, "active")

    def revise_memory_entry(self, scope_id: str, citation: MemoryCitation, text: str) -> MemoryEntry:
        with self._transaction(write=True) as conn:
            scope_key, revision, version_key, version_number, kind = _head_version(conn, scope_id, citation)
            revision += 1
            conn.execute(
                "UPDATE memory_entry_versions SET removed_revision = ? WHERE version_key = ?",
                (revision, version_key),
            )
            _unindex_version(conn, scope_key, version_key)
            version_id = _insert_version(
                conn, scope_key, citation.entry_id, version_number + 1, text, revision
            )
            conn.execute(
                "UPDATE memory_entries SET head_version = ? WHERE scope_key = ? AND entry_id = ?",
                (version_number + 1, scope_key, citation.entry_id),
            )
            _commit_revision(conn, scope_key, revision, "revise", citation.entry_id)
            return MemoryEntry(MemoryCitation(revision, citation.entry_id, version_id), text, kind, "active")

    def retire_memory_entry(self, scope_id: str, citation: MemoryCitation) -> MemoryEntry:
        with self._transaction(write=True) as conn:
            scope_key, revision, version_key, _, kind = _head_version(conn, scope_id, citation)
            revision += 1
            conn.execute(
                "UPDATE memory_entry_versions SET removed_revision = ? WHERE version_key = ?",
                (revision, version_key),
            )
            _unindex_version(conn, scope_key, version_key)
            conn.execute(
                "UPDATE memory_entries SET retired_revision = ? WHERE scope_key = ? AND entry_id = ?",
                (revision, scope_key, citation.entry_id),
            )
            _commit_revision(conn, scope_key, revision, "retire", citation.entry_id)
            text = conn.execute(
                "SELECT text FROM memory_entry_versions WHERE version_key = ?", (version_key,)
            ).fetchone()[0]
            return MemoryEntry(
                MemoryCitation(revision, citation.entry_id, citation.entry_version_id), text, kind, "retired"
            )

    def get_memory_entry(self, scope_id: str, citation: MemoryCitation) -> MemoryEntry | None:
        with self._transaction(write=False) as conn:
            scope_key, head_revision = _scope_memory(conn, scope_id)
            row = conn.execute(
                "SELECT v.text, e.kind, v.added_revision, v.removed_revision, e.retired_revision"
                " FROM memory_entry_versions v"
                " JOIN memory_entries e ON e.scope_key = v.scope_key AND e.entry_id = v.entry_id"
                " WHERE v.scope_key = ? AND v.entry_id = ? AND v.entry_version_id = ?",
                (scope_key, citation.entry_id, citation.entry_version_id),
            ).fetchone()
            if row is None:
                return None
            text, kind, added, removed, retired = row
            if not _citation_resolves(citation.revision, head_revision, added, removed, retired):
                return None
            retired_by_then = removed is not None and removed <= citation.revision
            return MemoryEntry(citation, text, kind, "retired" if retired_by_then else "active")

    def list_memory_entries(
        self, scope_id: str, after_position: int, limit: int
    ) -> list[tuple[int, MemoryEntry]]:
        with self._transaction(write=False) as conn:
            scope_key, revision = _scope_memory(conn, scope_id)
            rows = conn.execute(
                "SELECT e.entry_number, e.entry_id, v.entry_version_id, v.text, e.kind FROM memory_entries e"
                " JOIN memory_entry_versions v ON v.scope_key = e.scope_key AND v.entry_id = e.entry_id"
                " AND v.version_number = e.head_version"
                " WHERE e.scope_key = ? AND e.retired_revision IS NULL AND e.entry_number > ?"
                " ORDER BY e.entry_number LIMIT ?",
                (scope_key, after_position, limit),
            ).fetchall()
            return [
                (number, MemoryEntry(MemoryCitation(revision, entry_id, version_id), text, kind, "active"))
                for number, entry_id, version_id, text, kind in rows
            ]

    def search_memory(
        self, scope_ids: Sequence[str], query: SearchQuery, limit: int, merge_cap: int | None = None
    ) -> list[list[MemoryHit]]:
        terms = query_terms(query)
        if not terms:
            return [[] for _ in scope_ids]
        with self._ranked_reads() as (conn, release_mirror):
            scopes = _scope_rows(conn, scope_ids, "memory_revision")
            ranked = self._ranked_per_scope(conn, scope_ids, scopes, MEMORY_FAMILY, terms, limit, merge_cap)
            release_mirror()
            keys = [k for ks in ranked for k in ks]
            rows = {
                row[0]: row[1:]
                for row in (
                    conn.execute(
                        "SELECT version_key, entry_id, entry_version_id, text FROM memory_entry_versions"
                        f" WHERE version_key IN ({', '.join('?' * len(keys))}) AND removed_revision IS NULL",
                        keys,
                    )
                    if keys  # MySQL mode has no empty IN ()
                    else ()
                )
            }
        return [
            [
                MemoryHit(MemoryCitation(scopes[scope_id][1], rows[k][0], rows[k][1]), rows[k][2])
                for k in keys
                if k in rows
            ]
            for scope_id, keys in zip(scope_ids, ranked, strict=True)
        ]

    def _ranked_per_scope(
        self,
        conn: Conn,
        scope_ids: Sequence[str],
        scopes: dict[str, tuple[int, int]],
        family: str,
        terms: Sequence[str],
        limit: int,
        merge_cap: int | None,
    ) -> list[list[int]]:
        """Each Scope's ranked `doc_key`s, in `scope_ids` order, cut to `merge_cap`'s takes."""
        found = sql_search.ranked(
            conn, self._search, [key for key, _ in scopes.values()], family, terms, limit
        )
        ranked = [found[scopes[scope_id][0]] if scope_id in scopes else [] for scope_id in scope_ids]
        if merge_cap is None:
            return ranked
        takes = interleave_takes([len(keys) for keys in ranked], merge_cap)
        return [keys[:take] for keys, take in zip(ranked, takes, strict=True)]

    @contextmanager
    def _ranked_reads(self) -> Iterator[tuple[Conn, Callable[[], None]]]:
        """A read transaction under the search mirror's lock, and a call that releases the lock
        early once ranking is done (the rest of the body reads the transaction only). Begun
        after the lock, the transaction sees every change the mirror has replayed; inside
        `reading()` it may be older, which `sql_search.ranked` allows for."""
        lock = self._search.lock
        lock.acquire()
        held = [True]

        def release() -> None:
            if held[0]:
                held[0] = False
                lock.release()

        try:
            with self._transaction(write=False) as conn:
                yield conn, release
        finally:
            release()

    # Experience, Profile, Topic Memory and Candidates --------------------------------------------
    def propose(
        self, scope_id: str, family: str, target_artifact_id: str | None, proposal: Proposal
    ) -> CandidateRecord:
        with self._transaction(write=True) as conn:
            key = artifacts.scope_key(conn, scope_id, lock=True)
            return artifacts.insert_candidate(conn, key, family, target_artifact_id, proposal)

    def decide_candidate(
        self, scope_id: str, candidate_id: str, expected_version: int, approve: bool
    ) -> CandidateRecord:
        with self._transaction(write=True) as conn:
            key = artifacts.scope_key(conn, scope_id, lock=True)
            return artifacts.decide_candidate(conn, key, candidate_id, expected_version, approve)

    def get_candidate(self, scope_id: str, candidate_id: str) -> CandidateRecord | None:
        with self._transaction(write=False) as conn:
            return artifacts.load_candidate(conn, artifacts.scope_key(conn, scope_id), candidate_id)

    def list_candidates(
        self, scope_id: str, state: str | None, after_position: int, limit: int
    ) -> list[tuple[int, CandidateRecord]]:
        with self._transaction(write=False) as conn:
            key = artifacts.scope_key(conn, scope_id)
            return artifacts.list_candidates(conn, key, state, after_position, limit)

    def put_topic(
        self,
        scope_id: str,
        artifact_id: str | None,
        title: str,
        summary: str,
        detail: str,
        expected_revision: int | None,
    ) -> Topic:
        with self._transaction(write=True) as conn:
            key = artifacts.scope_key(conn, scope_id, lock=True)
            return artifacts.put_topic(conn, key, artifact_id, title, summary, detail, expected_revision)

    def get_artifact(self, scope_id: str, ref: ArtifactRef) -> ArtifactRevision | None:
        with self._transaction(write=False) as conn:
            key = artifacts.scope_key(conn, scope_id)
            if ref.family != MEMORY_FAMILY:
                return artifacts.read_revision(conn, key, ref.family, ref.artifact_id, ref.revision)
            head = conn.execute("SELECT memory_revision FROM scopes WHERE scope_key = ?", (key,)).fetchone()[
                0
            ]
            if ref.artifact_id != MEMORY_ARTIFACT_ID or ref.revision > head:
                return None
            rows = conn.execute(
                "SELECT v.entry_id, v.entry_version_id, v.text, e.kind, e.retired_revision FROM memory_entry_versions v"
                " JOIN memory_entries e ON e.scope_key = v.scope_key AND e.entry_id = v.entry_id"
                " WHERE v.scope_key = ? AND v.added_revision <= ? AND (v.removed_revision IS NULL OR v.removed_revision > ?)"
                " ORDER BY e.entry_number",
                (key, ref.revision, ref.revision),
            ).fetchall()
            return MemoryRevision(
                ref,
                tuple(
                    MemoryEntry(
                        MemoryCitation(ref.revision, eid, vid),
                        text,
                        kind,
                        "active" if retired is None else "retired",
                    )
                    for eid, vid, text, kind, retired in rows
                ),
            )

    def search_experience(
        self, scope_ids: Sequence[str], query: SearchQuery, limit: int, merge_cap: int | None = None
    ) -> list[list[Experience]]:
        found = self._search_heads(scope_ids, EXPERIENCE_FAMILY, query, limit, merge_cap)
        return [[a for a in hits if isinstance(a, Experience)] for hits in found]

    def search_topics(self, scope_id: str, query: SearchQuery, limit: int) -> list[Topic]:
        found = self._search_heads([scope_id], TOPIC_FAMILY, query, limit)[0]
        return [a for a in found if isinstance(a, Topic)]

    def latest_profiles(self, scope_ids: Sequence[str]) -> list[ProfileSnapshot | None]:
        with self._transaction(write=False) as conn:
            out: list[ProfileSnapshot | None] = []
            for scope_id in scope_ids:
                row = conn.execute("SELECT scope_key FROM scopes WHERE scope_id = ?", (scope_id,)).fetchone()
                out.append(None if row is None else artifacts.latest_profile(conn, int(row[0])))
            return out

    def _search_heads(
        self,
        scope_ids: Sequence[str],
        family: str,
        query: SearchQuery,
        limit: int,
        merge_cap: int | None = None,
    ) -> list[list[Experience | ProfileSnapshot | Topic]]:
        terms = query_terms(query)
        if not terms:
            return [[] for _ in scope_ids]
        with self._ranked_reads() as (conn, release_mirror):
            scopes = _scope_rows(conn, scope_ids)
            ranked = self._ranked_per_scope(conn, scope_ids, scopes, family, terms, limit, merge_cap)
            release_mirror()
            heads = artifacts.head_documents(conn, family, [k for ks in ranked for k in ks])
        return [[heads[k] for k in keys if k in heads] for keys in ranked]


# Helpers that run inside an open transaction ---------------------------------------------------


def _scope_rows(conn: Conn, scope_ids: Sequence[str], column: str = "0") -> dict[str, tuple[int, int]]:
    """`scope_key` and one more column of each existing Scope, by id."""
    if not scope_ids:
        return {}
    return {
        row[0]: (int(row[1]), int(row[2]))
        for row in conn.execute(
            f"SELECT scope_id, scope_key, {column} FROM scopes WHERE scope_id IN ({', '.join('?' * len(scope_ids))})",
            list(scope_ids),
        )
    }


def _load_scope(conn: Conn, scope_id: str) -> Scope | None:
    row = conn.execute(
        "SELECT scope_key, title, summary, version FROM scopes WHERE scope_id = ?", (scope_id,)
    ).fetchone()
    if row is None:
        return None
    scope_key, title, summary, version = row
    refs = tuple(
        r[0]
        for r in conn.execute(
            "SELECT s.scope_id FROM scope_references r JOIN scopes s ON s.scope_key = r.referenced_key"
            " WHERE r.scope_key = ? ORDER BY r.position",
            (scope_key,),
        )
    )
    return Scope(scope_id, title, summary, refs, version)


def _reference_keys(conn: Conn, references: Sequence[str]) -> list[int]:
    keys = []
    for i, ref in enumerate(references):
        row = conn.execute("SELECT scope_key FROM scopes WHERE scope_id = ?", (ref,)).fetchone()
        if row is None:
            raise InvalidRequest.single(
                "reference_not_found", ("context_references", i), "The referenced Scope was not found."
            )
        keys.append(int(row[0]))
    return keys


def _write_references(conn: Conn, scope_key: int, ref_keys: Sequence[int]) -> None:
    conn.executemany(
        "INSERT INTO scope_references (scope_key, position, referenced_key) VALUES (?, ?, ?)",
        [(scope_key, position, key) for position, key in enumerate(ref_keys)],
    )


def _scope_memory(conn: Conn, scope_id: str, lock: bool = False) -> tuple[int, int]:
    row = conn.execute(
        "SELECT scope_key, memory_revision FROM scopes WHERE scope_id = ?" + (" FOR UPDATE" if lock else ""),
        (scope_id,),
    ).fetchone()
    if row is None:
        raise ScopeNotFound()
    return int(row[0]), int(row[1])


def _citation_resolves(cited: int, head: int, added: int, removed: int | None, retired: int | None) -> bool:
    """Whether a citation at revision `cited` names this version: from the revision that added
    it, up to the head, until it was replaced. A version is cited as active while live, and as
    retired (a tombstone) from the revision that retired it on; either way the answer for one
    citation never changes."""
    if cited > head or cited < added:
        return False
    return removed is None or cited < removed or removed == retired


def _head_version(conn: Conn, scope_id: str, citation: MemoryCitation) -> tuple[int, int, int, int, str]:
    """(scope_key, head revision, version_key, version_number, kind) of a citation naming a head version."""
    scope_key, revision = _scope_memory(conn, scope_id, lock=True)
    row = conn.execute(
        "SELECT v.version_key, v.version_number, v.added_revision, v.removed_revision, e.kind, e.retired_revision"
        " FROM memory_entry_versions v JOIN memory_entries e ON e.scope_key = v.scope_key AND e.entry_id = v.entry_id"
        " WHERE v.scope_key = ? AND v.entry_id = ? AND v.entry_version_id = ?",
        (scope_key, citation.entry_id, citation.entry_version_id),
    ).fetchone()
    if row is None:
        raise EntryNotFound()
    version_key, version_number, added, removed, kind, retired = row
    if not _citation_resolves(citation.revision, revision, added, removed, retired):
        raise EntryNotFound()
    if removed is not None:
        raise RevisionConflict("The citation does not name the entry's current version.")
    return scope_key, revision, version_key, version_number, kind


def _insert_version(
    conn: Conn, scope_key: int, entry_id: str, version_number: int, text: str, revision: int
) -> str:
    version_id = f"{entry_id}-v{version_number}"
    cur = conn.execute(
        "INSERT INTO memory_entry_versions"
        " (scope_key, entry_id, version_number, entry_version_id, text, added_revision) VALUES (?, ?, ?, ?, ?, ?)",
        (scope_key, entry_id, version_number, version_id, text, revision),
    )
    sql_search.index_document(conn, scope_key, MEMORY_FAMILY, int(cur.lastrowid or 0), text)
    return version_id


def _unindex_version(conn: Conn, scope_key: int, version_key: int) -> None:
    text = conn.execute(
        "SELECT text FROM memory_entry_versions WHERE version_key = ?", (version_key,)
    ).fetchone()[0]
    sql_search.unindex_document(conn, scope_key, MEMORY_FAMILY, version_key, text)


def _commit_revision(
    conn: Conn,
    scope_key: int,
    revision: int,
    operation: str,
    entry_id: str,
    entry_counter: int | None = None,
) -> None:
    conn.execute(
        "INSERT INTO memory_revisions (scope_key, revision, operation, entry_id, created_at) VALUES (?, ?, ?, ?, ?)",
        (scope_key, revision, operation, entry_id, now()),
    )
    conn.execute(
        "UPDATE scopes SET memory_revision = ?, entry_counter = COALESCE(?, entry_counter) WHERE scope_key = ?",
        (revision, entry_counter, scope_key),
    )
