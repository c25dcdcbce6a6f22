"""A mirror maps a term's postings (document keys, term frequencies) to its slots, in slot order,
skipping documents it does not know: by binary search while keys ascend with slots, by its key
map once they do not (a removed key that comes back takes a new slot)."""

from __future__ import annotations

import numpy as np
import pytest

from powercontext_runtime.search import _mirror
from powercontext_runtime.search._log import LoggedWrite
from powercontext_runtime.search._mirror import FamilyMirror


def postings(mirror: FamilyMirror, pairs: list[tuple[int, int]]) -> list[tuple[int, float]]:
    keys = np.array([k for k, _ in pairs], np.int64)
    tfs = np.array([t for _, t in pairs], np.int64)
    found = mirror.postings_of(keys, tfs)
    return list(zip(found.slots.tolist(), found.tfs.tolist(), strict=True))


def test_known_documents_map_to_their_slots_in_slot_order_whatever_the_order_given() -> None:
    mirror = FamilyMirror(1, [(10, 5), (20, 7), (30, 2), (40, 9)])
    given = [(40, 3), (5, 1), (20, 2), (35, 4), (10, 1), (99, 8)]
    assert postings(mirror, given) == [(0, 1.0), (1, 2.0), (3, 3.0)]
    assert postings(mirror, []) == []
    assert postings(FamilyMirror(1, np.zeros((0, 2), np.int64)), [(1, 1)]) == []


def test_keys_out_of_slot_order_map_through_the_key_map() -> None:
    mirror = FamilyMirror(1, [(30, 5), (10, 7), (20, 2)])
    assert postings(mirror, [(20, 4), (30, 1), (15, 2)]) == [(0, 1.0), (2, 4.0)]


def test_a_key_that_comes_back_after_removal_maps_to_its_new_slot() -> None:
    mirror = FamilyMirror(2, [(10, 5), (20, 7)])
    mirror.replay([(3, 20, None)])  # 20 removed
    back = LoggedWrite(
        doc_keys=np.array([20], np.int64),
        lengths=np.array([4], np.int32),
        terms=["heron"],
        bounds=np.array([0, 1], np.int64),
        positions=np.array([0], np.int64),
        tfs=np.array([1], np.int32),
    )
    mirror.replay([(4, 20, back)])  # the same key again: a new document in slot 2
    assert postings(mirror, [(20, 3), (10, 1)]) == [(0, 1.0), (2, 3.0)]


@pytest.mark.parametrize("seed", range(20))
def test_keys_close_together_map_through_a_table_exactly_as_by_binary_search(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(seed)
    # Keys ascending with gaps, some documents removed (their keys still map to their slots).
    keys = np.cumsum(rng.integers(1, 4, 300)).astype(np.int64)
    docs = np.stack([keys, rng.integers(1, 9, 300)], axis=1)
    asked = rng.choice(np.arange(keys[-1] + 5), 200, replace=False).astype(np.int64)
    pairs = [(int(k), int(t)) for k, t in zip(asked, rng.integers(1, 5, 200), strict=True)]
    answers = []
    for span in (0, _mirror.DENSE_SPAN):  # 0: every span is too wide, binary search
        monkeypatch.setattr(_mirror, "DENSE_SPAN", span)
        mirror = FamilyMirror(1, docs)
        mirror.replay([(2, int(keys[7]), None)])
        answers.append(postings(mirror, pairs))
        assert (mirror._dense is not None) == (span > 0)
        # The table counts in the mirror's memory budget: 4 bytes a key of its span and of the
        # room it keeps above it for the keys to come.
        table = len(mirror._dense[1]) // 4 if mirror._dense is not None else 0
        assert table * 4 >= (int(keys[-1] - keys[0] + 1) if span else 0)
        assert mirror.cost == mirror.postings + _mirror.DOC_COST * len(keys) + table
    assert answers[0] == answers[1]
    assert len(answers[0]) == len(set(asked.tolist()) & set(keys.tolist()))
