"""The terms of many documents at once, grouped by term: what indexing a batch writes.

The same terms as `bm25.document_terms` gives each text, counted without a Python object per CJK
character: a text's CJK stretches become code points in one numpy array for the whole batch, and
characters and adjacent pairs are counted per document there (a Chinese text of 64 characters
spent 33 µs making and counting 127 one- and two-character strings). Words are numbered by their
term and counted the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import numpy.typing as npt

from ._bm25 import MAX_TERM_LENGTH
from ._tokens import index_words, stems

_OWNER_BITS = 21  # documents per batch below 2^21; a code point is below 2^21 too
_OWNER_MASK = (1 << _OWNER_BITS) - 1


@dataclass(frozen=True, slots=True)
class GroupedTerms:
    """Term i's postings are positions[bounds[i]:bounds[i + 1]] (documents by their place among
    the texts, ascending) with tfs in the same order; lengths are each text's summed tfs."""

    terms: list[str]  # distinct, sorted
    bounds: npt.NDArray[np.int64]
    positions: npt.NDArray[np.int64]
    tfs: npt.NDArray[np.int32]
    lengths: list[int]


def grouped_terms(texts: Sequence[str]) -> GroupedTerms:
    if len(texts) > _OWNER_MASK:
        raise ValueError("too many documents for one batch")
    tokenised = [index_words(text) for text in texts]
    # Each distinct written word is stemmed once and numbered by its term: a Counter per text and a
    # stem lookup per occurrence made this function 19 µs a text instead of 14.
    every = list(chain.from_iterable(words for words, _ in tokenised))
    written = list(set(every))
    stemmed = [stem[:MAX_TERM_LENGTH] for stem in stems(written)]
    terms = sorted(set(stemmed))
    number = {term: i for i, term in enumerate(terms)}
    term_of = {word: number[term] for word, term in zip(written, stemmed, strict=True)}
    lengths = np.fromiter((len(words) for words, _ in tokenised), np.int64, len(tokenised))
    owner = np.repeat(np.arange(len(texts)), lengths)
    keys, times = np.unique(
        np.fromiter(map(term_of.__getitem__, every), np.int64, len(every)) << _OWNER_BITS | owner,
        return_counts=True,
    )
    ids = [keys >> _OWNER_BITS]
    positions = [keys & _OWNER_MASK]
    tfs = [times]
    pieces: list[str] = []
    owners: list[int] = []
    for position, (_, stretches) in enumerate(tokenised):
        pieces += stretches
        owners += [position] * len(stretches)
    if pieces:
        # Stretches joined by U+0000, which is no CJK character: no pair spans two stretches.
        codes = np.frombuffer("\0".join(pieces).encode("utf-32-le"), "<u4").astype(np.int64)
        sizes = np.fromiter(map(len, pieces), np.int64, len(pieces))
        owner = np.repeat(np.array(owners, np.int64), sizes + 1)[: len(codes)]
        real = codes != 0
        paired = real[:-1] & real[1:]
        for cjk, held, spell in (
            (codes[real], owner[real], chr),
            ((codes[:-1] << _OWNER_BITS | codes[1:])[paired], owner[:-1][paired], _pair),
        ):
            distinct, index, found, times = _counted(cjk, held)
            ids.append(index + len(terms))
            terms += map(spell, distinct.tolist())
            positions.append(found)
            tfs.append(times)
            lengths += np.bincount(found, times, len(lengths)).astype(np.int64)  # np.add.at buffers 64 KiB
    term_ids = np.concatenate(ids)
    held_at = np.concatenate(positions)
    rank = np.empty(len(terms), np.int64)
    by_text = sorted(range(len(terms)), key=terms.__getitem__)
    rank[by_text] = np.arange(len(terms))
    ranked = rank[term_ids]
    # Words, characters and pairs each come ordered by term, then document, and their terms keep
    # that order among all terms: a stable sort by term merges the three (a full sort by term and
    # document took 15 times as long).
    order = np.argsort(ranked, kind="stable")
    return GroupedTerms(
        [terms[i] for i in by_text],
        np.concatenate(([0], np.cumsum(np.bincount(ranked, minlength=len(terms))))),
        held_at[order],
        np.concatenate(tfs)[order].astype(np.int32),
        lengths.tolist(),
    )


def _pair(code: int) -> str:
    return chr(code >> _OWNER_BITS) + chr(code & _OWNER_MASK)


def _counted(
    codes: npt.NDArray[np.int64], owners: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Occurrences (term code, document) counted: the distinct codes, and per (code, document)
    the code's index among them, the document and the count."""
    keys, times = np.unique(codes << _OWNER_BITS | owners, return_counts=True)
    distinct, index = np.unique(keys >> _OWNER_BITS, return_inverse=True)
    return distinct, index, keys & _OWNER_MASK, times
