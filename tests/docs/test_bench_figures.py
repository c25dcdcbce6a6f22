"""Figures the docs quote from `make bench` and `make bench-hooks` are rendered from bench/results/,
never typed by hand: rendering the committed results again leaves every marked block as it is."""

from __future__ import annotations

import json

from bench import render


def test_every_marked_block_matches_the_latest_bench_results() -> None:
    results = json.loads(render.RESULTS.read_text())
    files = render.rewrites(results)
    assert {p.relative_to(render.REPO).as_posix() for p in files} == {
        "README.md",
        "docs/benchmarks.md",
        "docs/observability.md",
        "docs/claude-code.md",
        "docs/codex.md",
    }
    stale = [p.name for p, content in files.items() if p.read_text() != content]
    assert stale == [], "run `make bench-readme` (python -m bench.render) and commit"
