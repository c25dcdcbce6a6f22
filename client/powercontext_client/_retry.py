"""When a request is sent again, and after how long: the policy both clients share.

A request is repeated after a failed connection or a 503 only when a repeat cannot do more than
the first attempt may already have done:

- reads: every `public` and `scope.read` operation, prepare included;
- PUT and DELETE (`update_scope`, `delete_scope`): a repeat after a lost answer lands on the same
  state, though it may then answer 409 (the version moved on) or 404 (the Scope is gone);
- a call its builder marked repeatable: `create_scope(..., exist_ok=True)`, where a repeat's 409
  reads the existing Scope.

Every other write (remember, revise, propose, approve, put_topic, ...) is sent once: a lost answer
may hide a committed write, and sending it again could commit it twice.

The delay before repeat `n` (from 0) is `backoff * 2**n` seconds, or the 503's `Retry-After` when
it has one; never more than `max_delay`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from ._operations import Call

DEFAULT_RETRIES = 3
DEFAULT_BACKOFF = 0.2
DEFAULT_MAX_DELAY = 5.0

READ_ACCESS = frozenset({"public", "scope.read"})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})
RETRY_STATUS = 503
# No answer because the connection failed or broke. A read timeout is not among them: the server
# may still be working on the request, and a repeat would multiply the wait.
CONNECTION_ERRORS: tuple[type[httpx.RequestError], ...] = (
    httpx.NetworkError,
    httpx.ConnectTimeout,
    httpx.RemoteProtocolError,
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`retries` repeats at most (0: send once), `backoff` seconds before the first, doubling."""

    retries: int = DEFAULT_RETRIES
    backoff: float = DEFAULT_BACKOFF
    max_delay: float = DEFAULT_MAX_DELAY

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError("retries must be 0 or more")
        for name in ("backoff", "max_delay"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number of seconds, 0 or more")

    def delay(self, attempt: int, response: httpx.Response | None = None) -> float:
        """Seconds to wait before repeat number `attempt` (from 0)."""
        wait = _retry_after(response) if response is not None else None
        if wait is None:
            wait = self.backoff * 2**attempt
        return min(wait, self.max_delay)


def repeatable(call: Call[Any]) -> bool:
    """Whether sending `call` again can do no more than sending it once."""
    operation = call.operation
    return call.repeatable or operation.access in READ_ACCESS or operation.method in IDEMPOTENT_METHODS


class Attempts:
    """The retry decisions for one call: each failed attempt answers with the seconds to wait
    before the next one, or None when the failure stands."""

    def __init__(self, policy: RetryPolicy, call: Call[Any]) -> None:
        self._policy = policy
        self._repeatable = repeatable(call)
        self._made = 0

    def after_error(self, exc: httpx.RequestError) -> float | None:
        return self._next(None) if isinstance(exc, CONNECTION_ERRORS) else None

    def after_response(self, response: httpx.Response) -> float | None:
        return self._next(response) if response.status_code == RETRY_STATUS else None

    def _next(self, response: httpx.Response | None) -> float | None:
        if not self._repeatable or self._made >= self._policy.retries:
            return None
        wait = self._policy.delay(self._made, response)
        self._made += 1
        return wait


def _retry_after(response: httpx.Response) -> float | None:
    """`Retry-After` in seconds (delta-seconds or an HTTP date), or None when absent or unreadable."""
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an obsolete date form without a zone means GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
