"""A mirror that keeps taking writes after its first read maps keys to slots and ranks exactly as a
mirror built afresh from the same live documents (issue 34): its key table grows in place as
documents are appended, is dropped when a key lands too far above it or a key comes back after
erasure, and a write costs what it adds, not a map of every key the mirror holds.
"""

from __future__ import annotations

import random
import tracemalloc
from dataclasses import dataclass, field
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext_runtime.search import _mirror
from powercontext_runtime.search._bm25 import term_weights
from powercontext_runtime.search._log import LoggedWrite
from powercontext_runtime.search._mirror import FamilyMirror

TERMS = ["alpha", "beta", "gamma", "delta", "heron"]
QUERIES = [["alpha"], ["alpha", "beta"], ["gamma", "heron"], ["delta", "beta", "heron"], TERMS]


@dataclass
class Family:
    """What the mirror should hold: every document ever added, by slot, and which are alive."""

    rng: random.Random
    keys: list[int] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    terms: list[dict[str, int]] = field(default_factory=list)
    alive: list[bool] = field(default_factory=list)
    generation: int = 1

    def document(self, key: int) -> None:
        held = self.rng.sample(TERMS, self.rng.randint(1, 3))
        self.keys.append(key)
        self.terms.append({term: self.rng.randint(1, 3) for term in held})
        self.lengths.append(sum(self.terms[-1].values()) + self.rng.randint(0, 4))
        self.alive.append(True)

    def live(self) -> list[int]:
        return [slot for slot, alive in enumerate(self.alive) if alive]

    def slot(self, key: int) -> int:
        """The slot a key maps to: its newest document's (-1: none)."""
        return max((slot for slot, held in enumerate(self.keys) if held == key), default=-1)


def started(seed: int, count: int, gap: int = 3) -> tuple[Family, FamilyMirror]:
    """A family of `count` documents and its mirror after a first read of every term, which
    makes the key table (while the keys lie close enough together)."""
    family = Family(random.Random(seed))
    key = 100
    for _ in range(count):
        key += family.rng.randint(1, gap)
        family.document(key)
    mirror = FamilyMirror(family.generation, list(zip(family.keys, family.lengths, strict=True)))
    for term in TERMS:
        mirror.install(term, postings_of(mirror, family, term))
    return family, mirror


def postings_of(mirror: FamilyMirror, family: Family, term: str) -> _mirror.TermPostings:
    """A term's postings among the family's live documents, as a read from the tables gives them."""
    held = [slot for slot in family.live() if term in family.terms[slot]]
    keys = np.array([family.keys[slot] for slot in held], np.int64)
    return mirror.postings_of(keys, np.array([family.terms[slot][term] for slot in held], np.int64))


def add(mirror: FamilyMirror, family: Family, keys: list[int]) -> None:
    """One logged write of documents `keys`, replayed."""
    first = len(family.keys)
    for key in keys:
        family.document(key)
    documents = range(first, len(family.keys))
    bounds, positions, tfs = [0], [], []
    for term in TERMS:
        for index, slot in enumerate(documents):
            if term in family.terms[slot]:
                positions.append(index)
                tfs.append(family.terms[slot][term])
        bounds.append(len(positions))
    logged = LoggedWrite(
        doc_keys=np.array(keys, np.int64),
        lengths=np.array([family.lengths[slot] for slot in documents], np.int32),
        terms=TERMS,
        bounds=np.array(bounds, np.int64),
        positions=np.array(positions, np.int64),
        tfs=np.array(tfs, np.int32),
    )
    family.generation += len(keys)
    mirror.replay([(family.generation, min(keys), logged)])


def remove(mirror: FamilyMirror, family: Family, key: int) -> None:
    family.alive[family.slot(key)] = False
    family.generation += 1
    mirror.replay([(family.generation, key, None)])


