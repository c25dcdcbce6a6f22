"""Remember: new Memory entries, one or a batch, each its own Memory revision, unless it
duplicates an active entry (`memory_hygiene`): then it stores nothing and is cited as that one.

Each write takes the Scope's row lock first, so the duplicate check and the revisions it commits
see every other write to the Scope before or after it, never during.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .. import search
from ..errors import RevisionConflict, ScopeNotFound
from ..models import MEMORY_FAMILY, MemoryCitation, MemoryEntry
from . import clock, memory_hygiene
from .conn import Conn, inserted_key
from .op import writes_after

# A new entry: its text, kind and expiry (None: never).
NewEntry = tuple[str, str, str | None]


@dataclass(frozen=True, slots=True)
class Remembered(MemoryEntry):
    """A remember's answer: the new entry, or the active one it duplicates (`duplicate`)."""

    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class _Incoming:
    """What a remember works out before its transaction: each text as search compares it and
    that form's hash, the first entry of the batch that reads the same (itself when none before it
    does, or when duplicates are kept), and the tokenised texts of those first entries, in order."""

    comparables: list[str]
    hashes: list[int]
    first: list[int]
    tokenised: search.TokenisedDocuments


# Tokenising is most of a remember's Python work and needs no database: done before the write
# lock, another worker's batch can be written meanwhile.
def _prepare(
    scope_id: str, entries: Sequence[NewEntry], expected_revision: int | None, deduplicate: bool = False
) -> _Incoming:
    # Normalised once: the comparable form and the terms both start from it.
    normalised = [search.normalised_text(text) for text, _, _ in entries]
    comparables = [search.comparable_text(text) for text in normalised]
    seen: dict[str, int] = {}
    first = [seen.setdefault(c, i) if deduplicate else i for i, c in enumerate(comparables)]
    unique = [normalised[i] for i, f in enumerate(first) if f == i]
    hashes = [memory_hygiene.text_hash(c) for c in comparables]
    return _Incoming(comparables, hashes, first, search.tokenise_documents(unique))


def _prepare_one(
    scope_id: str,
    text: str,
    kind: str,
    expected_revision: int | None,
    expires_at: str | None = None,
    deduplicate: bool = False,
) -> _Incoming:
    return _prepare(scope_id, [(text, kind, expires_at)], expected_revision, deduplicate)


@writes_after(_prepare_one)
def remember(
    conn: Conn,
    incoming: _Incoming,
    scope_id: str,
    text: str,
    kind: str,
    expected_revision: int | None,
    expires_at: str | None = None,
    deduplicate: bool = False,
) -> Remembered:
    """Add an entry, committing the next Memory revision; or, when an active entry reads the same
    (and `deduplicate`), answer with that entry, storing nothing."""
    [(citation, duplicate)], existing = _add_entries(
        conn, incoming, scope_id, [(text, kind, expires_at)], expected_revision, deduplicate
    )
    if duplicate:
        found = existing[incoming.comparables[0]]
        return Remembered(found.citation, found.text, found.kind, "active", found.expires_at, duplicate=True)
    return Remembered(citation, text, kind, "active", expires_at)


@writes_after(_prepare)
def remember_batch(
    conn: Conn,
    incoming: _Incoming,
    scope_id: str,
    entries: Sequence[NewEntry],
    expected_revision: int | None,
    deduplicate: bool = False,
) -> list[tuple[MemoryCitation, bool]]:
    """Add (text, kind, expiry) entries in order in one transaction, one Memory revision each;
    with `deduplicate`, an entry that reads the same as an active entry or an earlier one of the
    batch stores nothing and is cited as that one. Each citation with whether it is such a one."""
    return _add_entries(conn, incoming, scope_id, entries, expected_revision, deduplicate)[0]


