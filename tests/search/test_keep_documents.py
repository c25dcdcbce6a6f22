"""A batch that stores only some of its texts (the others duplicate stored entries) writes exactly
what tokenising those texts alone writes, on every tokenising path (one text, a small write, a batch),
and normalising a text first changes nothing of it."""

from __future__ import annotations

import random

import numpy as np
import pytest

from powercontext_runtime import search

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "猫",
    "狗",
    "学习",
    "记忆系统",
    "running",
    "runner",
    "café",
    "CAFÉ",
    "Ｆｕｌｌ",
]


@pytest.mark.parametrize("size", [1, 2, 5, 40, 300])
def test_keeping_some_documents_equals_tokenising_them_alone(size: int) -> None:
    rng = random.Random(size)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))) for _ in range(size)]
    everything = search.tokenise_documents(texts)
    normalised = search.tokenise_documents([search.normalised_text(t) for t in texts])
    assert (normalised.terms, normalised.logged) == (everything.terms, everything.logged)
    for _ in range(5):
        keep = sorted(rng.sample(range(size), rng.randint(1, size)))
        kept = search.keep_documents(everything, keep)
        alone = search.tokenise_documents([texts[i] for i in keep])
        assert (list(kept.lengths), kept.terms, list(kept.bounds), kept.logged) == (
            list(alone.lengths),
            alone.terms,
            list(alone.bounds),
            alone.logged,
        )
        assert np.array_equal(kept.positions, alone.positions) and np.array_equal(kept.tfs, alone.tfs)
