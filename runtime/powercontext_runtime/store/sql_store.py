"""The store: every operation as SQL over one `Backend` (SQLite embedded, or OceanBase).

One transaction per operation. Writes first lock the Scope row they change (`FOR UPDATE`), so
writers to one Scope queue behind each other under OceanBase's READ COMMITTED isolation just as
they do behind SQLite's database lock: a counter or revision is read and bumped by one writer at a
time, and a stale `expected_*` or citation is a 409, never a lost or duplicated revision.

This module holds connections, transactions and snapshots. The SQL of each operation lives in its
family's module (`scopes`, `memory`, `candidates`, `topics`, `artifacts`) as a function of an open
`Conn`, marked with how it runs (`op.py`), and `SqlStore.run` runs it in one transaction; the
searches, which span families, are composed here: `search` ranks document keys inside the store's
transaction and the store turns them into hits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress

from ..errors import PowerContextError, RetrievalUnavailable, RevisionConflict, ScopeNotFound
from ..models import (
    EXPERIENCE_FAMILY,
    MEMORY_FAMILY,
    TOPIC_FAMILY,
    Experience,
    MemoryCitation,
    MemoryHit,
    ProfileSnapshot,
    RankedExperience,
    RankedTopic,
    Topic,
)
from ..search import (
    IndexMerger,
    IndexStats,
    SearchMirror,
    SearchQuery,
    WriterGate,
    index_stats_joined_query,
    merge_due,
    query_terms,
    ranked_per_scope,
    ranked_reads,
    stats_of,
)
from ..vectors import EmbeddingLeg, VectorEmbedder, VectorRecall
from ..vectors.embedder import MEMORY_SOURCE
from ..vectors.leg import Vectors
from . import (
    artifact_vectors,
    artifacts,
    clock,
    memory,
    memory_hygiene,
    migrations,
    scope_export,
    scope_transfer,
    scopes,
)
from .backends import Backend
from .clock import now
from .conn import Conn
from .op import P, R, StoreOp

# The embedder's queues, every family's: Memory's head versions, Experience's and Topic Memory's
# head revisions, each without a vector of the model yet.
VECTOR_SOURCES = (MEMORY_SOURCE, artifact_vectors.SOURCE)


class SqlStore:
    def __init__(self, backend: Backend, search_mirror: SearchMirror | None = None) -> None:
        self._backend = backend
        self._local = threading.local()
        self._connections: dict[threading.Thread, Conn] = {}  # by the thread that uses it
        self._lock = threading.Lock()
        self._search = search_mirror or SearchMirror()
        self._merger = IndexMerger(self.merge_index)
        self._writer_gate = WriterGate()
        self._vectors: VectorRecall | None = None
        self._embedder: VectorEmbedder | None = None
        self._migrate()
        self._merger.nudge()  # carry on a merge a previous process left unfinished

    # Connections and transactions ----------------------------------------------------------------
    def _conn(self) -> Conn:
        conn: Conn | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._backend.connect()
            self._local.conn = conn
            with self._lock:
                # A thread that ended (the server's thread pool ends a thread idle for 10 s and
                # starts another when busy again) leaves its connection: close it, or every burst
                # after a pause would keep a new set open, each with its own page cache.
                for thread in [t for t in self._connections if not t.is_alive()]:
                    with suppress(*self._backend.errors):
                        self._backend.close(self._connections.pop(thread))
                self._connections[threading.current_thread()] = conn
        return conn

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Every read on this thread inside shares one read transaction, hence one snapshot, and
        one embedding of each query text (a prepare searching three families asks the endpoint once)."""
        if getattr(self._local, "reading", None) is not None:
            yield
            return
        with self._transaction(write=False) as conn:
            self._local.reading = conn
            self._local.query_vectors = {}
            self._local.scope_keys = {}
            self._local.index_stats = (set(), {})
            try:
                yield
            finally:
                self._local.reading = None
                self._local.query_vectors = None
                self._local.scope_keys = None
                self._local.index_stats = None

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
        except errors as exc:
            raise RetrievalUnavailable() from exc
        try:
            if write:  # reads, prepare's among them, never wait on the gate
                with self._writer_gate.waiting():
                    self._backend.begin(conn, write)
            else:
                self._backend.begin(conn, write)
        except errors as exc:
            self._discard(conn)
            raise RetrievalUnavailable() from exc
        try:
            yield conn
            self._backend.commit(conn)
        except BaseException as exc:
            try:
                self._backend.rollback(conn)
            except errors:
                self._discard(conn)
            if isinstance(exc, self._backend.duplicate_key) and not isinstance(exc, PowerContextError):
                # Two writers raced to create the same row: the later one lost.
                raise RevisionConflict("A concurrent write changed the same data.") from exc
            if isinstance(exc, errors):
                raise RetrievalUnavailable() from exc
            raise
        if write:
            self._after_write()

    def _after_write(self) -> None:
        """Wake the threads that follow writes: the index merger, and the embedder when it runs."""
        self._merger.nudge()
        if self._embedder is not None:
            self._embedder.nudge()

    def _discard(self, conn: Conn) -> None:
        """A broken connection is closed and never reused (the next transaction opens another)."""
        self._local.conn = None
        with self._lock:
            thread = threading.current_thread()
            if self._connections.get(thread) is conn:
                del self._connections[thread]
        with suppress(*self._backend.errors):
            self._backend.close(conn)

    def _purge(self) -> None:
        try:
            self._backend.purge(self._conn())
        except self._backend.errors as exc:  # the erasure itself is committed
            raise RetrievalUnavailable() from exc

    def _migrate(self) -> None:
        with self._transaction(write=True) as conn:
            migrations.apply(conn, self._backend.migrations, now())

    @property
    def reads_in_process(self) -> bool:
        return self._backend.reads_in_process

    def ping(self) -> None:
        with self._transaction(write=False) as conn:
            conn.execute("SELECT 1").fetchone()

    def merge_index(
        self, stopping: Callable[[], bool] = lambda: False, pause: Callable[[float], None] = time.sleep
    ) -> int:
        """Carry every due or unfinished index merge through (`search.merge_due`); the number of
        chunks merged. The merger thread calls it; so can anything that wants the index merged
        now (an import, a test). `pause` waits between chunks where the backend asks for it."""
        return merge_due(
            self._transaction, self._writer_gate, stopping, self._backend.merge_pause_max_s, pause
        )

    def use_embeddings(self, leg: EmbeddingLeg) -> None:
        """Turn on the embedding leg: Memory, Experience and Topic Memory recall fuse it in, and a
        thread fills in vectors."""
        self._vectors = VectorRecall(leg)
        self._embedder = VectorEmbedder(leg, self._transaction, VECTOR_SOURCES)
        self._embedder.nudge()  # embed what is already stored without a vector of this model

    def held_vector_bytes(self) -> int:
        return 0 if self._vectors is None else self._vectors.index.held_bytes

    def close(self) -> None:
        self._merger.stop()
        if self._embedder is not None:
            self._embedder.stop()
        with self._lock:
            for conn in self._connections.values():
                with suppress(*self._backend.errors):
                    self._backend.close(conn)
            self._connections.clear()
        self._local = threading.local()
        self._backend.stop()

    # Operations ---------------------------------------------------------------------------------
    def run(self, op: StoreOp[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        step = op.start(*args, **kwargs)  # before the transaction: see `op.writes_after`
        with self._transaction(write=op.write) as conn:
            result = step(conn)
        if op.purge:
            self._purge()
            if self._embedder is not None:  # the erased keys may be handed out again
                self._embedder.rewind()
        return result

    def latest_profiles(self, scope_ids: Sequence[str]) -> list[ProfileSnapshot | None]:
        return self.run(artifacts.latest_profiles, scope_ids)

    # Moving a Scope -----------------------------------------------------------------------------
    # Each on a connection of its own: the export's snapshot outlives the call that opened it, and
    # the import's transaction spans the whole stream.
    def export_scope(self, scope_id: str) -> Iterator[bytes]:
        try:
            return scope_export.export_chunks(self._backend, scope_id)
        except scope_transfer.TransferRefused as exc:  # the only refusal of a served database
            raise ScopeNotFound() from exc
        except scope_transfer.TransferFailed as exc:
            raise RetrievalUnavailable() from exc

    def import_scope(
        self, scope_id: str, lines: Iterable[bytes], check_references: Callable[[Sequence[str]], None]
    ) -> tuple[dict[str, int], int]:
        try:
            report = scope_transfer.import_lines(self._backend, lines, scope_id, check_references)
        except scope_transfer.TransferFailed as exc:
            raise RetrievalUnavailable() from exc
        self._after_write()  # the import's pages wait in the index log, its entries for their vectors
        return report.rows, report.indexed

    # Search -------------------------------------------------------------------------------------
    def search_memory(
        self, scope_ids: Sequence[str], query: SearchQuery, limit: int, merge_cap: int | None = None
    ) -> list[list[MemoryHit]]:
        terms = query_terms(query)
        if not terms:
            return [[] for _ in scope_ids]
        vector = self._query_vector(query)
        with self._ranked_reads() as (conn, release_mirror):
            # Expired heads are left out before each Scope's hits are cut to `limit` (by either
            # leg): an expired entry takes no live one's place.
            scope_rows, stats, expired = self._scope_reads(conn, scope_ids, clock.now())
            ranked = self._ranked(
                conn,
                release_mirror,
                scope_ids,
                scope_rows,
                stats,
                MEMORY_FAMILY,
                terms,
                vector,
                limit,
                merge_cap,
                expired,
            )
            versions = memory.head_versions(conn, [k for ks in ranked for k, _ in ks])
        return [
            [
                MemoryHit(
                    MemoryCitation(scope_rows[scope_id][1], versions[k][0], versions[k][1]),
                    versions[k][2],
                    score,
                    versions[k][3],
                )
                for k, score in keys
                if k in versions
            ]
            for scope_id, keys in zip(scope_ids, ranked, strict=True)
        ]

    def search_experience(
        self, scope_ids: Sequence[str], query: SearchQuery, limit: int, merge_cap: int | None = None
    ) -> list[list[RankedExperience]]:
        found = self._search_heads(scope_ids, EXPERIENCE_FAMILY, query, limit, merge_cap)
        return [
            [RankedExperience(a.ref, a.fields, score) for a, score in hits if isinstance(a, Experience)]
            for hits in found
        ]

    def search_topics(self, scope_id: str, query: SearchQuery, limit: int) -> list[RankedTopic]:
        found = self._search_heads([scope_id], TOPIC_FAMILY, query, limit)[0]
        return [
            RankedTopic(a.ref, a.title, a.summary, a.detail, score)
            for a, score in found
            if isinstance(a, Topic)
        ]

    def _search_heads(
        self,
        scope_ids: Sequence[str],
        family: str,
        query: SearchQuery,
        limit: int,
        merge_cap: int | None = None,
    ) -> list[list[tuple[Experience | ProfileSnapshot | Topic, float]]]:
        terms = query_terms(query)
        if not terms:
            return [[] for _ in scope_ids]
        vector = self._query_vector(query)
        with self._ranked_reads() as (conn, release_mirror):
            scope_rows, stats, _ = self._scope_reads(conn, scope_ids)
            ranked = self._ranked(
                conn, release_mirror, scope_ids, scope_rows, stats, family, terms, vector, limit, merge_cap
            )
            heads = artifacts.head_documents(conn, family, [k for ks in ranked for k, _ in ks])
        return [[(heads[k], score) for k, score in keys if k in heads] for keys in ranked]

    def _scope_reads(
        self, conn: Conn, scope_ids: Sequence[str], expired_at: str | None = None
    ) -> tuple[dict[str, tuple[int, int]], IndexStats, dict[int, list[int]]]:
        """Each existing Scope's key and Memory revision (`scopes.keys_by_id`), every family's
        index statistics of them (`search.index_stats`) and, given `expired_at`, their Memory
        heads expired by then (`memory_hygiene.expired_heads`): none needs another's answer, so
        on OceanBase they go in one round trip. Inside `reading()` the keys and statistics are
        asked of the database once: a prepare searches up to four families of the same Scopes in
        one snapshot."""
        if not scope_ids:
            return {}, {}, {}
        kept_keys: dict[str, tuple[int, int]] | None = getattr(self._local, "scope_keys", None)
        kept_stats: tuple[set[int], IndexStats] | None = getattr(self._local, "index_stats", None)
        rows = None
        if kept_keys is not None and all(scope_id in kept_keys for scope_id in scope_ids):
            rows = {scope_id: kept_keys[scope_id] for scope_id in scope_ids}
        stats = None
        if rows is not None and kept_stats is not None and all(k in kept_stats[0] for k, _ in rows.values()):
            stats = kept_stats[1]
        where, params = scopes.ids_where(scope_ids)
        queries = [] if rows is not None else [scopes.keys_by_id_query(scope_ids, "memory_revision")]
        if stats is None:
            queries.append(index_stats_joined_query("scopes", where, params))
        if expired_at is not None:
            queries.append(memory_hygiene.expired_heads_joined_query(where, params, expired_at))
        answers = iter(conn.read_all(queries) if queries else ())
        if rows is None:
            rows = scopes.keys_of(next(answers))
            if kept_keys is not None:
                kept_keys.update(rows)
        if stats is None:
            stats = stats_of(next(answers))
            if kept_stats is not None:
                kept_stats[0].update(key for key, _ in rows.values())
                kept_stats[1].update(stats)
        expired = memory_hygiene.expired_of(next(answers)) if expired_at is not None else {}
        return rows, stats, expired

    def _query_vector(self, query: SearchQuery) -> Vectors | None:
        """The query's vector, or None (lexical recall only: the leg is off or the endpoint
        failed). Inside `reading()` it is asked for once per text, a failure included."""
        if self._vectors is None:
            return None
        asked: dict[str, Vectors | None] | None = getattr(self._local, "query_vectors", None)
        if asked is not None and query.text in asked:
            return asked[query.text]
        vector = self._vectors.query_vector(query.text)
        if asked is not None:
            asked[query.text] = vector
        return vector

    def _ranked(
        self,
        conn: Conn,
        release_mirror: Callable[[], None],
        scope_ids: Sequence[str],
        scope_rows: dict[str, tuple[int, int]],
        stats: IndexStats,
        family: str,
        terms: Sequence[str],
        vector: Vectors | None,
        limit: int,
        merge_cap: int | None,
        excluded: Mapping[int, Collection[int]] | None = None,
    ) -> list[list[tuple[int, float]]]:
        """Each Scope's ranked `doc_key`s with their scores, in `scope_ids` order, without its
        `excluded` ones, each cut to its share of the merged pool (`search.ranked_per_scope`);
        with a query `vector`, each Scope's lexical ranking fused with its vectors' cosines first.
        `stats`: the Scopes' index statistics (`_scope_reads`)."""
        keys = [scope_rows[scope_id][0] if scope_id in scope_rows else None for scope_id in scope_ids]
        if self._vectors is None or vector is None:
            ranked = ranked_per_scope(
                conn, self._search, keys, family, terms, limit, merge_cap, excluded, stats
            )
            release_mirror()
            return ranked
        # Fused first, then cut to the pool's shares.
        depth = self._vectors.lexical_depth(limit)
        ranked = ranked_per_scope(conn, self._search, keys, family, terms, depth, None, excluded, stats)
        release_mirror()
        return self._vectors.fuse(conn, family, keys, ranked, vector, limit, merge_cap, excluded)

    def _ranked_reads(self) -> AbstractContextManager[tuple[Conn, Callable[[], None]]]:
        return ranked_reads(self._search, self._transaction)