def _add_entries(
    conn: Conn,
    incoming: _Incoming,
    scope_id: str,
    entries: Sequence[NewEntry],
    expected_revision: int | None,
    deduplicate: bool,
) -> tuple[list[tuple[MemoryCitation, bool]], dict[str, MemoryEntry]]:
    """Add the entries that are not duplicates in order, one Memory revision each, with a
    statement per table rather than per entry: a batch of 500 costs about as many round trips as
    one remember. Each entry's citation, with whether it duplicates another; and the active
    entries found equal, by comparable text."""
    # The index's generation comes with the lock (every writer of it holds this lock too), so the
    # index write needs no read of its own: a round trip less on OceanBase.
    row = conn.execute(
        "SELECT s.scope_key, s.memory_revision, s.entry_counter, st.generation FROM scopes s"
        " LEFT JOIN search_stats st ON st.scope_key = s.scope_key AND st.family = ?"
        " WHERE s.scope_id = ? FOR UPDATE",
        (MEMORY_FAMILY, scope_id),
    ).fetchone()
    if row is None:
        raise ScopeNotFound()
    scope_key, revision, counter, generation = row
    if expected_revision is not None and expected_revision != revision:
        raise RevisionConflict("The expected Memory revision is stale.")
    firsts = [i for i, f in enumerate(incoming.first) if f == i]
    wanted = {incoming.hashes[i]: incoming.comparables[i] for i in firsts}
    existing = (
        memory_hygiene.active_heads(conn, scope_key, revision, wanted, clock.now()) if deduplicate else {}
    )
    stored = [i for i in firsts if incoming.comparables[i] not in existing]
    kept = {i: n for n, i in enumerate(firsts)}
    tokenised = search.keep_documents(incoming.tokenised, [kept[i] for i in stored])
    cited = {
        i: existing[incoming.comparables[i]].citation for i in firsts if incoming.comparables[i] in existing
    }
    if stored:
        added = _insert_entries(
            conn,
            tokenised,
            scope_key,
            (revision, counter, int(generation or 0)),
            [(entries[i], incoming.hashes[i]) for i in stored],
        )
        cited.update(zip(stored, added, strict=True))
    flagged = [
        (cited[f], f != i or incoming.comparables[i] in existing) for i, f in enumerate(incoming.first)
    ]
    return flagged, existing


def _insert_entries(
    conn: Conn,
    tokenised: search.TokenisedDocuments,
    scope_key: int,
    heads: tuple[int, int, int],
    entries: Sequence[tuple[NewEntry, int]],
) -> list[MemoryCitation]:
    """Insert (entry, its comparable text's hash) after `heads`: the Scope's Memory revision, entry
    number and Memory index generation; `tokenised` is `search.tokenise_documents` of their texts.
    The version rows first (their keys are the index's document keys), then every other row in
    one go: on OceanBase, three round trips (two for one entry) whatever the number of entries."""
    revision, counter, generation = heads
    added = [
        (revision + i, counter + i, f"entry-{counter + i}", entry, hashed)
        for i, (entry, hashed) in enumerate(entries, start=1)
    ]
    versions = [
        (scope_key, entry_id, 1, f"{entry_id}-v1", text, rev, expires_at)
        for rev, _, entry_id, (text, _, expires_at), _ in added
    ]
    doc_keys = _insert_versions(conn, scope_key, versions)
    created = clock.now()
    last_revision, last_number = added[-1][0], added[-1][1]
    conn.execute_all(
        [
            (
                "INSERT INTO memory_entries (scope_key, entry_id, entry_number, kind, head_version, text_hash)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (scope_key, entry_id, number, kind, 1, hashed)
                    for _, number, entry_id, (_, kind, _), hashed in added
                ],
            ),
            *search.document_writes(scope_key, MEMORY_FAMILY, doc_keys, tokenised, generation),
            (
                "INSERT INTO memory_revisions (scope_key, revision, operation, entry_id, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                [(scope_key, rev, "remember", entry_id, created) for rev, _, entry_id, _, _ in added],
            ),
            (
                "UPDATE scopes SET memory_revision = ?, entry_counter = ? WHERE scope_key = ?",
                [(last_revision, last_number, scope_key)],
            ),
        ]
    )
    return [MemoryCitation(rev, entry_id, f"{entry_id}-v1") for rev, _, entry_id, _, _ in added]


# Every value a parameter: pymysql sends a batch as one multi-row INSERT only when the VALUES list
# holds nothing else.
_INSERT_VERSION = (
    "INSERT INTO memory_entry_versions (scope_key, entry_id, version_number, entry_version_id, text,"
    " added_revision, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def _insert_versions(conn: Conn, scope_key: int, versions: Sequence[tuple[object, ...]]) -> list[int]:
    """Insert the version rows; their `version_key`s (the index's document keys), in order."""
    if len(versions) == 1:  # the key the database gave the one row: no read after
        return [inserted_key(conn.execute(_INSERT_VERSION, versions[0]))]
    conn.executemany(_INSERT_VERSION, versions)
    # Looked up through the (scope_key, entry_version_id) unique index: `added_revision` has none,
    # and a range over it scanned the whole Scope on every remember.
    version_ids = [str(version[3]) for version in versions]
    keys = dict(
        conn.execute(
            "SELECT entry_version_id, version_key FROM memory_entry_versions"
            f" WHERE scope_key = ? AND entry_version_id IN ({', '.join('?' * len(version_ids))})",
            (scope_key, *version_ids),
        ).fetchall()
    )
    return [int(keys[v]) for v in version_ids]
