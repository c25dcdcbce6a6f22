"""In-process figures: prepare through the Runtime against the raw Store reads it needs, the
fitting micro-benchmark, and in-process remember as the floor of HTTP ingest."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from powercontext_api.models import PrepareContextRequest, RememberRequest, ScopeCreateRequest
from powercontext_runtime import (
    AssemblyOptions,
    Candidate,
    Origin,
    ScopedContextApplication,
    Section,
    Store,
    build_text_context,
    document,
    parse_query,
    prepare_legacy,
    quote_body,
)

from .datagen import memory_text, numbered
from .scenarios import Mode
from .stats import latency_run


def timed_batch(call: Callable[[int], object], count: int, cap_s: float) -> list[float]:
    """Up to `count` calls (at least 3), stopping early once `cap_s` seconds have passed."""
    samples: list[float] = []
    deadline = time.perf_counter() + cap_s
    for i in range(count):
        started = time.perf_counter()
        call(i)
        samples.append(time.perf_counter() - started)
        if i >= 2 and time.perf_counter() > deadline:
            break
    return samples


def prepare_runs(
    app: ScopedContextApplication,
    store: Store,
    mode: Mode,
    queries: Sequence[str],
    *,
    offset: int,
    count: int,
    cap_s: float,
) -> tuple[dict[str, float], dict[str, float]]:
    """One repeat: (prepare latency run, raw-reads latency run), same queries in the same order."""
    bodies = [mode.body(q) for q in queries]
    parsed = [parse_query(q) for q in queries]

    def raw(i: int) -> None:
        mode.raw_reads(store, parsed[(offset + i) % len(parsed)])

    def prepare(i: int) -> None:
        app.prepare_context(PrepareContextRequest.model_validate(bodies[(offset + i) % len(bodies)]))

    base = latency_run(timed_batch(raw, count, cap_s))
    full = latency_run(timed_batch(prepare, count, cap_s))
    return full, base


def remember_rate(app: ScopedContextApplication, scope_id: str, seconds: float, seed: int) -> float:
    """In-process remembers per second into a fresh Scope, one Store transaction each, of texts
    that never repeat (`numbered`)."""
    app.create_scope(ScopeCreateRequest(scope_id=scope_id))
    rng = random.Random(seed)
    texts = [memory_text(rng) for _ in range(512)]
    done = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        app.remember(RememberRequest(scope_id=scope_id, text=numbered(texts, done)))
        done += 1
    return done / (time.perf_counter() - started)


# Fitting ----------------------------------------------------------------------------------------
FIT_BODY_BYTES = 2000
FIT_MAX_BYTES = 32768


def _body(rng: random.Random, size: int) -> str:
    """Mixed English and Chinese text, a few lines, exactly `size` UTF-8 bytes or one less."""
    parts: list[str] = []
    total = 0
    while total < size:
        line = memory_text(rng) + "\n"
        parts.append(line)
        total += len(line.encode("utf-8"))
    raw = "".join(parts).encode("utf-8")[:size]
    return raw.decode("utf-8", errors="ignore")


def fitting_pools(seed: int = 11) -> dict[str, list[Candidate]]:
    """26 candidates of 2000-byte bodies, as the four-family assembly's section limits take them."""
    rng = random.Random(seed)
    pools: dict[str, list[Candidate]] = {}
    for family, count in (("memory", 8), ("experience", 2), ("topic-memory", 8), ("profile", 8)):
        pools[family] = [
            Candidate(
                Origin(
                    f"bench:ref-{i % 4}",
                    family,
                    "memory" if family == "memory" else f"{family}-{i}",
                    1000 + i,
                    f"entry-{i}" if family == "memory" else None,
                    f"entry-{i}-v1" if family == "memory" else None,
                ),
                _body(rng, FIT_BODY_BYTES),
                i % 4 == 0,
            )
            for i in range(count)
        ]
    return pools


def _ignore_index(call: Callable[[], object]) -> Callable[[int], object]:
    return lambda _i: call()


def fitting_runs(repeats: int, iterations: int = 200) -> dict[str, Any]:
    """Per repeat, the median seconds of one fit of 26 candidates (text builder and legacy), and of
    one plain render of the same 26 bodies (quote every body once, join: no budget at all)."""
    pools = fitting_pools()
    options = AssemblyOptions(
        sections=(
            Section("memory", 8),
            Section("experience", 2),
            Section("topic-memory", 8),
            Section("profile", 8),
        )
    )
    everything = [c for pool in pools.values() for c in pool]
    legacy_memory = everything[:16]
    legacy_topics = everything[16:24]
    legacy_experience = everything[24:26]

    def text_fit() -> object:
        return build_text_context(pools, options, FIT_MAX_BYTES)

    def legacy_fit() -> object:
        return prepare_legacy(
            legacy_memory, FIT_MAX_BYTES, topics=legacy_topics, experience=legacy_experience
        )

    def render_once() -> object:
        return document([quote_body(c.body).quoted for c in everything])

    out: dict[str, list[float]] = {"text": [], "legacy": [], "render": []}
    for _ in range(repeats):
        for key, call in (("text", text_fit), ("legacy", legacy_fit), ("render", render_once)):
            samples = timed_batch(_ignore_index(call), iterations, 5.0)
            out[key].append(latency_run(samples)["p50"])
    return out
