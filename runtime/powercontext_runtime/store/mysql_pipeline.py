"""Several write statements in one round trip to OceanBase (MySQL mode).

Each statement OceanBase runs costs a round trip: the client waits for its answer before sending
the next. A write whose later statements need no answer (the rows of a remember after its version
keys are known) sends them all as one multi-statement query, the connection having been opened
with CLIENT.MULTI_STATEMENTS. Values are escaped by pymysql as for any query (`Cursor.mogrify`),
an INSERT goes as one multi-row statement as `executemany` would send it, and a query is cut
before it could pass pymysql's own bound on a multi-row INSERT (1,024,000 bytes), so no packet
outgrows the server's limit. The server stops at the first statement that fails; its error is raised here, and the
store rolls the transaction back.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pymysql.cursors import RE_INSERT_VALUES

# Characters per query at most: in UTF-8 (4 bytes a character at most) within pymysql's bound on a
# multi-row INSERT (`Cursor.max_stmt_length`, 1,024,000 bytes); counted without encoding.
MAX_QUERY_CHARS = 256_000


def statements(cursor: Any, sql: str, rows: Sequence[Sequence[object]]) -> Iterator[str]:
    """`sql` (MySQL spelling, `%s` parameters) with each row's values in place: an INSERT as
    multi-row statements of at most about MAX_QUERY_CHARS, anything else once per row."""
    found = RE_INSERT_VALUES.match(sql)
    if found is None:
        for row in rows:
            yield cursor.mogrify(sql, tuple(row))
        return
    prefix, values, postfix = found.group(1) % (), found.group(2).rstrip(), (found.group(3) or "") % ()
    pending: list[str] = []
    size = len(prefix) + len(postfix)
    for row in rows:
        value = cursor.mogrify(values, tuple(row))
        if pending and size + len(value) + 1 > MAX_QUERY_CHARS:
            yield prefix + ",".join(pending) + postfix
            pending, size = [], len(prefix) + len(postfix)
        pending.append(value)
        size += len(value) + 1
    if pending:
        yield prefix + ",".join(pending) + postfix


def queries(rendered: Iterator[str]) -> Iterator[str]:
    """The statements joined into multi-statement queries of at most about MAX_QUERY_CHARS each
    (a statement longer than that alone)."""
    pending: list[str] = []
    size = 0
    for statement in rendered:
        if pending and size + len(statement) + 1 > MAX_QUERY_CHARS:
            yield ";".join(pending)
            pending, size = [], 0
        pending.append(statement)
        size += len(statement) + 1
    if pending:
        yield ";".join(pending)


def run(cursor: Any, query: str) -> None:
    """Send a multi-statement query and read every statement's answer (raising the first error)."""
    cursor.execute(query)
    while cursor.nextset():
        pass
