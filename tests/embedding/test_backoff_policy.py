"""The back-off's periods and its single probe (`vectors/backoff.py`), on a clock the test moves:
1 s after a failure, doubling with each failed probe up to 30 s; calls that failed together
count once; the endpoint answering ends it."""

from __future__ import annotations

from powercontext_runtime.vectors.backoff import Attempt, Backoff, BackoffPolicy


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_each_failed_probe_doubles_the_wait_up_to_the_cap() -> None:
    clock = Clock()
    backoff = Backoff(BackoffPolicy(), clock)
    waits = []
    for _ in range(8):
        attempt = backoff.admit()
        assert attempt is not None
        waits.append(backoff.failed(attempt))
        clock.now += waits[-1] - 0.5
        assert backoff.admit() is None  # not yet
        clock.now += 0.5
    assert waits == [1, 2, 4, 8, 16, 30, 30, 30]


def test_one_probe_at_a_time_and_an_answer_ends_the_back_off() -> None:
    clock = Clock()
    backoff = Backoff(BackoffPolicy(), clock)
    first, second = backoff.admit(), backoff.admit()
    assert first is second is Attempt.OPEN
    assert backoff.failed(Attempt.OPEN) == 1
    assert backoff.failed(Attempt.OPEN) == 1  # under way before the back-off began: the same outage
    clock.now = 1.0
    assert (backoff.admit(), backoff.admit()) == (Attempt.PROBE, None)
    backoff.succeeded()
    assert (backoff.admit(), backoff.remaining()) == (Attempt.OPEN, 0.0)
