"""The index's tuning constants that more than one of its modules reads (docs/search-index.md)."""

# Keep this many generations of `search_log` per (Scope, family); a mirror further behind rebuilds.
LOG_RETAIN = 4096
# A write of this many documents or more leaves its postings in its log row (`search_pending` names
# it) until the family's deferred writes hold MERGE_DOCUMENTS documents, then all go into one run
# (`search_runs`, merged in the background by `_merge.py`): a row per distinct term among
# thousands of documents, written in one stretch of a table clustered by run. Rows per term and
# write in the term-clustered `search_segments` would land all over it, dirtying most of its pages
# at every merge (merges slowed as the Scope grew).
DEFER_DOCUMENTS = 64
MERGE_DOCUMENTS = 4096
# RUN_FANOUT runs of one size class (MERGE_DOCUMENTS × RUN_FANOUT^k documents and up) merge into
# one, so a term read seeks a few runs per size class, whatever the Scope's size.
RUN_FANOUT = 8
# Prune the log every PRUNE_EVERY generations (a write that crosses a multiple prunes).
PRUNE_EVERY = 256
# A postings row stores each document's key less its segment's (the smallest) as a uint32, so no
# key may lie further than this above its segment's (`_postings.py`, and `_doclists.py`, which cuts
# document lists to fit).
MAX_KEY_OFFSET = 2**32 - 1