def assert_exact(mirror: FamilyMirror, family: Family) -> None:
    """Every key maps to its newest document's slot, none to a slot the mirror does not hold, and
    every query ranks as in a mirror built afresh from the live documents."""
    low, high = min(family.keys), max(family.keys)
    asked = np.arange(low - 5, high + 2 * (high - low) + 70, dtype=np.int64)  # past any table's room
    found = mirror.postings_of(asked, asked)
    expected = sorted(slot for slot in (family.slot(int(key)) for key in asked) if slot >= 0)
    assert found.slots.tolist() == expected
    assert found.tfs.tolist() == [float(family.keys[slot]) for slot in expected]

    live = sorted(family.live(), key=lambda slot: family.keys[slot])
    fresh = FamilyMirror(family.generation, [(family.keys[slot], family.lengths[slot]) for slot in live])
    for term in TERMS:
        fresh.install(term, postings_of(fresh, family, term))
    assert mirror.frequencies(TERMS, {}) == fresh.frequencies(TERMS, {})
    average = sum(family.lengths[slot] for slot in live) / len(live)
    for terms in QUERIES:
        answers = []
        for ranking in (mirror, fresh):
            weights = term_weights(terms, ranking.frequencies(terms, {}), len(live))
            answers.append(ranking.top(weights, average, 8, {}, None, with_neighbours=True))
        assert answers[0] == answers[1], terms


def table_length(mirror: FamilyMirror) -> int:
    return 0 if mirror._dense is None else len(mirror._dense[1])


def test_many_small_appends_fill_the_table_and_grow_it_and_rank_exactly() -> None:
    family, mirror = started(1, 200)
    first = table_length(mirror)
    assert first > 0
    lengths = {first}
    for _ in range(120):
        last = family.keys[-1]
        add(mirror, family, [last + step for step in range(1, family.rng.randint(1, 3) + 1)])
        lengths.add(table_length(mirror))
        if len(family.keys) % 20 == 0:
            assert_exact(mirror, family)
    assert 0 not in lengths and max(lengths) > first  # grown, never dropped
    assert_exact(mirror, family)


def test_a_key_far_above_the_table_drops_it_and_later_keys_still_map() -> None:
    family, mirror = started(2, 50)
    assert table_length(mirror) > 0
    far = family.keys[-1] + _mirror.DENSE_SPAN * (len(family.keys) + 1) * 3
    add(mirror, family, [far])
    assert mirror._dense is None
    add(mirror, family, [far + 1, far + 5])
    assert_exact(mirror, family)


def test_an_appended_document_removed_is_gone_from_answers() -> None:
    family, mirror = started(3, 60)
    last = family.keys[-1]
    add(mirror, family, [last + 1, last + 2, last + 4])
    remove(mirror, family, last + 2)
    assert_exact(mirror, family)
    assert mirror.without([last + 4], None).tolist() == [
        alive and key != last + 4 for key, alive in zip(family.keys, family.alive, strict=True)
    ]


def test_a_key_that_comes_back_after_erasure_takes_a_new_slot() -> None:
    """SQLite gives the highest key again once its row is erased."""
    family, mirror = started(4, 60)
    last = family.keys[-1]
    add(mirror, family, [last + 1])
    remove(mirror, family, last + 1)
    add(mirror, family, [last + 1])
    assert mirror._dense is None  # keys no longer ascend with slots
    add(mirror, family, [last + 1])  # already mirrored and alive: replayed twice, added once
    family.keys.pop(), family.lengths.pop(), family.terms.pop(), family.alive.pop()
    add(mirror, family, [last + 2, last + 3])
    remove(mirror, family, last + 2)
    assert_exact(mirror, family)


OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(st.integers(1, 4), min_size=1, max_size=5)),
        st.tuples(st.just("far"), st.integers(1, 3)),
        st.tuples(st.just("remove"), st.integers(0, 10_000)),
        st.tuples(st.just("reuse"), st.just(0)),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=150, deadline=None)  # no timing: the machine may be busy
