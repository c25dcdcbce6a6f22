"""Full-text search: text to terms, BM25, postings and their byte formats, index writes, deferral
and merges, the in-memory mirror with generations, and ranked reads (docs/search-index.md).

It imports nothing of the store, recall or prepare: the store hands it a connection (`Conn`, a
protocol defined here) inside its own transactions, and recall asks the store for ranked hits.
Private modules, one concern each: `_tokens` (text to tokens, queries), `_batch_terms` (a batch's
terms in numpy), `_bm25` (terms and scores), `_postings` (a row's byte format), `_log` (a log
row's byte format), `_tokenised` (what a write indexes), `_writes` (index upkeep), `_merge` and
`_merger` (runs and the thread merging them), `_mirror` (the in-memory postings), `_doclists` (a
family's documents packed for a fresh mirror), `_reads` (a snapshot's ranking), `_transactions`
(what the store's transactions call).
"""

from __future__ import annotations

import inspect

from . import _bm25, _tokens
from ._bm25 import document_terms, query_terms
from ._conn import Conn, Cursor, Query, Statement
from ._doclists import list_all as list_documents
from ._merger import IndexMerger, WriterGate
from ._mirror import SearchMirror
from ._reads import IndexStats, index_stats, index_stats_joined_query, stats_of
from ._tokenised import TokenisedDocuments, keep_documents, tokenise_documents
from ._tokens import MAX_QUERY_TERMS, SearchQuery, first_match, parse_query
from ._tokens import comparable as comparable_text
from ._tokens import normalised as normalised_text
from ._transactions import Transaction, merge_due, merge_takes, ranked_per_scope, ranked_reads
from ._writes import (
    document_writes,
    drop_index,
    forget_documents,
    index_document,
    index_documents,
    restart_log,
    unindex_document,
    write_documents,
)


def terms_sources() -> tuple[str, ...]:
    """The source of what decides the terms a text yields (tokenising and `document_terms`): a
    cache of indexed data keyed on it is stale once it changes."""
    return inspect.getsource(_tokens), inspect.getsource(_bm25.document_terms)


__all__ = [
    "MAX_QUERY_TERMS",
    "Conn",
    "Cursor",
    "IndexMerger",
    "IndexStats",
    "Query",
    "SearchMirror",
    "SearchQuery",
    "Statement",
    "TokenisedDocuments",
    "Transaction",
    "WriterGate",
    "comparable_text",
    "document_terms",
    "document_writes",
    "drop_index",
    "first_match",
    "forget_documents",
    "index_document",
    "index_documents",
    "index_stats",
    "index_stats_joined_query",
    "keep_documents",
    "list_documents",
    "merge_due",
    "merge_takes",
    "normalised_text",
    "parse_query",
    "query_terms",
    "ranked_per_scope",
    "ranked_reads",
    "restart_log",
    "stats_of",
    "terms_sources",
    "tokenise_documents",
    "unindex_document",
    "write_documents",
]
