"""Composition root: settings → store → application. The one place that picks a backend."""

from __future__ import annotations

from .application import ScopedContextApplication
from .config import ConfigurationError, Settings
from .store import Store
from .store.sqlite_store import SqliteStore, sqlite_path_from_url


def open_store(database_url: str) -> Store:
    if database_url.startswith("sqlite:"):
        try:
            return SqliteStore(sqlite_path_from_url(database_url))
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
    raise ConfigurationError("POWERCONTEXT_SERVER_DATABASE_URL must start with sqlite:///")


def open_application(settings: Settings) -> ScopedContextApplication:
    return ScopedContextApplication(open_store(settings.database_url), settings)
