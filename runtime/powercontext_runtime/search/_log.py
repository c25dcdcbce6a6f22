"""What `search_log` keeps of an index write: the documents it added and their postings, packed.

One write (a remember, a batch of them, an artifact revision) is one log row, however many
documents it indexes, so that mirrors replay a batch of 500 as a few array operations instead of
decoding 500 term maps, and the writer packs arrays it already has instead of encoding a map per
document (about 19 µs an entry as JSON). Layout, little-endian:

    n, m, p                      uint32 each: documents, distinct terms, postings
    offsets[n]                   uint32: each document's key less the row's `doc_key` (the smallest)
    lengths[n]                   int32: each document's length in tokens
    bounds[m + 1]                uint32: term i's postings are postings[bounds[i]:bounds[i + 1]]
    positions[p]                 uint32: the posting's document, as an index into offsets
    tfs[p]                       int32: the posting's term frequency
    terms                        UTF-8, sorted, joined by "\\n" (a term is word characters or CJK)

Everything after the offsets is known before the documents have keys, so it is packed before the
write transaction (`pack_tail`, kept in `TokenisedDocuments.logged`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np
import numpy.typing as npt

_HEADER = np.dtype("<u4")
_HEADER_BYTES = 12  # n, m and p


@dataclass(frozen=True, slots=True)
class LoggedWrite:
    """One logged index write, unpacked."""

    doc_keys: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int32]
    terms: Sequence[str]
    bounds: npt.NDArray[np.int64]
    positions: npt.NDArray[np.int64]
    tfs: npt.NDArray[np.int32]


@dataclass(frozen=True, slots=True)
class LoggedDocuments:
    """The documents one logged write added and their lengths, its terms and postings left
    packed: what a list of the family's documents needs of it."""

    doc_keys: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int32]


def pack_tail(
    lengths: npt.ArrayLike,
    terms: list[str],
    bounds: npt.ArrayLike,
    positions: npt.ArrayLike,
    tfs: npt.ArrayLike,
) -> bytes:
    """The part of a log row that needs no document keys (see the module's layout)."""
    sizes = np.array([len(np.asarray(lengths)), len(terms), len(np.asarray(positions))], "<u4")
    return b"".join(
        (
            sizes.tobytes(),
            np.asarray(lengths, "<i4").tobytes(),
            np.asarray(bounds, "<u4").tobytes(),
            np.asarray(positions, "<u4").tobytes(),
            np.asarray(tfs, "<i4").tobytes(),
            "\n".join(terms).encode(),
        )
    )


def pack(base: int, doc_keys: npt.NDArray[np.int64], tail: bytes) -> bytes:
    """A log row's `added` blob: the tail's header, the keys as offsets from `base`, the rest."""
    return tail[:_HEADER_BYTES] + (doc_keys - base).astype("<u4").tobytes() + tail[_HEADER_BYTES:]


def unpack(base: int, blob: bytes, lazy: bool = False) -> LoggedWrite:
    """The row's arrays; its terms as a list, or (`lazy`) as `PackedTerms`, decoded on demand: a
    merge or a cold term read needs a few of a CJK batch's hundreds of thousands."""
    _, m, p = (int(x) for x in np.frombuffer(blob, _HEADER, 3))
    documents = unpack_documents(base, blob)
    at = documents_end(blob)
    parts = []
    for count, dtype in ((m + 1, "<u4"), (p, "<u4"), (p, "<i4")):
        parts.append(np.frombuffer(blob, dtype, count, at))
        at += 4 * count
    bounds, positions, tfs = parts
    text = bytes(blob[at:])
    if lazy:  # views into the row where they can be: a CJK batch's row holds millions of postings
        return LoggedWrite(
            documents.doc_keys, documents.lengths, PackedTerms(text, m), bounds, positions, tfs
        )
    return LoggedWrite(
        documents.doc_keys,
        documents.lengths,
        text.decode().split("\n") if m else [],
        bounds.astype(np.int64),
        positions.astype(np.int64),
        tfs,
    )


def documents_end(head: bytes) -> int:
    """How many bytes from the front of a row hold its documents and their lengths (`head`: at
    least its first 4)."""
    return _HEADER_BYTES + 8 * int(np.frombuffer(head, _HEADER, 1)[0])


def unpack_documents(base: int, blob: bytes) -> LoggedDocuments:
    """The row's documents and lengths alone: two arrays from the front of the blob, of which
    `documents_end` bytes are enough (a fresh reader's list of a million documents may have a few
    hundred batches to apply, each with tens of thousands of postings after them)."""
    n = int(np.frombuffer(blob, _HEADER, 1)[0])
    offsets = np.frombuffer(blob, "<u4", n, _HEADER_BYTES)
    lengths = np.frombuffer(blob, "<i4", n, _HEADER_BYTES + 4 * n)
    return LoggedDocuments(offsets.astype(np.int64) + base, lengths)


class PackedTerms(Sequence[str]):
    """A log row's sorted terms, left packed and decoded one (or one slice) at a time; `bisect`
    finds a term among them in a few decodes. A term holds no newline (module layout)."""

    def __init__(self, text: bytes, count: int) -> None:
        self._text = text
        ends = np.flatnonzero(np.frombuffer(text, np.uint8) == 0x0A) if count else np.zeros(0, np.int64)
        self._starts = np.concatenate(([0], ends + 1)).astype(np.int64)[:count]
        self._ends = np.concatenate((ends, [len(text)])).astype(np.int64)[:count]

    def __len__(self) -> int:
        return len(self._starts)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise ValueError("packed terms slice with step 1 only")
            if stop <= start:
                return []
            return self._text[int(self._starts[start]) : int(self._ends[stop - 1])].decode().split("\n")
        if index < 0:
            index += len(self)
        return self._text[int(self._starts[index]) : int(self._ends[index])].decode()


def without_documents(base: int, blob: bytes, doc_keys: set[int]) -> bytes | None:
    """The blob with the postings of `doc_keys` taken out (terms only they held go too), or None
    when it holds none of them. The documents stay listed, now without terms, so the row still
    takes as many generations and a mirror replays every later change in order."""
    logged = unpack(base, blob)
    gone = np.isin(logged.doc_keys, np.fromiter(doc_keys, np.int64, len(doc_keys)))
    if not gone.any():
        return None
    keep = ~gone[logged.positions]
    terms, bounds = kept_terms(logged.terms, logged.bounds, keep)
    tail = pack_tail(logged.lengths, terms, bounds, logged.positions[keep], logged.tfs[keep])
    return pack(base, logged.doc_keys, tail)


def kept_terms(
    terms: Sequence[str], bounds: npt.ArrayLike, keep: npt.NDArray[np.bool_]
) -> tuple[list[str], npt.NDArray[np.int64]]:
    """Postings grouped by term (term i's are [bounds[i], bounds[i + 1])) once only those where
    `keep` holds are left: the terms that still have some, and their new bounds."""
    term_of = np.repeat(np.arange(len(terms)), np.diff(np.asarray(bounds, np.int64)))[keep]
    counts = np.bincount(term_of, minlength=len(terms))
    held = counts > 0
    return (
        [term for term, kept in zip(terms, held.tolist(), strict=True) if kept],
        np.concatenate(([0], np.cumsum(counts[held]))).astype(np.int64),
    )
