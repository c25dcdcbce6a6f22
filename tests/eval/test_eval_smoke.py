"""`make eval` on LoCoMo's first conversation: the harness seeds through the API, counts carried
evidence from citations, and writes results that docs/evaluation.md is rendered from."""

from __future__ import annotations

import json
from pathlib import Path

from eval import model_step, report, run
from eval.evidence import whole_entries
from eval.locomo import load

from ..hosts.fakes import Received, RecordingServer, Reply


def test_one_conversation_runs_every_configuration(tmp_path: Path) -> None:
    out = tmp_path / "latest.json"
    assert run.main(["--conversations", "1", "--budgets", "8000", "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    assert results["data"]["conversations"] == 1 and results["data"]["questions"] > 100
    overall = {r["config"]: r for r in results["runs"] if r["split"] == "all" and r["category"] is None}
    assert set(overall) == {c.key for c in run.CONFIGS}
    for row in overall.values():
        assert 0 < row["evidence_recall"] <= 1 and 0 <= row["all_evidence"] <= 1
        assert 0 < row["bytes_mean"] <= 8000 and row["tokens_mean"] > 0
        assert row["latency_p50_ms"] <= row["latency_p95_ms"]
    assert {r["split"] for r in results["runs"]} == {"all", "dev"}  # conversation 1 is dev
    formats = results["format_ablation"]
    assert formats["markdown"]["documents"] == formats["legacy"]["documents"] > 100
    block = report.render(results)
    assert "Memory only, limit 8" in block and "Ablation A" in block


def test_carried_entries_are_read_from_citations_in_both_formats() -> None:
    markdown = (
        '    Artifact: family="memory", id="memory", revision=3\n'
        '    Entry: id="entry-1", version="entry-1-v1"\n    Recall rank: 1\n    Truncated: no\n\n'
        '    Artifact: family="memory", id="memory", revision=3\n'
        '    Entry: id="entry-2", version="entry-2-v1"\n    Truncated: yes\n'
    )
    assert whole_entries(markdown) == {"entry-1"}
    legacy = (
        "notice\n\nBEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\n"
        '{"trust":"untrusted_history","items":[{"citation":{"entry_id":"entry-7"},"content":"x","truncated":false},'
        '{"citation":{"entry_id":"entry-8"},"content":"y","truncated":true}]}\nEND_POWERCONTEXT_PREPARED_CONTEXT_V1'
    )
    assert whole_entries(legacy) == {"entry-7"}
    assert whole_entries(None) == set()


def test_the_data_is_read_with_its_splits_and_evidence() -> None:
    conversations = load()
    assert [c.split for c in conversations] == ["dev"] * 5 + ["test"] * 5
    turns = {t.dia_id for t in conversations[0].turns}
    assert all(e in turns for q in conversations[0].questions for e in q.evidence)
    assert sum(len(c.turns) for c in conversations) == 5882


def test_the_model_step_answers_from_the_injected_text_and_scores_f1(tmp_path: Path) -> None:
    def reply(received: Received) -> Reply:
        body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "7 May 2023."}}]}
        return Reply(200, "application/json", json.dumps(body).encode())

    out = tmp_path / "model.json"
    with RecordingServer(reply) as fake:
        args = ["--conversations", "1", "--questions", "3", "--budgets", "8000", "--out", str(out)]
        assert run.main([*args, "--model-url", fake.base_url, "--model", "fake-model"]) == 0
        asked = fake.requests_to("/chat/completions")
    questions = load()[0].questions[:3]
    assert len(asked) == len([q for q in questions if q.answer])
    prompt = asked[0].json()["messages"][-1]["content"]
    assert "BEGIN_POWERCONTEXT_PREPARED_TEXT_V1" in prompt and questions[0].question in prompt
    results = json.loads(out.read_text())
    row = next(
        r
        for r in results["runs"]
        if (r["config"], r["budget"], r["split"], r["category"]) == ("memory-8", 8000, "all", None)
    )
    expected = [model_step.f1("7 May 2023.", q.answer) for q in questions if q.answer]
    assert row["answered"] == len(expected)
    assert row["answer_f1"] == round(sum(expected) / len(expected), 4)
    assert "fake-model" in report.render(results)


def test_answer_f1_counts_shared_words_after_normalising() -> None:
    assert model_step.f1("7 May 2023.", "7 May 2023") == 1.0
    assert model_step.f1("The painting", "painting of a sunrise") == 2 * (1 / 1) * (1 / 3) / (1 + 1 / 3)
    assert model_step.f1("unknown", "2022") == 0.0
