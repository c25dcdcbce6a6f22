"""`make eval` on the project's own smoke conversations (eval/fixtures/smoke.json, LoCoMo's format,
written for the project): the harness seeds through the API, counts carried evidence from the
explain receipts, and writes results that docs/evaluation.md is rendered from. Nothing here reads
LoCoMo itself, which lives outside the repository and only `make eval` reads."""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import shutil
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devtools.embedding_models import DEFAULT
from eval import hybrid, model_step, report, run
from eval.locomo import PATH_ENV, load
from powercontext_client import PowerContextClient
from powercontext_runtime import VECTOR_WEIGHT

from ..conftest import LiveServer, settings_for
from ..hosts.fakes import Received, RecordingServer, Reply

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "eval" / "fixtures" / "smoke.json"
# Two budgets keep the shared run short; the receipt test runs every one of `run.BUDGETS`.
SMOKE_BUDGETS = (2000, 8000)
FAKE_ANSWER = "7 May 2023."


@dataclass(frozen=True)
class SmokeRun:
    results: dict[str, Any]
    asked: list[Received]  # what the fake model received
    work: Path  # its databases and the model's vectors (`--work`)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> SmokeRun:
    """One `make eval` run over the smoke data, both legs, with a fake model answering the model
    step: a run starts a server per leg and the embedding model's, so the tests share it."""

    def reply(received: Received) -> Reply:
        body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": FAKE_ANSWER}}]}
        return Reply(200, "application/json", json.dumps(body).encode())

    out = tmp_path_factory.mktemp("smoke") / "latest.json"
    work = out.parent / "work"
    with RecordingServer(reply) as fake:
        # The toolchain's bundled model: the evaluation's own (all-mpnet-base-v2) comes with `make eval`.
        args = [
            "--data",
            str(SMOKE),
            "--out",
            str(out),
            "--embedding-model",
            DEFAULT.name,
            "--work",
            str(work),
        ]
        args += ["--budgets", ",".join(map(str, SMOKE_BUDGETS))]
        args += ["--model-url", fake.base_url, "--model", "fake-model"]
        assert run.main(args) == 0
        asked = fake.requests_to("/chat/completions")
    return SmokeRun(json.loads(out.read_text()), asked, work)


def test_the_smoke_data_runs_every_configuration_and_budget(smoke_run: SmokeRun) -> None:
    results = smoke_run.results
    conversations = load(SMOKE)
    questions = [(c.split, q) for c in conversations for q in c.questions]
    dev = [c.index for c in conversations if c.split == "dev"]
    test = [c.index for c in conversations if c.split == "test"]
    assert results["data"] == {
        "file": SMOKE.name,
        "conversations": len(conversations),
        "dev": dev,
        "test": test,
        "turns": sum(len(c.turns) for c in conversations),
        "questions": len(questions),
    }
    index = {(r["config"], r["budget"], r["split"], r["category"]): r for r in results["runs"]}
    # The hybrid leg (the embedding model on loopback) runs its configurations again.
    keys = [c.key for c in run.CONFIGS] + [key + hybrid.SUFFIX for key in hybrid.HYBRID_CONFIGS]
    assert {(c, b) for c, b, _, _ in index} == {(key, b) for key in keys for b in SMOKE_BUDGETS}
    for key in keys:
        for budget in SMOKE_BUDGETS:
            overall = index[key, budget, "all", None]
            assert overall["questions"] == len(questions)
            assert overall["gold_turns"] == sum(len(q.evidence) for _, q in questions)
            assert 0 < overall["evidence_recall"] <= 1 and 0 <= overall["all_evidence"] <= 1
            assert 0 < overall["bytes_mean"] <= budget and overall["tokens_mean"] > 0
            assert overall["latency_p50_ms"] <= overall["latency_p95_ms"]
            for split in ("dev", "test"):
                in_split = [q for s, q in questions if s == split]
                assert index[key, budget, split, None]["questions"] == len(in_split)
            for category in {q.category for _, q in questions}:
                picked = [q for _, q in questions if q.category == category]
                assert index[key, budget, "all", category]["questions"] == len(picked)
    formats = results["format_ablation"]
    assert 0 < formats["markdown"]["documents"] == formats["legacy"]["documents"] <= len(questions)
    block = report.render(results)
    assert "Memory only, limit 8" in block and "Ablation A" in block and "Lexical and hybrid" in block
    # The hybrid leg's model is the one asked for, at the server's default weight (none is tuned
    # for it in the evaluation), and the report says which model and weight it was.
    assert results["embedding_model"] == DEFAULT.name and DEFAULT.about in " ".join(block.split())
    assert results["vector_weight"] == VECTOR_WEIGHT and f"vector weight ({VECTOR_WEIGHT:g})" in block
    assert f"dev = conversations {report.span(dev)},\ntest = {report.span(test)}." in block
    assert results["machine"]["cpus"] == os.cpu_count() and len(results["machine"]["load_average"]) == 2
    assert f"on {os.cpu_count()} CPUs." in block


