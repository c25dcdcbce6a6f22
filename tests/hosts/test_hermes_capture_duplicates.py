"""The same turn captured twice is stored once (issue 33): two Hermes processes, each with its own
memory of the turns it captured, send one turn; the server's duplicate check stores it once and the
second provider counts a duplicate."""

from __future__ import annotations

import functools
from datetime import UTC, datetime

import httpx
import pytest

from hosts.hermes.powercontext_memory.capture import CaptureStats
from hosts.hermes.powercontext_memory.turns import TurnCapture

from .test_hermes_capture import clean_settings, entries, provider_with, scope_id, sync

__all__ = ["clean_settings", "scope_id"]  # fixtures, used by name


def test_the_same_turn_captured_by_two_providers_is_stored_once_and_counted_a_duplicate(
    http: httpx.Client, scope_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    when = datetime(2026, 5, 22, 10, 15, 3, tzinfo=UTC)  # the turn's time: both headers read alike
    monkeypatch.setattr(TurnCapture, "capture", functools.partialmethod(TurnCapture.capture, when=when))
    first, second = provider_with(), provider_with()
    sync(first)
    first.shutdown()
    sync(second)
    second.shutdown()
    assert len(entries(http, scope_id)) == 1
    assert first.capture_stats() == CaptureStats(queued=1, stored=1)
    assert second.capture_stats() == CaptureStats(queued=1, duplicates=1)
