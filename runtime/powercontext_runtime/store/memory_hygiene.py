"""What keeps Memory clean, in the store: the duplicate check and expiry.

Duplicates: each active entry keeps a hash of its head's text as search compares it
(`search.comparable_text`: NFKC, case folding, whitespace collapsed) in `memory_entries.text_hash`,
indexed per Scope; retiring an entry clears it and erasing it deletes it, so a remember finds an
equal active head through one indexed lookup, then compares the texts themselves (a hash can
collide).

Expiry: a version's `expires_at` is the store's time form (`clock`), compared as text with the
time of the read; an expired head is left out of search before its ranking is cut, never deleted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from hashlib import blake2b
from typing import Any

from .. import search
from ..models import MemoryCitation, MemoryEntry
from .conn import Conn, Query

# Hashes per lookup statement: a batch holds at most 1,000 texts.
_LOOKUP_CHUNK = 500
# Entries hashed per statement when filling the hashes in.
_FILL_PAGE = 100


def text_hash(comparable: str) -> int:
    """A 63-bit hash of a comparable text: fits a signed BIGINT on either backend."""
    return int.from_bytes(blake2b(comparable.encode("utf-8"), digest_size=8).digest(), "big") >> 1


def live(expires_at: str | None, at: str) -> bool:
    """Whether a version with this expiry is recalled at the instant `at`."""
    return expires_at is None or expires_at > at


def active_heads(
    conn: Conn, scope_key: int, revision: int, wanted: Mapping[int, str], at: str
) -> dict[str, MemoryEntry]:
    """For each comparable text (by its `text_hash`), the oldest active, unexpired entry whose
    head reads the same, cited at `revision` (the Scope's Memory head); texts no such entry holds
    are absent."""
    found: dict[str, MemoryEntry] = {}
    hashes = list(wanted)
    for start in range(0, len(hashes), _LOOKUP_CHUNK):
        chunk = hashes[start : start + _LOOKUP_CHUNK]
        # Ordered here, not in SQL: an ORDER BY entry_number leads the planner to walk the Scope's
        # entries in that order instead of looking the hashes up.
        rows = conn.execute(
            "SELECT e.entry_number, e.text_hash, e.entry_id, v.entry_version_id, v.text, e.kind, v.expires_at"
            " FROM memory_entries e JOIN memory_entry_versions v ON v.scope_key = e.scope_key"
            " AND v.entry_id = e.entry_id AND v.version_number = e.head_version"
            f" WHERE e.scope_key = ? AND e.text_hash IN ({', '.join('?' * len(chunk))})"
            " AND e.retired_revision IS NULL",
            (scope_key, *chunk),
        ).fetchall()
        for _, hashed, entry_id, version_id, text, kind, expires_at in sorted(rows):
            comparable = wanted[int(hashed)]
            if comparable in found or not live(expires_at, at):
                continue
            if search.comparable_text(text) == comparable:
                citation = MemoryCitation(revision, entry_id, version_id)
                found[comparable] = MemoryEntry(citation, text, kind, "active", expires_at)
    return found


def set_text_hash(conn: Conn, scope_key: int, entry_id: str, text: str | None) -> None:
    """Record the entry's new head text (None: it is no longer active)."""
    hashed = None if text is None else text_hash(search.comparable_text(text))
    conn.execute(
        "UPDATE memory_entries SET text_hash = ? WHERE scope_key = ? AND entry_id = ?",
        (hashed, scope_key, entry_id),
    )


def fill_text_hashes(conn: Conn, scope_key: int | None = None) -> None:
    """Hash the head text of every active entry (of one Scope, or all): migration 10's data step,
    and an import's. A page of entries at a time, so memory stays flat however many there are."""
    scope_keys = (
        [int(row[0]) for row in conn.execute("SELECT scope_key FROM scopes").fetchall()]
        if scope_key is None
        else [scope_key]
    )
    for key in scope_keys:
        after = 0
        while True:
            rows = conn.execute(
                "SELECT e.entry_number, e.entry_id, v.text FROM memory_entries e JOIN memory_entry_versions v"
                " ON v.scope_key = e.scope_key AND v.entry_id = e.entry_id AND v.version_number = e.head_version"
                " WHERE e.scope_key = ? AND e.retired_revision IS NULL AND e.entry_number > ?"
                " ORDER BY e.entry_number LIMIT ?",
                (key, after, _FILL_PAGE),
            ).fetchall()
            conn.executemany(
                "UPDATE memory_entries SET text_hash = ? WHERE scope_key = ? AND entry_id = ?",
                [(text_hash(search.comparable_text(text)), key, entry_id) for _, entry_id, text in rows],
            )
            if len(rows) < _FILL_PAGE:
                break
            after = int(rows[-1][0])


def expired_heads(conn: Conn, scope_keys: Sequence[int], at: str) -> dict[int, list[int]]:
    """The `version_key`s of each Scope's head versions that have expired by `at` (through the
    (scope_key, removed_revision, expires_at) index: only expired heads are read)."""
    if not scope_keys:  # MySQL mode has no empty IN ()
        return {}
    return expired_of(
        conn.execute(
            "SELECT scope_key, version_key FROM memory_entry_versions"
            f" WHERE scope_key IN ({', '.join('?' * len(scope_keys))}) AND removed_revision IS NULL"
            " AND expires_at <= ?",
            (*scope_keys, at),
        ).fetchall()
    )


def expired_heads_joined_query(where: str, params: Sequence[object], at: str) -> Query:
    """`expired_heads`' query for the Scopes that `where` selects from `scopes`, for a caller to
    send with others before it knows their keys (`Conn.read_all`); `expired_of` reads its rows.
    A join led by those Scopes, held to it by a hint (a comment to SQLite): OceanBase may plan a
    key `IN (SELECT ...)` as a scan of every Scope's versions."""
    return (
        "SELECT /*+ LEADING(k v) USE_NL(v) */ v.scope_key, v.version_key FROM scopes k"
        " JOIN memory_entry_versions v ON v.scope_key = k.scope_key"
        f" WHERE {where} AND v.removed_revision IS NULL AND v.expires_at <= ?",
        (*params, at),
    )


def expired_of(rows: Sequence[Any]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for scope_key, version_key in rows:
        found.setdefault(int(scope_key), []).append(int(version_key))
    return found