def test_the_smoke_data_holds_what_the_harness_reads() -> None:
    """Both splits, every question category (the adversarial one without an answer), image
    captions, session summaries, events and observations; malformed evidence ids are dropped."""
    raw = json.loads(SMOKE.read_text(encoding="utf-8"))
    conversations = load(SMOKE)
    half = (len(raw) + 1) // 2
    assert [c.split for c in conversations] == ["dev"] * half + ["test"] * (len(raw) - half)
    assert {"dev", "test"} <= {c.split for c in conversations}
    for item, conversation in zip(raw, conversations, strict=True):
        turns = {t.dia_id: t for t in conversation.turns}
        kept = [q for q in item["qa"] if any(ref in turns for ref in _refs(q["evidence"]))]
        assert [q.question for q in conversation.questions] == [q["question"] for q in kept]
        for question, source in zip(conversation.questions, kept, strict=True):
            assert question.evidence == tuple(r for r in _refs(source["evidence"]) if r in turns)
            assert question.answer == source.get("answer", "")
        sessions = [s for s in item["conversation"].values() if isinstance(s, list)]
        images = [t for session in sessions for t in session if "blip_caption" in t]
        assert images and all(t["blip_caption"] in turns[t["dia_id"]].memory_text for t in images)
        assert len(conversation.sessions) == len(item["session_summary"])
        assert len(conversation.events) == len(item["event_summary"])
        assert {name for name, _ in conversation.observations} == {
            name for session in item["observation"].values() for name in session
        }
    questions = [q for c in conversations for q in c.questions]
    assert {q.category for q in questions} == set(report.CATEGORIES)
    assert all(not q.answer for q in questions if q.category == 5)
    dropped = sum(len(i["qa"]) for i in raw) - len(questions)
    assert dropped > 0  # a question whose only evidence id is malformed is not asked


