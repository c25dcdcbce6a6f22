"""What hooks remember between runs, each run a new process: which turns they already captured
(fingerprints only, bounded), counters of what happened to captured turns, and a log of outcomes.

Files live in the PowerContext state directory (`$XDG_STATE_HOME/powercontext/`), one set per host,
updated under a lock because sessions run side by side. None of them holds text: fingerprints are
hashes, the log names outcomes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path

from .paths import state_dir

MAX_SEEN = 1024  # the most recent turn fingerprints kept per host; an older repeat is stored again
MAX_LOG_BYTES = 256 * 1024  # the log starts over beyond this
COUNTERS = ("captured", "skipped", "stored", "duplicates", "failed")


class HostState:
    def __init__(self, host: str, environ: Mapping[str, str]) -> None:
        self.directory = state_dir(environ)
        self._seen = self.directory / f"{host}-seen.json"
        self._counters = self.directory / f"{host}-capture.json"
        self._log = self.directory / f"{host}.log"
        self._lock = self.directory / f"{host}.lock"

    def remember_turn(self, fingerprint: str) -> bool:
        """Record `fingerprint` and count the turn captured, under one lock; False when it was
        already there (a repeat)."""
        from .files import locked, write_atomically

        with locked(self._lock):
            seen = _read_list(self._seen)
            if fingerprint in seen:
                return False
            seen = [*seen, fingerprint][-MAX_SEEN:]
            write_atomically(self._seen, json.dumps(seen) + "\n", durable=False)
            self._add({"captured": 1})
            return True

    def forget_turn(self, fingerprint: str) -> None:
        """A turn that was never stored: a later repeat may be."""
        from .files import locked, write_atomically

        with locked(self._lock):
            seen = _read_list(self._seen)
            if fingerprint in seen:
                write_atomically(
                    self._seen, json.dumps([f for f in seen if f != fingerprint]) + "\n", durable=False
                )

    def count(self, **deltas: int) -> None:
        from .files import locked  # the prompt hook only logs: it never loads these

        with locked(self._lock):
            self._add(deltas)

    def _add(self, deltas: Mapping[str, int]) -> None:
        """Add to the counters; the caller holds the lock."""
        from .files import write_atomically

        counters = self.counters()
        for name, delta in deltas.items():
            counters[name] = counters.get(name, 0) + delta
        write_atomically(self._counters, json.dumps(counters, indent=2) + "\n", durable=False)

    def counters(self) -> dict[str, int]:
        try:
            raw = json.loads(self._counters.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            raw = {}
        return {name: int(raw.get(name, 0)) for name in COUNTERS}

    def log(self, line: str) -> None:
        """Append one timestamped outcome line (never text of the session)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        mode = "w" if _size(self._log) > MAX_LOG_BYTES else "a"
        with open(self._log, mode, encoding="utf-8") as out:
            out.write(f"{stamp} {line}\n")


def _read_list(path: Path) -> list[str]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return []
    return [item for item in raw if isinstance(item, str)] if isinstance(raw, list) else []


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
