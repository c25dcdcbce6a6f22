"""The connection every SQL module of the store takes: search's `Conn` protocol (search sits below
the store and runs its SQL on the same connections).

Its own module, importing nothing of the store, so that the schema and per-family modules need not
import `backends` (which imports the schemas).
"""

from __future__ import annotations

from ..search import Conn, Cursor, Statement

__all__ = ["Conn", "Cursor", "Statement"]
