"""When to stop asking an embedding endpoint that keeps failing, and when to ask it again.

After a failure, calls are skipped for a back-off period: 1 s, doubled at each failure in a row, up
to 30 s. One second is some seven query deadlines (150 ms by default), so while the endpoint is
down at most one search a second waits out the deadline, and the others answer lexically at once;
30 s bounds how long the leg stays off after the endpoint is back. When the period is over, one
call goes out as a probe while the others keep skipping; it succeeding ends the back-off, it
failing starts a longer one. Failures of calls that were already under way when the back-off began
are the same outage, and do not lengthen it.

No jitter: each server process keeps its own state and sends one probe a period, which is no herd.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

Clock = Callable[[], float]  # seconds, never going back (time.monotonic)


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    first_s: float = 1.0
    cap_s: float = 30.0

    def period(self, failures: int) -> float:
        """The back-off after `failures` failures in a row (one at least)."""
        return min(self.cap_s, self.first_s * 2.0 ** min(failures - 1, 64))


class Attempt(Enum):
    """How a call was let through: while the endpoint answers, or as the probe after a back-off."""

    OPEN = "open"
    PROBE = "probe"


class Backoff:
    """The back-off state of one caller of the endpoint; safe to share between threads."""

    def __init__(self, policy: BackoffPolicy, clock: Clock) -> None:
        self._policy = policy
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0  # in a row; 0 while the endpoint answers
        self._until = 0.0  # on the clock: no call before this while failures > 0
        self._probing = False

    def admit(self) -> Attempt | None:
        """Whether a call may go out now, and how; None: skip it (the back-off is on, or its probe
        is in flight). The caller reports how an admitted call went to `succeeded` or `failed`."""
        with self._lock:
            if self._failures == 0:
                return Attempt.OPEN
            if self._probing or self._clock() < self._until:
                return None
            self._probing = True
            return Attempt.PROBE

    def succeeded(self) -> None:
        """The endpoint answered: calls go out freely again."""
        with self._lock:
            self._failures = 0
            self._probing = False

    def failed(self, attempt: Attempt) -> float:
        """The endpoint failed an admitted call: back off (longer after a failed probe); the
        seconds left until the next call may go out."""
        with self._lock:
            if attempt is Attempt.PROBE:
                self._probing = False
            if attempt is Attempt.PROBE or self._failures == 0:
                self._failures += 1
                self._until = self._clock() + self._policy.period(self._failures)
            return max(0.0, self._until - self._clock())

    def remaining(self) -> float:
        """Seconds until a call may go out (0: now)."""
        with self._lock:
            return 0.0 if self._failures == 0 else max(0.0, self._until - self._clock())
