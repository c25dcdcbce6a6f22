"""PowerContext memory provider for Hermes Agent (standard library only).

Hermes finds this MemoryProvider through `register(ctx)`, which calls `ctx.register_memory_provider`.
Before each turn it calls `on_turn_start`, then `prefetch(query)` once; the text returned is
PowerContext's prepared `content`, unchanged, or "" when there is none. Every failure fails open:
one log line (never the token) and the turn goes on without context.

Configuration is read by `config.load_settings` and frozen at `on_turn_start` until the next turn
starts, so a turn never mixes budgets or assemblies. See hosts/hermes/README.md.
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .cache import PreparedCache, cache_key
from .config import ConfigError, Settings, load_settings
from .prepare import PrepareFailure, fetch_prepared

if TYPE_CHECKING:
    _ProviderBase = object
else:
    try:
        from agent.memory_provider import MemoryProvider as _ProviderBase
    except ImportError:  # imported outside Hermes (unit tests, tooling)
        _ProviderBase = object

PROVIDER_NAME = "powercontext"
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TurnState:
    """What a turn was started with: its number and its frozen settings (None if invalid)."""

    number: int
    settings: Settings | None


class PowerContextMemoryProvider(_ProviderBase):
    """Context-only provider: prepares PowerContext text per turn; exposes no tools, writes nothing."""

    def __init__(self) -> None:
        self._session_id = uuid.uuid4().hex
        self._turn: TurnState | None = None
        self._lock = threading.Lock()
        self._cache = PreparedCache()

    @property
    def name(self) -> str:
        return PROVIDER_NAME

    def is_available(self) -> bool:
        """Configured correctly (no network call); an invalid setting keeps the provider off."""
        try:
            load_settings()
        except ConfigError as exc:
            logger.warning("PowerContext memory provider disabled: %s", exc)
            return False
        return True

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        self._set_session(session_id)

    def on_session_switch(self, new_session_id: str, **kwargs: Any) -> None:
        self._set_session(new_session_id)

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        """Freeze the configuration for this turn."""
        try:
            settings: Settings | None = load_settings()
        except (ConfigError, OSError) as exc:  # never keep the previous turn's settings
            settings = None
            logger.warning("PowerContext context skipped for this turn: %s", exc)
        with self._lock:
            self._turn = TurnState(number=turn_number, settings=settings)

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        """This turn's prepared text, unchanged, or "" (Hermes passes an empty session_id here)."""
        return self._prepared_text(query, session_id)

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        """Warm the cache under exactly the key `prefetch` uses for the same turn and query."""
        self._prepared_text(query, session_id)

    def sync_turn(self, user_content: str, assistant_content: str, **kwargs: Any) -> None:
        """Nothing is written back: PowerContext curates its own Memory."""

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return []

    def shutdown(self) -> None:
        self._cache.clear()

    def _set_session(self, session_id: str) -> None:
        if session_id:
            with self._lock:
                self._session_id = session_id

    def _current_turn(self) -> TurnState:
        with self._lock:
            turn = self._turn
        if turn is not None:
            return turn
        return TurnState(number=0, settings=load_settings())  # outside a turn: a one-off snapshot

    def _prepared_text(self, query: str, session_id: str) -> str:
        """Fail open: any problem is one log line and no context."""
        try:
            return self._prepare(query, session_id)
        except ConfigError as exc:
            logger.warning("PowerContext context skipped: %s", exc)
        except PrepareFailure as exc:
            logger.warning("PowerContext context unavailable, turn continues without it: %s", exc)
        except Exception as exc:
            logger.warning("PowerContext context failed, turn continues without it: %s", type(exc).__name__)
        return ""

    def _prepare(self, query: str, session_id: str) -> str:
        turn = self._current_turn()
        if turn.settings is None or not isinstance(query, str) or not query.strip():
            return ""
        key = cache_key(turn.settings, session_id or self._session_id, turn.number, query)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        try:
            text = fetch_prepared(turn.settings, query)
        except PrepareFailure:
            self._cache.put(key, "")  # one attempt per request identity: no second wait on an outage
            raise
        self._cache.put(key, text)
        return text


def register(ctx: Any) -> None:
    """Hermes plugin entry point."""
    ctx.register_memory_provider(PowerContextMemoryProvider())
