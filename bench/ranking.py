"""Pruned against exhaustive top-k ranking on one synthetic family of a million documents, in one
process (run by hand; not part of `make test` or `make bench`):

    .venv/bin/python -m bench.ranking                          # 1M documents, Memory's neighbour rule
    .venv/bin/python -m bench.ranking --documents 200000 --queries 100 --no-neighbours

The family is a `FamilyMirror` (search/_mirror.py) of `--documents` documents of 10 to 60 terms
whose vocabulary follows Zipf's law (the term of rank r is in about documents / (2 r) of them).
Each query has 3 to 8 terms: one common word (rank 1 to 30) and others of any rank (log-uniform
from 30 to 50,000), so most queries join a few rare words to a common one, as questions do once
their stop words are dropped. Every query ranks warm (postings and contributions cached, as
between writes) both ways in turn, pruned (`top_documents`) and exhaustive (`scored_documents`,
today's path), `--rounds` times, and the two answers must be equal. Printed: p50 and p95 of
each, in wall time and in the thread's CPU time (steadier on a shared machine), and how many
queries the pruned path answered without falling back.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from unittest import mock

import numpy as np

from powercontext_runtime.search import _prune
from powercontext_runtime.search._bm25 import TermPostings, term_weights
from powercontext_runtime.search._mirror import FamilyMirror

from .stats import percentile

COMMON_RANKS = 30
RARE_RANKS = 50_000


def build(documents: int, seed: int) -> tuple[FamilyMirror, float]:
    """A mirror of `documents` documents with keys ascending by slot, and their average length."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(10, 61, documents)
    mirror = FamilyMirror(documents, list(zip(range(1, documents + 1), lengths.tolist(), strict=True)))
    return mirror, float(lengths.mean())


def postings(rng: np.random.Generator, documents: int, rank: int) -> TermPostings:
    frequency = max(1, min(documents, documents // (2 * rank)))
    slots = np.sort(rng.choice(documents, frequency, replace=False)).astype(np.int32)
    return TermPostings(slots, rng.geometric(0.6, frequency).astype(np.float32))


def queries(rng: np.random.Generator, count: int) -> list[list[int]]:
    """Each query's term ranks: a common one, then rarer ones."""
    out = []
    for _ in range(count):
        size = int(rng.integers(3, 9))
        common = int(rng.integers(1, COMMON_RANKS + 1))
        others = np.exp(rng.uniform(math.log(COMMON_RANKS), math.log(RARE_RANKS), size - 1)).astype(int)
        out.append(list(dict.fromkeys([common, *others.tolist()])))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=8)
    parser.add_argument("--no-neighbours", action="store_true")
    parser.add_argument("--seed", type=int, default=34)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    mirror, average = build(args.documents, args.seed)
    asked = queries(rng, args.queries)
    frequencies: dict[str, int] = {}
    for rank in sorted({rank for query in asked for rank in query}):
        term = f"t{rank}"
        mirror.install(term, postings(rng, args.documents, rank))
        frequencies[term] = len(mirror._terms[term].slots)
    times: dict[str, list[float]] = {"pruned": [], "exhaustive": []}
    cpu: dict[str, list[float]] = {"pruned": [], "exhaustive": []}
    pruned = 0
    neighbours = not args.no_neighbours
    for round_ in range(args.rounds):
        for query in asked:
            weights = term_weights([f"t{rank}" for rank in query], frequencies, args.documents)
            answers = {}
            # Alternate which goes first, so neither always finds the caches the other warmed.
            for way in ("pruned", "exhaustive") if round_ % 2 == 0 else ("exhaustive", "pruned"):
                threshold = _prune.PRUNE_POSTINGS if way == "pruned" else sys.maxsize
                with mock.patch.object(_prune, "PRUNE_POSTINGS", threshold):
                    started, thread_started = time.perf_counter(), time.thread_time()
                    answers[way] = mirror.top(weights, average, args.limit, {}, None, neighbours)
                    times[way].append((time.perf_counter() - started) * 1000.0)
                    cpu[way].append((time.thread_time() - thread_started) * 1000.0)
            if answers["pruned"] != answers["exhaustive"]:
                print(f"DIFFERENT ANSWERS for {query}", file=sys.stderr)
                return 1
            if round_ == 0:
                with mock.patch.object(_prune, "scored_documents", lambda *_: []):
                    pruned += bool(mirror.top(weights, average, args.limit, {}, None, neighbours))
    postings_held = sum(len(mirror._terms[f"t{rank}"].slots) for query in asked for rank in query)
    print(
        f"{args.documents} documents, {len(asked)} queries x {args.rounds} rounds, limit {args.limit},"
        f" neighbours {'on' if neighbours else 'off'}, {postings_held / len(asked):.0f} postings a query;"
        f" pruned path answered {pruned}/{len(asked)}"
    )
    for way, spent in times.items():
        print(
            f"  {way:10s} p50 {statistics.median(spent):7.2f} ms  p95 {percentile(spent, 95):7.2f} ms"
            f"  mean {statistics.fmean(spent):7.2f} ms   CPU p50 {statistics.median(cpu[way]):7.2f} ms"
            f"  p95 {percentile(cpu[way], 95):7.2f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
