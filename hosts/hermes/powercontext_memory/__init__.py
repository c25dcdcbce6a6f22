"""PowerContext memory provider for Hermes Agent (standard library only).

Hermes finds this MemoryProvider through `register(ctx)`, which calls `ctx.register_memory_provider`.
Before each turn it calls `on_turn_start`, then `prefetch(query)` once; the text returned is
PowerContext's prepared `content`, unchanged, or "" when there is none. Unless `legacy` is
configured, requests carry an assembly (by default the contract's host default, Memory only), so
the server's `GET /v1/capabilities` is read first (once per server; `capabilities`), and a server
that does not support assembly gets the legacy request. After each completed turn
Hermes calls `sync_turn`, which queues the turn (redacted) for storage as Memory entries of kind
`conversation` in the provider's Scope; a background worker sends them, and `on_session_end` and
`shutdown` flush the queue with a bounded wait. Then it calls `queue_prefetch`, which only warms
the capabilities check (see its docstring). Every failure fails open: one log line (never the
token or the text) and the turn goes on.

Configuration is read by `config.load_settings` and frozen at `on_turn_start` until the next turn
starts, so a turn never mixes budgets, assemblies or Scopes. See docs/hermes.md.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .cache import PreparedCache, cache_key
from .capabilities import AssemblySupport
from .capture import SESSION_END_FLUSH_TIMEOUT, SHUTDOWN_FLUSH_TIMEOUT, CaptureStats
from .config import ConfigError, Settings, load_settings
from .prepare import PrepareFailure, fetch_prepared
from .turns import TurnCapture

if TYPE_CHECKING:
    _ProviderBase = object
else:
    try:
        from agent.memory_provider import MemoryProvider as _ProviderBase
    except ImportError:  # imported outside Hermes (unit tests, tooling)
        _ProviderBase = object

PROVIDER_NAME = "powercontext"
# Hermes marks cron, subagent and flush agents; their prompts are not the user's conversation.
CAPTURING_AGENT_CONTEXTS = frozenset({"primary"})
logger = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class TurnState:
    """What a turn was started with: its number and its frozen settings (None if invalid).

    Each `on_turn_start` makes a new one; its identity tells turns apart (for "one capabilities
    check per server per turn"), even when Hermes repeats a turn number.
    """

    number: int
    settings: Settings | None


class PowerContextMemoryProvider(_ProviderBase):
    """Prepares PowerContext text per turn and captures completed turns; exposes no tools."""

    def __init__(self, capture: TurnCapture | None = None) -> None:
        self._session_id = uuid.uuid4().hex
        self._turn: TurnState | None = None
        self._lock = threading.Lock()
        self._cache = PreparedCache()
        self._support = AssemblySupport()
        self._capture = capture if capture is not None else TurnCapture()
        self._capturing_context = True

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
        context = kwargs.get("agent_context") or "primary"
        self._capturing_context = context in CAPTURING_AGENT_CONTEXTS

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
        """Warm the capabilities check for the next turn; never sends a prepare.

        Hermes 0.19.0 calls this after turn N completes, with turn N's user text (run_agent.py
        3553-3561, `_sync_external_memory_for_turn` -> agent/memory_manager.py 587-612,
        `queue_prefetch_all`, on its background worker), while turn N+1's `prefetch` comes after
        `on_turn_start(N+1)` with turn N+1's message (agent/turn_context.py 787-800). Text
        prepared here for turn N and query N could never be served to turn N+1, so nothing is
        prepared. What does carry over is
        whether the server supports assembly: if that is not yet known (and this turn has not
        already tried), the check runs here, bounded by the timeout, so the next turn's path
        usually has it cached. Never raises; `query` and `session_id` are not used.
        """
        try:
            turn = self._current_turn()
            if turn.settings is not None and turn.settings.assembly_json is not None:
                self._support.warm(turn.settings, turn)
        except Exception as exc:
            logger.debug("PowerContext capabilities warm-up skipped: %s", type(exc).__name__)

    def sync_turn(self, user_content: str, assistant_content: str, **kwargs: Any) -> None:
        """Queue the completed turn for capture; returns at once and never raises."""
        try:
            self._capture_turn(user_content, assistant_content, str(kwargs.get("session_id") or ""))
        except Exception as exc:
            self._capture.count_error()
            logger.warning("PowerContext capture skipped this turn: %s", type(exc).__name__)

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        """Deliver what this session queued, waiting a bounded time (Hermes waits on this call)."""
        try:
            if not self._capture.flush(SESSION_END_FLUSH_TIMEOUT):
                logger.warning("PowerContext capture still sending at session end; continuing")
        except Exception as exc:
            logger.warning("PowerContext capture flush failed: %s", type(exc).__name__)

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return []

    def shutdown(self) -> None:
        """Flush captured turns (bounded), then drop what is left; Hermes exits right after."""
        self._cache.clear()
        self._support.clear()
        try:
            self._capture.close(SHUTDOWN_FLUSH_TIMEOUT)
        except Exception as exc:
            logger.warning("PowerContext capture shutdown failed: %s", type(exc).__name__)

    def capture_stats(self) -> CaptureStats:
        """Counters of captured, skipped, dropped and failed turns and entries."""
        return self._capture.stats()

    def _set_session(self, session_id: str) -> None:
        if session_id:
            with self._lock:
                self._session_id = session_id

    def _capture_turn(self, user: object, assistant: object, session_id: str) -> None:
        if not self._capturing_context:
            return
        try:
            settings = self._current_turn().settings
        except ConfigError as exc:
            logger.warning("PowerContext capture skipped: %s", exc)
            return
        if settings is None or not settings.capture:
            return
        self._capture.capture(
            settings,
            session_id or self._session_id,
            user if isinstance(user, str) else "",
            assistant if isinstance(assistant, str) else "",
        )

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
        deadline = time.monotonic() + turn.settings.timeout  # the check and prepare share it
        settings = self._sendable(turn, turn.settings)
        if settings is None:
            return ""
        key = cache_key(settings, session_id or self._session_id, turn.number, query)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        try:
            text = fetch_prepared(settings, query, timeout=deadline - time.monotonic())
        except PrepareFailure:
            self._cache.put(key, "")  # one attempt per request identity: no second wait on an outage
            raise
        self._cache.put(key, text)
        return text

    def _sendable(self, turn: TurnState, settings: Settings) -> Settings | None:
        """The settings the request goes out with: the legacy request unless assembly is supported,
        and None (send nothing) when an empty selection meets a server without assembly support:
        the legacy request would inject the context the user turned off.

        Raises `CapabilitiesUnreachable` (a `PrepareFailure`) when the server did not answer.
        """
        if settings.assembly_json is None or self._support.resolve(settings, turn, settings.timeout):
            return settings
        if settings.selects_nothing:
            return None
        return dataclasses.replace(settings, assembly_json=None)


def register(ctx: Any) -> None:
    """Hermes plugin entry point."""
    ctx.register_memory_provider(PowerContextMemoryProvider())
