"""OceanBase for the benchmark without installing one: the seekdb server that the `pylibseekdb`
wheel ships, started on a free loopback port in a scratch directory and stopped by pid.

`BENCH_OCEANBASE_URL=seekdb` selects it; any other value is used as the database URL template.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit


def create_database(url: str) -> None:
    """CREATE DATABASE IF NOT EXISTS for the database a mysql+pymysql:// URL names."""
    import pymysql

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not name.replace("_", "").isalnum():
        raise ValueError(f"unexpected database name {name!r}")
    conn = pymysql.connect(
        host=parts.hostname,
        port=parts.port or 2881,
        user=parts.username or "root",
        password=parts.password or "",
    )
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE IF NOT EXISTS {name}")
    finally:
        conn.close()


class Seekdb:
    """The seekdb launcher the tests use too (devtools/seekdb.py), with the benchmark's database naming."""

    def __init__(self, base_dir: Path) -> None:
        from devtools.seekdb import SeekdbServer

        base_dir.mkdir(parents=True, exist_ok=True)
        self._server = SeekdbServer(base_dir)

    @property
    def url_template(self) -> str:
        return f"mysql+pymysql://root@127.0.0.1:{self._server.port}/pcbench_{{n}}"

    def stop(self) -> None:
        self._server.stop()
