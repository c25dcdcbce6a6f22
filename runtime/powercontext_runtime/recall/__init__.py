"""Recall: from a query to bounded, ordered candidate pools, one per family.

Search (`powercontext_runtime.search`) turns text into terms and ranks documents; `pools` holds the
candidate values and the pool rule (interleaving across Scopes; prepare drops blanks and repeats),
and `families` recalls each family of a Scope and its Context References through the store, which
runs search's ranked reads. `parse_query` and `SearchQuery` are search's, re-exported as the query
recall takes.
"""

from ..search import MAX_QUERY_TERMS, SearchQuery, parse_query
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
from .pools import Candidate, Origin, interleave

__all__ = [
    "EXPERIENCE_POOL",
    "MAX_QUERY_TERMS",
    "MEMORY_POOL",
    "TOPIC_POOL",
    "Candidate",
    "Origin",
    "SearchQuery",
    "interleave",
    "legacy_topic_body",
    "parse_query",
    "recall_experience",
    "recall_memory",
    "recall_profiles",
    "recall_text_pools",
    "recall_topics",
    "text_topic_body",
    "topic_hit",
]
