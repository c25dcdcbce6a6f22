"""Recall: from a query to bounded, ordered candidate pools, one per family.

`tokens` turns text into the tokens and queries that indexing and searching share, `bm25` is the
full-text index every backend keeps and ranks the same way, `pools` holds the candidate values and
the pool rules (interleaving across Scopes, caps; prepare drops blanks and repeats), and `families` recalls each
family of a Scope and its Context References through the store.
"""

from .bm25 import document_terms, query_terms
from .families import (
    EXPERIENCE_POOL,
    MEMORY_POOL,
    TOPIC_POOL,
    legacy_topic_body,
    recall_experience,
    recall_memory,
    recall_profiles,
    recall_text_pools,
    recall_topics,
    text_topic_body,
    topic_hit,
)
from .pools import Candidate, Origin, interleave, interleave_takes
from .tokens import MAX_QUERY_TERMS, SearchQuery, parse_query

__all__ = [
    "EXPERIENCE_POOL",
    "MAX_QUERY_TERMS",
    "MEMORY_POOL",
    "TOPIC_POOL",
    "Candidate",
    "Origin",
    "SearchQuery",
    "document_terms",
    "interleave",
    "interleave_takes",
    "legacy_topic_body",
    "parse_query",
    "query_terms",
    "recall_experience",
    "recall_memory",
    "recall_profiles",
    "recall_text_pools",
    "recall_topics",
    "text_topic_body",
    "topic_hit",
]
