"""Versioned schema migrations, applied in order, each once, each in one transaction.

A migration is SQL, optionally followed by a data step (`after`) that fills new structures from
existing rows, so an upgraded database ends up exactly like a new one. Both backends number their
migrations alike: version N means the same schema on either.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .conn import Conn


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    sql: str
    after: Callable[[Conn], None] | None = None


def statements(script: str) -> list[str]:
    """Split a migration into statements (no script runner keeps the transaction open)."""
    code = "\n".join(line for line in script.splitlines() if not line.strip().startswith("--"))
    return [statement.strip() for statement in code.split(";") if statement.strip()]


def apply(conn: Conn, migrations: tuple[Migration, ...], stamp: str) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at VARCHAR(64) NOT NULL)"
    )
    applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
    for migration in migrations:
        if migration.version in applied:
            continue
        for statement in statements(migration.sql):
            conn.execute(statement)
        if migration.after is not None:
            migration.after(conn)
        conn.execute("INSERT INTO schema_migrations VALUES (?, ?)", (migration.version, stamp))
