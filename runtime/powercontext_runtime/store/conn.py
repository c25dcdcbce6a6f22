"""The connection every SQL module of the store takes: search's `Conn` protocol (search sits below
the store and runs its SQL on the same connections).

Its own module, importing nothing of the store, so that the schema and per-family modules need not
import `backends` (which imports the schemas).
"""

from __future__ import annotations

from ..search import Conn, Cursor, Query, Statement

__all__ = ["Conn", "Cursor", "Query", "Statement", "inserted_key"]


def inserted_key(cursor: Cursor) -> int:
    """The key the database gave the row an INSERT just added. Both drivers report it; were one
    not to, the write fails (rolled back whole) rather than store rows under a made-up key."""
    key = cursor.lastrowid
    if not key:
        raise RuntimeError("the database did not report the key of the row just inserted")
    return int(key)
