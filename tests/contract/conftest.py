"""How much the contract fuzzing runs, and a count of what it ran, printed at the end of the session.

`POWERCONTEXT_FUZZ_EXAMPLES` is the number of generated cases per operation and backend (the
fuzzing phase, positive and negative mixed), on top of the schema's examples and schemathesis's
deterministic coverage cases. `POWERCONTEXT_FUZZ_SEED` is the seed every operation's seed is
derived from: unset means the fixed `DEFAULT_SEED` (what `make test` runs, the same cases every
time), `random` draws one and prints it, so `POWERCONTEXT_FUZZ_SEED=<printed>` replays that run.
`POWERCONTEXT_FUZZ_MIN_CASES`, when set, fails the session if any backend ran fewer cases.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

DEFAULT_EXAMPLES = 40
DEFAULT_SEED = 14


@dataclass(frozen=True)
class FuzzSettings:
    examples: int
    seed: int
    min_cases: int

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> FuzzSettings:
        seed_text = env.get("POWERCONTEXT_FUZZ_SEED", "").strip()
        if seed_text == "random":
            seed = random.SystemRandom().getrandbits(32)
        else:
            seed = _natural(env, "POWERCONTEXT_FUZZ_SEED", DEFAULT_SEED)
        return cls(
            examples=max(1, _natural(env, "POWERCONTEXT_FUZZ_EXAMPLES", DEFAULT_EXAMPLES)),
            seed=seed,
            min_cases=_natural(env, "POWERCONTEXT_FUZZ_MIN_CASES", 0),
        )


def _natural(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit():
        raise pytest.UsageError(f"{name} must be a non-negative integer, not {text!r}")
    return int(text)


FUZZ = FuzzSettings.from_env(os.environ)


@dataclass
class BackendTally:
    """What one backend was sent: every case the test body ran (shrinking included), and its answers."""

    cases: int = 0
    requests: int = 0
    server_errors: int = 0
    modes: Counter[str] = field(default_factory=Counter)
    phases: Counter[str] = field(default_factory=Counter)
    operations: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    started: float = 0.0
    finished: float = 0.0

    def case(self, operation: str, mode: str, phase: str) -> None:
        if not self.cases:
            self.started = time.monotonic()
        self.cases += 1
        self.operations[operation] += 1
        self.modes[mode] += 1
        self.phases[phase] += 1

    def response(self, status: int) -> None:
        self.requests += 1
        self.statuses[status] += 1
        if status >= 500:
            self.server_errors += 1
        self.finished = time.monotonic()


class FuzzTally:
    def __init__(self) -> None:
        self.backends: dict[str, BackendTally] = {}

    def backend(self, name: str) -> BackendTally:
        return self.backends.setdefault(name, BackendTally())

    def short(self) -> list[str]:
        """The backends that ran fewer cases than `POWERCONTEXT_FUZZ_MIN_CASES`."""
        return [name for name, tally in self.backends.items() if tally.cases < FUZZ.min_cases]


TALLY_KEY = pytest.StashKey[FuzzTally]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[TALLY_KEY] = FuzzTally()


@pytest.fixture(scope="session")
def fuzz_tally(request: pytest.FixtureRequest) -> FuzzTally:
    return request.config.stash[TALLY_KEY]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    tally = session.config.stash.get(TALLY_KEY, None)
    if tally is not None and tally.backends and tally.short() and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    tally = config.stash.get(TALLY_KEY, None)
    if tally is None or not tally.backends:
        return
    write = terminalreporter.write_line
    terminalreporter.section("contract fuzzing")
    write(f"seed {FUZZ.seed} (POWERCONTEXT_FUZZ_SEED), {FUZZ.examples} generated cases per operation")
    for name, backend in tally.backends.items():
        by_class = Counter(f"{status // 100}xx" for status in backend.statuses.elements())
        classes = ", ".join(f"{n} {kind}" for kind, n in sorted(by_class.items()))
        write(
            f"{name}: {backend.cases} cases over {len(backend.operations)} operations"
            f" (positive {backend.modes['positive']}, negative {backend.modes['negative']};"
            f" {', '.join(f'{phase} {n}' for phase, n in sorted(backend.phases.items()))}),"
            f" {backend.requests} requests ({classes}), {backend.server_errors} 5xx,"
            f" {backend.finished - backend.started:.0f} s"
        )
        if config.get_verbosity() > 0:
            for operation, n in sorted(backend.operations.items()):
                write(f"    {n:6d}  {operation}")
    for name in tally.short():
        write(f"FAILED: {name} ran {tally.backends[name].cases} cases, fewer than {FUZZ.min_cases}", red=True)