@given(seed=st.integers(0, 2**16), count=st.integers(1, 40), gap=st.integers(1, 6), operations=OPERATIONS)
def test_any_sequence_of_writes_ranks_as_a_fresh_mirror(
    seed: int, count: int, gap: int, operations: list[tuple[str, object]]
) -> None:
    # Tables with little room, so appends grow them often.
    with mock.patch.object(_mirror, "DENSE_MIN_ROOM", 1):
        family, mirror = started(seed, count, gap)
        for operation, value in operations:
            last = max(family.keys)
            if operation == "append":
                assert isinstance(value, list)
                add(mirror, family, [last + sum(value[: i + 1]) for i in range(len(value))])
            elif operation == "far":
                assert isinstance(value, int)
                add(mirror, family, [last + _mirror.DENSE_SPAN * (len(family.keys) + 1) * value])
            elif operation == "remove" and len(family.live()) > 1:
                assert isinstance(value, int)
                live = family.live()
                remove(mirror, family, family.keys[live[value % len(live)]])
            elif operation == "reuse":
                if family.alive[family.slot(last)] and len(family.live()) > 1:
                    remove(mirror, family, last)
                if not family.alive[family.slot(last)]:
                    add(mirror, family, [last])
            assert mirror._count == len(family.keys)
            # Asked after every write, as reads between writes ask: the counts it keeps must follow.
            assert mirror.frequencies(TERMS, {}) == {
                term: sum(term in family.terms[slot] for slot in family.live()) for term in TERMS
            }
        assert_exact(mirror, family)


@pytest.mark.parametrize("with_table", [True, False])
def test_a_small_write_into_a_large_mirror_allocates_what_it_adds(with_table: bool) -> None:
    """Replaying a write of a few documents, a removal, and leaving a document out of a ranking
    into a mirror of 200,000 documents allocates far less than a map of its keys would take
    (some 20 MB at this size): keys still ascend, so their slots are found without one."""
    count = 200_000
    keys = np.arange(1, count + 1, dtype=np.int64) * (2 if with_table else 10)
    mirror = FamilyMirror(1, np.stack([keys, np.full(count, 7)], axis=1))
    rare = mirror.postings_of(keys[::40_000], np.ones(5, np.int64))  # makes the table, if close enough
    mirror.install("heron", rare)
    assert (mirror._dense is not None) == with_table
    last = int(keys[-1])
    logged = LoggedWrite(
        doc_keys=np.array([last + 1, last + 2, last + 3], np.int64),
        lengths=np.array([4, 5, 6], np.int32),
        terms=["heron"],
        bounds=np.array([0, 2], np.int64),
        positions=np.array([0, 2], np.int64),
        tfs=np.array([1, 2], np.int32),
    )
    tracemalloc.start()
    try:
        mirror.replay([(4, last + 1, logged), (5, int(keys[7]), None)])
        mask = mirror.without([int(keys[9]), last + 2], None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * 2**20, peak  # the mask alone is 200 KB
    assert not mask[7] and not mask[9] and not mask[count + 1] and mask[count]
    assert mirror.postings_of(np.array([last + 3], np.int64), np.ones(1, np.int64)).slots.tolist() == [
        count + 2
    ]
    assert (mirror._dense is not None) == with_table


def test_writes_into_a_common_word_copy_only_their_own_postings() -> None:
    """A word in every one of 200,000 documents: the first write that adds to it makes room
    (one copy), and the next writes fill that room, each allocating about what it adds rather
    than the 1.6 MB of the postings before it. Postings a reader already holds keep their
    length and values."""
    count = 200_000
    keys = np.arange(1, count + 1, dtype=np.int64)
    mirror = FamilyMirror(1, np.stack([keys, np.full(count, 7)], axis=1))
    mirror.install("common", mirror.postings_of(keys, np.ones(count, np.int64)))

    def write(generation: int, key: int) -> None:
        logged = LoggedWrite(
            doc_keys=np.array([key], np.int64),
            lengths=np.array([5], np.int32),
            terms=["common"],
            bounds=np.array([0, 1], np.int64),
            positions=np.array([0], np.int64),
            tfs=np.array([3], np.int32),
        )
        mirror.replay([(generation, key, logged)])

    write(2, count + 1)
    held = mirror._lookup("common", {})
    peaks = []
    for step in range(2, 12):
        tracemalloc.start()
        try:
            write(step + 1, count + step)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    assert max(peaks) < 64 * 2**10, peaks
    assert len(held.slots) == count + 1 and held.slots[-1] == count
    grown = mirror._lookup("common", {})
    assert grown.slots[-11:].tolist() == list(range(count, count + 11))
    assert grown.tfs[-11:].tolist() == [3.0] * 11
