"""`GET /v1/capabilities` before any `assembly` request: assembly is sent only to a server known to take it.

The RFC (rfc-prepared-context-text-assembly.md, "Compatibility and integration"): "Old Servers reject
the added request field. Hosts enable it only when Server support is known and must not
automatically retry arbitrary 422 responses with a request that relaxes family selection." So the
provider asks first, and a server that does not say `prepare.assembly: true` gets the legacy
request (no `assembly` key) instead; a 422 to an assembly request is a plain failure, never retried.

Per server (base URL), for the provider's lifetime (`clear` at shutdown):

- `true` or `false` is remembered. So is an answer that cannot establish support (a 4xx such as
  the 404 of a server without the endpoint, a body that is not JSON, a missing or non-boolean
  `prepare.assembly`): the server answered, and it did not say yes. Either way: legacy requests
  and one warning per server.
- A 5xx, 408 or 429 answer means "not now": legacy for this turn (the same one warning) and a
  new check on a later turn.
- No answer at all (refused, timed out, reset) is not remembered either. The turn goes on without
  context (a prepare would meet the same outage) and a later turn checks again.

At most one check per server per turn: a second call in the same turn reuses that turn's outcome.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ._core._contract import CAPABILITIES_PATH
from ._core.transport import DeadlinePassed, Unreachable, exchange, get_request, server_label, within
from .config import Settings
from .prepare import PrepareFailure

MAX_CAPABILITIES_BYTES = 64 * 1024
# Answers that say "try again later" rather than "this server does not support it".
RETRY_LATER_STATUSES = frozenset({408, 429})

logger = logging.getLogger(__name__)


class CapabilitiesUnreachable(PrepareFailure):
    """The capabilities check got no answer; nothing is remembered, and the turn has no context."""


@dataclass(frozen=True)
class Answer:
    """What one capabilities check established."""

    assembly: bool  # send `assembly` to this server
    final: bool  # remember it for the provider's lifetime
    reason: str = ""  # why assembly is not sent (log-safe), "" when it is


# fetch(base_url, token, timeout) -> Answer, or raises CapabilitiesUnreachable
Fetch = Callable[[str, str | None, float], Answer]


def fetch_answer(base_url: str, token: str | None, timeout: float) -> Answer:
    """One `GET /v1/capabilities` within `timeout` seconds in total."""
    try:
        return within(timeout, lambda: _get(base_url, token, timeout), "powercontext-capabilities")
    except DeadlinePassed:
        raise CapabilitiesUnreachable(f"capabilities check timed out after {timeout:g} s") from None


def answer_from(status: int, data: bytes) -> Answer:
    """Classify one HTTP answer to `GET /v1/capabilities`."""
    if status >= 500 or status in RETRY_LATER_STATUSES:
        return Answer(assembly=False, final=False, reason=f"capabilities answered HTTP {status}")
    if status != 200:
        return Answer(assembly=False, final=True, reason=f"capabilities answered HTTP {status}")
    try:
        payload = json.loads(data)
    except ValueError:
        return Answer(assembly=False, final=True, reason="capabilities answer is not JSON")
    prepare = payload.get("prepare") if isinstance(payload, dict) else None
    supported = prepare.get("assembly") if isinstance(prepare, dict) else None
    if not isinstance(supported, bool):
        return Answer(assembly=False, final=True, reason="capabilities answer has no prepare.assembly")
    if not supported:
        return Answer(assembly=False, final=True, reason="server does not support context assembly")
    return Answer(assembly=True, final=True)


def _get(base_url: str, token: str | None, timeout: float) -> Answer:
    try:
        status, data = exchange(
            get_request(base_url, CAPABILITIES_PATH, token), timeout, MAX_CAPABILITIES_BYTES
        )
    except Unreachable as exc:
        raise CapabilitiesUnreachable(f"capabilities check failed: {exc}") from None
    return answer_from(status, data)


class AssemblySupport:
    """Whether to send `assembly` to a server: remembered answers, one check per server per turn."""

    def __init__(self, fetch: Fetch = fetch_answer) -> None:
        self._fetch = fetch
        self._known: dict[str, Answer] = {}
        # base URL -> (the turn, its outcome) for what is not remembered: "not now" or no answer
        self._this_turn: dict[str, tuple[object, Answer | CapabilitiesUnreachable]] = {}
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def resolve(self, settings: Settings, turn: object, timeout: float) -> bool:
        """True to send `assembly`, False for the legacy request; raises CapabilitiesUnreachable.

        `turn` identifies the current turn (compared by identity); `timeout` bounds the check.
        """
        answer = self._answer(settings, turn, timeout)
        if not answer.assembly:
            self._warn_once(settings.base_url, answer.reason)
        return answer.assembly

    def warm(self, settings: Settings, turn: object) -> None:
        """Check now, off the turn's path, if nothing is known; never raises."""
        try:
            self.resolve(settings, turn, settings.timeout)
        except CapabilitiesUnreachable as exc:  # the next turn checks again and reports it
            logger.debug("PowerContext capabilities warm-up failed: %s", exc)

    def clear(self) -> None:
        with self._lock:
            self._known.clear()
            self._this_turn.clear()
            self._warned.clear()

    def _answer(self, settings: Settings, turn: object, timeout: float) -> Answer:
        base_url = settings.base_url
        with self._lock:
            known = self._known.get(base_url)
            earlier = self._this_turn.get(base_url)
        if known is not None:
            return known
        if earlier is not None and earlier[0] is turn:
            if isinstance(earlier[1], CapabilitiesUnreachable):
                raise CapabilitiesUnreachable(f"{earlier[1]} (checked again next turn)")
            return earlier[1]
        try:
            answer = self._fetch(base_url, settings.token, timeout)
        except CapabilitiesUnreachable as exc:
            with self._lock:
                self._this_turn[base_url] = (turn, exc)
            raise
        with self._lock:
            if answer.final:
                self._known[base_url] = answer
                self._this_turn.pop(base_url, None)
            else:
                self._this_turn[base_url] = (turn, answer)
        return answer

    def _warn_once(self, base_url: str, reason: str) -> None:
        with self._lock:
            if base_url in self._warned:
                return
            self._warned.add(base_url)
        logger.warning(
            "PowerContext server %s: %s; sending prepare requests without assembly (legacy text)",
            server_label(base_url),
            reason,
        )
