"""`make eval`: seed LoCoMo into a fresh `powercontext serve` through the public API, prepare every
question under fixed configurations and budgets, and write what the prepared text carried.

    .venv/bin/python -m eval.run                      # all 10 conversations, every budget
    .venv/bin/python -m eval.run --conversations 1    # the smoke run `make test` makes

One Scope per conversation; each dialogue turn is one Memory entry (`[date] speaker: text`, an
image by its caption); each session summary is one Topic Memory topic. A question is prepared
against its conversation's Scope with the question as the query. A gold turn counts as carried
when its entry is cited and not truncated. Latency is the client's wall clock per prepare.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devtools.server_process import ServerProcess
from powercontext_client import PowerContextClient

from .evidence import whole_entries
from .locomo import Conversation, data_path, load

RESULTS = Path(__file__).resolve().parent / "results"
BUDGETS = (2000, 8000, 32768)


@dataclass(frozen=True)
class Config:
    key: str
    label: str
    assembly: dict[str, Any] | None  # None: the legacy request, without `assembly`


CONFIGS = (
    Config("legacy", "legacy (no assembly)", None),
    Config("default", "`assembly: {}` (6 Memory, 2 Experience)", {}),
    Config("memory-8", "Memory only, limit 8", {"sections": [{"family": "memory", "limit": 8}]}),
    Config(
        "topics-memory",
        "session summaries as Topic Memory (2), then Memory (6)",
        {"sections": [{"family": "topic-memory", "limit": 2}, {"family": "memory", "limit": 6}]},
    ),
)


def scope_of(conversation: Conversation) -> str:
    return f"locomo:{conversation.sample_id}"


def seed(pc: PowerContextClient, conversation: Conversation) -> dict[str, str]:
    """Create the conversation's Scope and write it; returns entry id -> LoCoMo turn id."""
    scope_id = scope_of(conversation)
    pc.create_scope(scope_id, title=f"LoCoMo {conversation.sample_id}")
    turn_of: dict[str, str] = {}
    for turn in conversation.turns:
        entry = pc.remember(scope_id, turn.memory_text)
        turn_of[entry.citation.entry_id] = turn.dia_id
    for session in conversation.sessions:
        pc.put_topic(scope_id, title=f"Session {session.number} ({session.date})", summary=session.summary)
    return turn_of


def run_questions(
    pc: PowerContextClient, conversation: Conversation, turn_of: dict[str, str], config: Config, budget: int
) -> list[dict[str, Any]]:
    rows = []
    for question in conversation.questions:
        started = time.perf_counter()
        if config.assembly is None:
            prepared = pc.prepare_context(scope_of(conversation), question.question, max_bytes=budget)
        else:
            prepared = pc.prepare_context(
                scope_of(conversation), question.question, max_bytes=budget, assembly=config.assembly
            )
        elapsed = (time.perf_counter() - started) * 1000
        carried = {turn_of[e] for e in whole_entries(prepared.content) if e in turn_of}
        found = sum(1 for e in question.evidence if e in carried)
        rows.append(
            {
                "category": question.category,
                "gold": len(question.evidence),
                "found": found,
                "bytes": prepared.content_bytes,
                "ms": elapsed,
            }
        )
    return rows


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    latencies = sorted(r["ms"] for r in rows)
    return {
        "questions": len(rows),
        "evidence_recall": round(statistics.fmean(r["found"] / r["gold"] for r in rows), 4),
        "all_evidence": round(statistics.fmean(r["found"] == r["gold"] for r in rows), 4),
        "bytes_mean": round(statistics.fmean(r["bytes"] for r in rows), 1),
        "latency_p50_ms": round(latencies[len(latencies) // 2], 2),
        "latency_p95_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))], 2),
    }


def evaluate(
    conversations: Sequence[Conversation], budgets: Sequence[int], work: Path
) -> list[dict[str, Any]]:
    env = {"POWERCONTEXT_SERVER_DATABASE_URL": f"sqlite:///{work / 'eval.sqlite3'}"}
    server = ServerProcess(env["POWERCONTEXT_SERVER_DATABASE_URL"], work / "server.log", env)
    results: list[dict[str, Any]] = []
    try:
        with PowerContextClient(f"http://127.0.0.1:{server.port}", timeout=60) as pc:
            seeded = [(c, seed(pc, c)) for c in conversations]
            for config in CONFIGS:
                for budget in budgets:
                    rows: list[tuple[Conversation, dict[str, Any]]] = [
                        (c, row)
                        for c, turn_of in seeded
                        for row in run_questions(pc, c, turn_of, config, budget)
                    ]
                    for split in ("all", "dev", "test"):
                        chosen = [(c, r) for c, r in rows if split == "all" or c.split == split]
                        for category in (None, 1, 2, 3, 4, 5):
                            picked = [r for _, r in chosen if category is None or r["category"] == category]
                            if picked:
                                results.append(
                                    {
                                        "config": config.key,
                                        "budget": budget,
                                        "split": split,
                                        "category": category,
                                        **summarise(picked),
                                    }
                                )
                    print(f"{config.key} at {budget} B done", file=sys.stderr, flush=True)
    finally:
        server.stop()
    return results


def commit() -> str:
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return found.stdout.strip() or "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.run", description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="comma-separated max_bytes")
    parser.add_argument("--out", type=Path, default=RESULTS / "latest.json")
    args = parser.parse_args(argv)
    conversations = load()[: args.conversations]
    budgets = [int(b) for b in args.budgets.split(",")]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pc-eval-") as scratch:
        runs = evaluate(conversations, budgets, Path(scratch))
    report = {
        "generated": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "commit": commit(),
        "seconds": round(time.perf_counter() - started, 1),
        "python": platform.python_version(),
        "data": {
            "file": data_path().name,
            "conversations": len(conversations),
            "turns": sum(len(c.turns) for c in conversations),
            "questions": sum(len(c.questions) for c in conversations),
        },
        "configs": {c.key: c.label for c in CONFIGS},
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} in {report['seconds']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
