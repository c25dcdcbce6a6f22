"""Composition root: settings → store → application. The one place that picks a backend."""

from __future__ import annotations

from .application import ScopedContextApplication
from .config import ConfigurationError, Settings
from .search import SearchMirror
from .store import Store
from .store.backends import Backend, MysqlBackend, SqliteBackend, mysql_target_from_url, sqlite_path_from_url
from .store.sql_store import SqlStore

# The search mirror's budget counts postings of about 16 bytes each (search/_mirror.py).
POSTING_BYTES = 16


def backend_for(database_url: str) -> Backend:
    """`sqlite:///path` (embedded) or `mysql+pymysql://user:password@host:port/db` (OceanBase)."""
    try:
        if database_url.startswith("sqlite:"):
            return SqliteBackend(sqlite_path_from_url(database_url))
        if database_url.startswith("mysql"):
            return MysqlBackend(mysql_target_from_url(database_url))
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    raise ConfigurationError(
        "POWERCONTEXT_SERVER_DATABASE_URL must start with sqlite:/// or mysql+pymysql:// (OceanBase)."
    )


def open_store(database_url: str, search_cache_mb: int | None = None) -> Store:
    """The store of `database_url`; `search_cache_mb` bounds its search mirror (default: the mirror's)."""
    mirror = None
    if search_cache_mb is not None:
        mirror = SearchMirror(max_postings=search_cache_mb * 2**20 // POSTING_BYTES)
    return SqlStore(backend_for(database_url), mirror)


def open_application(settings: Settings) -> ScopedContextApplication:
    return ScopedContextApplication(open_store(settings.database_url, settings.search_cache_mb), settings)
