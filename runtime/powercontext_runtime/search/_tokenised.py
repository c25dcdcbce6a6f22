"""What indexing some texts writes, worked out before the write transaction: three tokenising
paths by the write's size (one text, a small write, a batch), one result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import numpy.typing as npt

from . import _limits, _log
from ._batch_terms import grouped_terms
from ._bm25 import document_terms


@dataclass(frozen=True, slots=True)
class TokenisedDocuments:
    """What indexing some texts writes, worked out before the write transaction (it needs no
    database), so a writer holds the write lock only for its statements. Postings name documents
    by their position among the texts until the write knows their keys."""

    lengths: list[int]  # each document's, in tokens
    terms: list[str]  # the distinct terms, sorted: the table's primary-key order
    positions: npt.NDArray[np.int64]  # term i's documents are positions[bounds[i]:bounds[i + 1]]
    bounds: list[int]
    tfs: npt.NDArray[np.int32]  # the term frequencies in the same order
    logged: bytes  # the log row but the documents' keys (_log.pack_tail)


def tokenise_documents(texts: Sequence[str]) -> TokenisedDocuments:
    if len(texts) == 1:  # a single remember: each term's one posting is the document's
        single = document_terms(texts[0])
        lengths = [sum(single.values())]
        terms = sorted(single)
        tfs = np.array([single[term] for term in terms], np.int32)
        positions = np.zeros(len(terms), np.int64)
        bounds = np.arange(len(terms) + 1)
    elif len(texts) < _limits.DEFER_DOCUMENTS:
        # A small write (an import page, an artifact): grouped by term with C-level passes, a dict
        # lookup per posting and one sort; `grouped_terms` would set aside more scratch for its
        # sorts than such a write's postings take.
        counted = [document_terms(text) for text in texts]
        lengths = [sum(counts.values()) for counts in counted]
        every = list(chain.from_iterable(counted))
        terms = sorted(set(every))
        number = {term: i for i, term in enumerate(terms)}
        ids = np.fromiter(map(number.__getitem__, every), np.int64, len(every))
        order = np.argsort(ids, kind="stable")  # stable: each term's documents stay in text order
        sizes = np.fromiter(map(len, counted), np.int64, len(counted))
        positions = np.repeat(np.arange(len(counted)), sizes)[order]
        tfs = np.fromiter(chain.from_iterable(c.values() for c in counted), np.int32, len(every))[order]
        bounds = np.concatenate(([0], np.cumsum(np.bincount(ids, minlength=len(terms)))))
    else:  # a batch: CJK counted in numpy for the whole batch at once
        grouped = grouped_terms(texts)
        terms, bounds, positions, tfs, lengths = (
            grouped.terms,
            grouped.bounds,
            grouped.positions,
            grouped.tfs,
            grouped.lengths,
        )
    return _documents(lengths, terms, positions, bounds, tfs)


def keep_documents(documents: TokenisedDocuments, keep: Sequence[int]) -> TokenisedDocuments:
    """The write of only the documents at positions `keep` (ascending), renumbered in that order:
    what tokenising those texts alone yields, without tokenising them again."""
    if len(keep) == len(documents.lengths):
        return documents
    renumbered = np.full(len(documents.lengths), -1, np.int64)
    renumbered[np.asarray(keep, np.int64)] = np.arange(len(keep))
    mapped = renumbered[documents.positions]
    kept = mapped >= 0
    term_of = np.repeat(np.arange(len(documents.terms)), np.diff(np.asarray(documents.bounds)))
    counts = np.bincount(term_of[kept], minlength=len(documents.terms))
    present = counts > 0
    terms = [term for term, there in zip(documents.terms, present.tolist(), strict=True) if there]
    bounds = np.concatenate(([0], np.cumsum(counts[present])))
    lengths = [documents.lengths[i] for i in keep]
    return _documents(lengths, terms, mapped[kept], bounds, documents.tfs[kept])


def _documents(
    lengths: list[int],
    terms: list[str],
    positions: npt.NDArray[np.int64],
    bounds: npt.NDArray[np.int64],
    tfs: npt.NDArray[np.int32],
) -> TokenisedDocuments:
    return TokenisedDocuments(
        lengths,
        terms,
        positions,
        bounds.tolist(),
        tfs,
        _log.pack_tail(lengths, terms, bounds, positions, tfs),
    )
