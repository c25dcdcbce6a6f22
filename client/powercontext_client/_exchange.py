"""One call's exchange with the server as steps, so that both clients share every decision.

A `Plan` says what to do next: send a `Call`, or wait some seconds; the client does it (with
`httpx.Client` and `time.sleep`, or `httpx.AsyncClient` and `asyncio.sleep`) and hands back the
answer or the connection error. The plan decides on retries (`_retry`), reads the answer
(`read_response`) and sends `create_scope(..., exist_ok=True)`'s read of the taken Scope.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Generic, TypeAlias

import httpx

from ._errors import ConflictError
from ._operations import Call, ModelT, read_response, scope_taken
from ._retry import Attempts, RetryPolicy

Step: TypeAlias = Call[Any] | float
"""Send this call, or wait this many seconds."""

Outcome: TypeAlias = httpx.Response | httpx.RequestError | None
"""The answer to a sent call (read), its connection error, or None after a wait."""


class Plan(Generic[ModelT]):
    """The steps of one call: `step(outcome)` gives the next one, and None once the answer,
    `result()`, is there. An error the call ends in is raised by `step`."""

    def __init__(self, call: Call[ModelT], policy: RetryPolicy) -> None:
        self._steps = _exchange(call, policy)
        self._result: list[ModelT] = []

    def step(self, outcome: Outcome = None) -> Step | None:
        try:
            return self._steps.send(outcome)
        except StopIteration as done:
            self._result.append(done.value)
            return None

    def result(self) -> ModelT:
        (answer,) = self._result
        return answer


def _exchange(call: Call[ModelT], policy: RetryPolicy) -> Generator[Step, Outcome, ModelT]:
    try:
        return (yield from _attempts(call, policy))
    except ConflictError as exc:
        instead = scope_taken(call, exc)
        if instead is None:
            raise
    found: ModelT = yield from _attempts(instead, policy)
    return found


def _attempts(call: Call[ModelT], policy: RetryPolicy) -> Generator[Step, Outcome, ModelT]:
    attempts = Attempts(policy, call)
    while True:
        outcome = yield call
        if isinstance(outcome, httpx.RequestError):
            delay = attempts.after_error(outcome)
            if delay is None:
                raise call.transport_error(outcome) from outcome
        else:
            assert outcome is not None, "a sent call is answered"
            delay = attempts.after_response(outcome)
            if delay is None:
                return read_response(call, outcome)
        yield delay