def _refs(evidence: list[str]) -> list[str]:
    """Evidence ids as LoCoMo writes them: a list of `D<session>:<turn>`, some joined by `; `."""
    return [ref.strip() for joined in evidence for ref in joined.split(";")]


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        ([], "missing.json", ["LoCoMo not found:", PATH_ENV, "missing.json", "../shared/data/locomo/"]),
        ([], str(SMOKE), ["is not LoCoMo's locomo10.json", "--data"]),
        (["--data", "missing.json"], None, ["no such file:", "missing.json"]),
    ],
)
def test_make_eval_without_its_data_stops_with_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    env: str | None,
    expected: list[str],
) -> None:
    monkeypatch.delenv(PATH_ENV, raising=False)
    if env is not None:
        monkeypatch.setenv(PATH_ENV, str(tmp_path / env) if env == "missing.json" else env)
    args = [str(tmp_path / a) if a == "missing.json" else a for a in args]
    out = tmp_path / "latest.json"
    assert run.main([*args, "--out", str(out)]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert len(printed.err.splitlines()) == 1, printed.err
    assert all(part in printed.err for part in expected), printed.err
    assert not out.exists()


# runpy runs a fresh copy of the module as __main__ beside the one this file imported, and says so.
@pytest.mark.filterwarnings("ignore:'eval.run' found in sys.modules:RuntimeWarning")
def test_python_m_eval_run_exits_with_the_status_main_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The module's entry point, as `make eval` starts it (`python -m eval.run`)."""
    missing = tmp_path / "missing.json"
    monkeypatch.setattr(
        sys, "argv", ["eval.run", "--data", str(missing), "--out", str(tmp_path / "out.json")]
    )
    with pytest.raises(SystemExit) as exited:
        runpy.run_module("eval.run", run_name="__main__")
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines() == [f"eval: no such file: {missing}"]


def test_the_model_step_answers_from_the_injected_text_and_scores_f1(smoke_run: SmokeRun) -> None:
    questions = [q for c in load(SMOKE) for q in c.questions]
    answerable = [q for q in questions if q.answer]  # the adversarial category has no answer
    assert 0 < len(answerable) < len(questions)
    assert len(smoke_run.asked) == len(answerable)
    prompts = [received.json()["messages"][-1]["content"] for received in smoke_run.asked]
    # Each question is asked with the text prepared for it, in the run's order.
    for question, prompt in zip(answerable, prompts, strict=True):
        assert "BEGIN_POWERCONTEXT_PREPARED_TEXT_V1" in prompt and question.question in prompt
    results = smoke_run.results
    row = next(
        r
        for r in results["runs"]
        if (r["config"], r["budget"], r["split"], r["category"])
        == (run.MODEL_CONFIG, run.MODEL_BUDGET, "all", None)
    )
    expected = [model_step.f1(FAKE_ANSWER, q.answer) for q in answerable]
    assert row["answered"] == len(expected)
    assert row["answer_f1"] == round(sum(expected) / len(expected), 4)
    assert "fake-model" in report.render(results)
    # Only the model step's configuration and budget is answered.
    assert all(
        "answered" not in r
        for r in results["runs"]
        if (r["config"], r["budget"]) != (run.MODEL_CONFIG, run.MODEL_BUDGET)
    )


def test_answer_f1_counts_shared_words_after_normalising() -> None:
    assert model_step.f1("7 May 2023.", "7 May 2023") == 1.0
    assert model_step.f1("The painting", "painting of a sunrise") == 2 * (1 / 1) * (1 / 3) / (1 + 1 / 3)
    assert model_step.f1("unknown", "2022") == 0.0


def test_the_report_names_the_splits_as_ranges() -> None:
    assert [report.span(s) for s in ([1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [2], [1, 3], [])] == [
        "1-5",
        "6-10",
        "2",
        "1, 3",
        "none",
    ]


def _recall(results: dict[str, Any]) -> list[tuple[Any, ...]]:
    fields = ("questions", "gold_turns", "evidence_recall", "question_recall", "bytes_mean", "tokens_mean")
    return sorted(
        (r["config"], r["budget"], r["split"], r["category"] or 0, *(r[f] for f in fields))
        for r in results["runs"]
    )


def _entries(database: Path) -> int:
    with contextlib.closing(sqlite3.connect(database)) as conn:
        return int(conn.execute("SELECT count(*) FROM memory_entries").fetchone()[0])


def test_a_kept_work_directory_is_read_back_not_seeded_again_and_refused_when_it_differs(
    smoke_run: SmokeRun, tmp_path: Path
) -> None:
    """`--work DIR`: a run on DIR reads each Scope a finished seeding wrote back instead of seeding
    it, and measures the same. A turn edited since, or a Scope whose seeding did not finish, is
    refused (`SeededOtherData`, which `main` prints in one line) instead of being measured. The
    model's vectors DIR keeps: tests/embedding/test_vector_file.py."""
    turns = sum(len(c.turns) for c in load(SMOKE))
    assert len((smoke_run.work / f"vectors-{DEFAULT.name}.txt").read_text().splitlines()) >= turns
    database = tmp_path / "eval.sqlite3"
    shutil.copy(smoke_run.work / "eval.sqlite3", database)
    seeded = smoke_run.work / "eval.sqlite3.seeded"
    changed = json.loads(SMOKE.read_text())
    changed[-1]["conversation"]["session_1"][0]["text"] += " (edited)"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(changed))
    config = next(c for c in run.CONFIGS if c.key == "memory-8")
    first, last = load(SMOKE)[0], load(edited)[-1]
    # In process: a server of its own would take a few seconds to start.
    server = LiveServer(settings_for(tmp_path, POWERCONTEXT_SERVER_DATABASE_URL=f"sqlite:///{database}"))
    server.start()
    try:
        with PowerContextClient(server.base_url) as pc:
            rows = [
                (c, row)
                for c in load(SMOKE)
                for row in run.run_questions(pc, c, run.seeded(pc, c, seeded), config, 8000)
            ]
            assert _entries(database) == turns  # nothing seeded again
            with pytest.raises(
                run.SeededOtherData, match=f"^locomo:{last.sample_id} in the work directory holds other turns"
            ):
                run.seeded(pc, last, seeded)
            with pytest.raises(
                run.SeededOtherData,
                match=f"^locomo:{first.sample_id} is in the work directory, but an earlier run stopped seeding it$",
            ):
                run.seeded(pc, first, tmp_path / "none.seeded")
    finally:
        server.stop()
    assert _recall({"runs": run.split_summaries(config, 8000, rows)}) == [
        row for row in _recall(smoke_run.results) if row[:2] == ("memory-8", 8000)
    ]
    assert _entries(database) == turns


def test_main_prints_a_refused_work_directory_in_one_line_and_writes_no_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `main` does with `SeededOtherData` (which `seeded` raises: the test above), without
    starting a server for it."""
    refusal = "locomo:conv-1 is in the work directory, but an earlier run stopped seeding it"

    def refused(*args: object, **kwargs: object) -> Any:
        raise run.SeededOtherData(refusal)

    monkeypatch.setattr(run, "evaluate", refused)
    out = tmp_path / "latest.json"
    args = ["--data", str(SMOKE), "--out", str(out), "--work", str(tmp_path / "work"), "--legs", "lexical"]
    assert run.main(args) == 2
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("eval:")]
    assert said == [f"eval: {refusal}; give --work an empty directory"]
    assert not out.exists()
