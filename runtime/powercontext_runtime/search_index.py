"""The full-text index every backend keeps the same way, so every backend ranks the same way.

Each head document (a live Memory entry version, an approved Experience head, a topic head) is
stored as postings: (Scope, family, term, document, term frequency), with the document's length,
each term's document frequency and each Scope's totals. Ranking is Okapi BM25 computed in SQL from
those numbers with plain arithmetic, rounded, and ties broken by the newer document. SQLite and
OceanBase therefore return the same order for the same data — which their own full-text rankers
would not — and the cost of a query grows with the postings of its terms, not with the corpus.

Terms: lower-cased words, and for Chinese, Japanese and Korean text each character and each pair
of adjacent characters, so `记忆` matches inside `记忆系统`. A query uses its words, its single CJK
characters, and the pairs of its longer CJK runs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .text_search import SearchQuery, tokens

# Okapi BM25 with the usual constants; idf is Lucene's form, positive even for very common terms.
K1 = 1.2
B = 0.75
# Scores are compared after rounding, so float summation order cannot reorder near-equal results
# between database engines; equal rounded scores fall back to the newer document.
SCORE_DIGITS = 9
MAX_TERM_LENGTH = 64


def document_terms(text: str) -> Counter[str]:
    """Term frequencies of a document: words, CJK characters, and adjacent CJK pairs."""
    counts: Counter[str] = Counter()
    previous_cjk: str | None = None
    for token in tokens(text):
        term = token.text[:MAX_TERM_LENGTH]
        counts[term] += 1
        if token.cjk:
            if previous_cjk is not None:
                counts[previous_cjk + term] += 1
            previous_cjk = term
        else:
            previous_cjk = None
    return counts


def query_terms(query: SearchQuery) -> list[str]:
    """The index terms a parsed query asks for (a CJK pair is one term here, not a phrase)."""
    return list(dict.fromkeys("".join(term)[:MAX_TERM_LENGTH] for term in query.terms))


def idf(documents: int, document_frequency: int) -> float:
    return math.log(1.0 + (documents - document_frequency + 0.5) / (document_frequency + 0.5))


@dataclass(frozen=True, slots=True)
class Ranking:
    """What one ranked query needs: the weighted terms and the Scope's average document length."""

    weights: tuple[tuple[str, float], ...]
    average_length: float

    @property
    def is_empty(self) -> bool:
        return not self.weights


def ranking(
    terms: Sequence[str], frequencies: Iterable[tuple[str, int]], documents: int, total_length: int
) -> Ranking:
    """Weights for the terms that occur in the Scope's family; absent terms cannot match."""
    df = dict(frequencies)
    weights = tuple((t, idf(documents, df[t])) for t in terms if df.get(t, 0) > 0)
    average = total_length / documents if documents else 0.0
    return Ranking(weights, average)


def ranked_query_sql(placeholder: str, term_count: int) -> str:
    """SQL returning one Scope's family's best `doc_key`s by BM25; see `ranked_query_params`.

    The same text serves both backends except for the parameter placeholder.
    """
    p = placeholder
    # Every number is a double on both engines: MySQL mode would otherwise do DECIMAL arithmetic
    # on literals and parameters, with its own rounding. (x * 1e0) makes a parameter a double.
    cases = " ".join(f"WHEN {p} THEN ({p} * 1e0)" for _ in range(term_count))
    terms = ", ".join([p] * term_count)
    return (
        "SELECT p.doc_key FROM search_postings p"
        " JOIN search_docs d ON d.family = p.family AND d.doc_key = p.doc_key"
        f" WHERE p.scope_key = {p} AND p.family = {p} AND p.term IN ({terms})"
        " GROUP BY p.doc_key"
        f" ORDER BY ROUND(SUM((CASE p.term {cases} ELSE 0e0 END) * p.tf * {K1 + 1!r}e0"
        f" / (p.tf + {K1!r}e0 * (1e0 - {B!r}e0 + {B!r}e0 * d.length / ({p} * 1e0)))), {SCORE_DIGITS}) DESC,"
        " p.doc_key DESC"
        f" LIMIT {p}"
    )


def ranked_query_params(scope_key: int, family: str, rank: Ranking, limit: int) -> tuple[object, ...]:
    """Parameters in the order their placeholders appear: the filter, the IN list, the CASE pairs,
    the average length, the limit."""
    pairs = [value for term_weight in rank.weights for value in term_weight]
    terms = [term for term, _ in rank.weights]
    return (scope_key, family, *terms, *pairs, rank.average_length, limit)
