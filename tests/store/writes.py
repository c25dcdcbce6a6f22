"""Random Memory writes for index tests: remember, revise and retire in one Scope."""

from __future__ import annotations

import random
from collections.abc import Sequence

from powercontext_runtime.models import MemoryCitation
from powercontext_runtime.store.sql_store import SqlStore


def churn(
    store: SqlStore, rng: random.Random, live: list[MemoryCitation], steps: int, words: Sequence[str]
) -> None:
    """`steps` writes to Scope `s:1`; `live` holds the citations of the current heads."""
    for _ in range(steps):
        action = rng.random()
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 8)))
        if action < 0.55 or not live:
            live.append(store.remember("s:1", text, "fact", None).citation)
        elif action < 0.8:
            old = live.pop(rng.randrange(len(live)))
            live.append(store.revise_memory_entry("s:1", old, text).citation)
        else:
            store.retire_memory_entry("s:1", live.pop(rng.randrange(len(live))))
