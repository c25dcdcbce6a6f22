"""A document list brought up to date from log rows holds exactly the documents a replay of every
change in order leaves (a document's last change decides), in key order (search/_doclists.py), and
reads only the rows' documents to do it."""

from __future__ import annotations

import random

import numpy as np
import pytest

from powercontext_runtime.search import _doclists
from powercontext_runtime.search._doclists import applied
from powercontext_runtime.search._log import LoggedWrite, pack, pack_tail, unpack, unpack_documents


def added(keys: list[int], lengths: list[int]) -> LoggedWrite:
    empty = np.zeros(0, np.int64)
    return LoggedWrite(
        doc_keys=np.array(keys, np.int64),
        lengths=np.array(lengths, np.int32),
        terms=[],
        bounds=np.zeros(1, np.int64),
        positions=empty,
        tfs=np.zeros(0, np.int32),
    )


@pytest.mark.parametrize("seed", range(30))
def test_the_last_change_of_each_document_decides(seed: int) -> None:
    rng = random.Random(seed)
    start = {key: rng.randint(1, 50) for key in rng.sample(range(200), rng.randint(0, 60))}
    docs = np.array(sorted(start.items()), np.int64).reshape(-1, 2)
    expected = dict(start)
    rows = []
    generation = 0
    for _ in range(rng.randint(0, 12)):
        if rng.random() < 0.4:  # a removal, of a document there or not (a key may come back later)
            key = rng.randrange(220)
            expected.pop(key, None)
            generation += 1
            rows.append((generation, key, None))
        else:  # a write of new documents, some below keys already listed
            keys = sorted(rng.sample([k for k in range(220) if k not in expected], rng.randint(1, 5)))
            lengths = [rng.randint(1, 50) for _ in keys]
            expected.update(zip(keys, lengths, strict=True))
            generation += len(keys)
            rows.append((generation, keys[0], added(keys, lengths)))
    assert applied(docs, rows).tolist() == [list(pair) for pair in sorted(expected.items())]


@pytest.mark.parametrize("seed", range(30))
def test_writes_of_ever_larger_keys_only_append_and_a_key_out_of_order_still_sorts(seed: int) -> None:
    """An ingest's batches (each key above all before it) are appended as they come; a batch with
    a key at or below one before it goes the general way. Both give the replayed documents."""
    rng = random.Random(seed)
    start = {key: rng.randint(1, 50) for key in rng.sample(range(100), rng.randint(0, 30))}
    docs = np.array(sorted(start.items()), np.int64).reshape(-1, 2)
    expected = dict(start)
    rows = []
    generation, next_key = 0, max(start, default=0) + rng.randint(0, 1)
    for _ in range(rng.randint(1, 12)):
        keys = []
        for _ in range(rng.randint(1, 6)):
            next_key += rng.randint(1, 4)
            keys.append(next_key)
        if rng.random() < 0.1:  # now and then a key that does not come after the others
            keys[rng.randrange(len(keys))] = rng.randrange(next_key + 1)
            keys = sorted(set(keys))
        lengths = [rng.randint(1, 50) for _ in keys]
        expected.update(zip(keys, lengths, strict=True))
        generation += len(keys)
        rows.append((generation, keys[0], added(keys, lengths)))
    assert applied(docs, rows).tolist() == [list(pair) for pair in sorted(expected.items())]


@pytest.mark.parametrize("seed", range(10))
def test_a_rows_documents_read_alone_are_those_it_unpacks_whole(seed: int) -> None:
    """A list is brought up to date from the rows' documents only (`unpack_documents`), never
    decoding their terms and postings: the same keys and lengths as the whole row."""
    rng = np.random.default_rng(seed)
    count = int(rng.integers(1, 40))
    offsets = np.sort(rng.choice(5000, count, replace=False)).astype(np.int64)
    lengths = rng.integers(1, 300, count).astype(np.int32)
    terms = sorted({f"t{int(t)}" for t in rng.integers(0, 500, 60)} | {"记忆", "系统"})
    bounds = np.concatenate(([0], np.cumsum(rng.integers(1, 4, len(terms))))).astype(np.int64)
    positions = rng.integers(0, count, int(bounds[-1])).astype(np.int64)
    tfs = rng.integers(1, 5, int(bounds[-1])).astype(np.int32)
    base = int(rng.integers(1, 10**9))
    blob = pack(base, offsets + base, pack_tail(lengths, terms, bounds, positions, tfs))
    whole, documents = unpack(base, blob), unpack_documents(base, blob)
    assert documents.doc_keys.tolist() == whole.doc_keys.tolist() == (offsets + base).tolist()
    assert documents.lengths.tolist() == whole.lengths.tolist() == lengths.tolist()
    assert whole.terms == terms  # the rest of the row is still there for a replay


@pytest.mark.parametrize("seed", range(20))
def test_a_list_cut_into_rows_reads_back_whole(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """`_chunks` then `_joined`, the stored list's way there and back: rows of one document (stored
    as its length alone), rows cut where keys jump past a row's offsets, rows of many."""
    monkeypatch.setattr(_doclists, "LIST_CHUNK", random.Random(seed).choice([1, 3, 64]))
    rng = np.random.default_rng(seed)
    keys = np.unique(rng.integers(1, 2**40, size=int(rng.integers(0, 300))))
    if seed % 2:
        keys = np.unique(np.concatenate([keys, np.arange(5, 5 + 200)]))  # a dense stretch
    docs = np.stack([keys, rng.integers(1, 10**6, size=len(keys))], axis=1).astype(np.int64)
    bases = (
        sorted(int(k) for k in rng.choice(keys, size=min(3, len(keys)), replace=False)) if len(keys) else []
    )
    rows = _doclists._chunks(docs, bases)
    back = _doclists._joined(rows)
    assert back.dtype == np.int64 and back.shape == (len(keys), 2)
    assert np.array_equal(back, docs)
    assert _doclists._last_key(rows) == (int(keys[-1]) if len(keys) else None)
    tail = np.arange(2**41, 2**41 + 3, dtype=np.int64), np.array([7, 8, 9], np.int64)
    assert np.array_equal(_doclists._joined(rows, tail), np.concatenate([docs, np.stack(tail, axis=1)]))
