"""Memory's neighbours are the live documents beside each other in key order (`_neighbours.py`):
whichever way `key_order` finds that order, told the keys ascend or not, it is the order a stable
sort of the live keys gives."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext_runtime.search._neighbours import key_order


@settings(max_examples=200, deadline=None)
@given(
    gaps=st.lists(st.integers(1, 5), min_size=1, max_size=60),
    dead=st.lists(st.booleans(), min_size=60, max_size=60),
    shuffle=st.integers(0, 2),
    seed=st.integers(0, 2**16),
)
def test_the_live_slots_come_in_the_order_a_sort_of_their_keys_gives(
    gaps: list[int], dead: list[bool], shuffle: int, seed: int
) -> None:
    keys = np.cumsum(np.asarray(gaps, np.int64))
    if shuffle:  # keys that stopped ascending with slots (a key back after erasure, a rebuilt table)
        np.random.default_rng(seed).shuffle(keys)
    alive = ~np.asarray(dead[: len(keys)], np.bool_)
    # A mirror whose keys ascend with its slots says so (nothing is checked then); else it is found.
    order = key_order(keys, alive, ascending=not shuffle and seed % 2 == 0)

    live = np.flatnonzero(alive)
    expected = live[np.argsort(keys[live], kind="stable")]
    found = (
        [slot for slot in range(len(keys)) if alive[slot]] if order.slots is None else order.slots.tolist()
    )
    assert found == expected.tolist()
    for at, slot in enumerate(expected.tolist()):
        before = int(expected[at - 1]) if at > 0 else -1
        after = int(expected[at + 1]) if at + 1 < len(expected) else -1
        if order.slots is None:  # every slot live, in key order: the neighbours are slot ± 1
            assert (before, after) == (slot - 1, slot + 1 if slot + 1 < len(keys) else -1)
        else:
            assert order.beside(slot) == (before, after)
