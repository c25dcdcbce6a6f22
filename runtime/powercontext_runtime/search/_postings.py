"""Postings and their byte format: a term's (document, term frequency) pairs within one segment
or run, as stored in a `search_segments` or `search_runs` row.

A row's value is the term frequencies as little-endian int32, then each document's key less the
segment's as little-endian uint32 (8 bytes a posting). A row whose one posting is the segment's
own document (every row of a single remember) holds just its term frequency as an integer:
Python's sqlite3 binds a blob about 1 µs slower, a third of such a row's insert. OceanBase's
LONGBLOB gives that integer back as its decimal digits, fewer than 8 bytes, which `single_tf` tells
apart from a packed row by length.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import cast

import numpy as np
import numpy.typing as npt

from ._limits import MAX_KEY_OFFSET

_SINGLE_ROW = struct.Struct("<iI")  # a single posting as a blob: its tf, offset 0


def pack_postings(
    segment: int, doc_keys: Sequence[int] | npt.NDArray[np.int64], tfs: Sequence[int] | npt.NDArray[np.int64]
) -> int | bytes:
    """A term's postings in one segment: the term frequency alone when its one document is the
    segment's own, else the term frequencies as little-endian int32 followed by each document's
    key less the segment's as little-endian uint32 (a multiple of 8 bytes)."""
    held = np.asarray(doc_keys, np.int64)
    return packed_rows(segment, [""], [0, len(held)], held, np.asarray(tfs, np.int32))[0][1]


def unpack_postings(segment: int, packed: int | bytes) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """(document keys, term frequencies) of a row packed by `pack_postings`. Cold term reads decode
    rows one by one, and `_unpack_rows`'s set-up costs more than one row (86 -> 100 ms for 300 terms)."""
    tf = single_tf(packed)
    if tf is not None:
        return np.array([segment], np.int64), np.array([tf], np.int32)
    offsets, tfs = packed_views(bytes(packed))
    return offsets.astype(np.int64) + segment, tfs


def packed_views(blob: bytes) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int32]]:
    """A packed row's offsets from its segment and term frequencies, as views into `blob` (a row
    of several postings: not a `single_tf` one)."""
    count = len(blob) // 8
    return np.frombuffer(blob, "<u4", count, 4 * count), np.frombuffer(blob, "<i4", count)


def row_views(packed: int | bytes) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int32]]:
    """`packed_views` of any row, a single posting's included (its one offset is 0)."""
    tf = single_tf(packed)
    if tf is not None:
        return np.zeros(1, np.uint32), np.array([tf], np.int32)
    return packed_views(bytes(packed))


def single_tf(packed: int | bytes) -> int | None:
    """The term frequency of a single-posting row, else None. SQLite gives the integer back;
    OceanBase's LONGBLOB keeps its decimal digits, fewer than 8 (a text has under 10^7 words)."""
    if isinstance(packed, int):
        return packed
    return int(packed) if len(packed) < 8 else None


def postings_in(size: int) -> int:
    """How many postings a row holds whose value is `size` bytes long (SQL's `length`, which gives
    a single posting's integer as its digits on both backends; see `single_tf`)."""
    return 1 if size < 8 else size // 8


def _offsets(segment: int, doc_keys: Sequence[int] | npt.NDArray[np.int64]) -> bytes:
    offsets = np.asarray(doc_keys, np.int64) - segment
    if len(offsets) and offsets.max() > MAX_KEY_OFFSET:  # the segment is the smallest key: none is below
        raise ValueError("document keys too far apart for one index segment")
    return offsets.astype("<u4").tobytes()


def packed_rows(
    segment: int,
    terms: Sequence[str],
    bounds: Sequence[int],
    held: npt.NDArray[np.int64],
    tfs: npt.NDArray[np.int32],
) -> list[tuple[str, int | bytes]]:
    """Each term with its postings packed as `pack_postings` does, from arrays already grouped.
    Every blob is laid out in one buffer by array operations and a row takes a slice of it: a run
    has thousands of terms, and a slice costs less than packing each row's arrays."""
    edges = np.asarray(bounds, np.int64)
    starts, sizes = edges[:-1], np.diff(edges)
    words = np.empty(2 * len(held), "<u4")
    offsets = _halves(sizes)
    words[~offsets] = tfs.astype("<i4").view("<u4")
    words[offsets] = np.frombuffer(_offsets(segment, held), "<u4")
    buffer = words.tobytes()
    byte_edges = (8 * edges).tolist()
    values: list[int | bytes] = [buffer[a:b] for a, b in pairwise(byte_edges)]
    alone = np.flatnonzero(sizes == 1)
    alone = alone[held[starts[alone]] == segment]
    for at, tf in zip(alone.tolist(), tfs[starts[alone]].tolist(), strict=True):
        values[at] = int(tf)
    return list(zip(terms, values, strict=True))


@dataclass(frozen=True, slots=True)
class Grouped:
    """Postings grouped by term: term i's are held[bounds[i]:bounds[i + 1]] with their tfs."""

    terms: list[str]
    bounds: list[int]
    held: npt.NDArray[np.int64]
    tfs: npt.NDArray[np.int32]


def by_term(
    block_terms: list[str],
    starts: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    held: npt.NDArray[np.int64],
    tfs: npt.NDArray[np.int32],
) -> Grouped:
    """Blocks of postings (block i: the term block_terms[i], postings [starts[i], starts[i] +
    sizes[i]) of held and tfs) regrouped by term, a term's blocks in their order. Sorting the
    blocks, not the postings, keeps a merge's sort to a few thousand items."""
    union = sorted(set(block_terms))
    number = {term: i for i, term in enumerate(union)}
    ids = np.fromiter(map(number.__getitem__, block_terms), np.int64, len(block_terms))
    order = np.argsort(ids, kind="stable")
    taken = _ranges(starts[order], sizes[order])
    counts = np.bincount(ids, sizes, minlength=len(union)).astype(np.int64)
    return Grouped(union, np.concatenate(([0], np.cumsum(counts))).tolist(), held[taken], tfs[taken])


def _ranges(starts: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The indexes starts[0] .. starts[0] + sizes[0] - 1, then those of the next range, and so on."""
    ends = np.cumsum(sizes)
    shifts: npt.NDArray[np.int64] = np.repeat(starts - (ends - sizes), sizes)
    return np.arange(len(shifts), dtype=np.int64) + shifts


def unpack_rows(
    segments: list[int], packed: list[int | bytes]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """`unpack_postings` of many rows at once: each row's number of postings, then the documents
    and term frequencies of them all, row after row."""
    blobs = [
        _SINGLE_ROW.pack(tf, 0) if (tf := single_tf(value)) is not None else cast(bytes, value)
        for value in packed
    ]
    sizes = np.fromiter(map(len, blobs), np.int64, len(blobs)) // 8
    words = np.frombuffer(b"".join(blobs), "<u4")
    offsets = _halves(sizes)
    held = words[offsets] + np.repeat(np.array(segments, np.int64), sizes)
    tfs = words[~offsets].view("<i4")
    return sizes, held, tfs


def _halves(sizes: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Which words of packed postings laid end to end (`sizes[i]` postings each: their tfs, then
    their offsets) are offsets."""
    return np.repeat(np.tile(np.array([False, True]), len(sizes)), np.repeat(sizes, 2))
