"""The evaluation counts carried evidence from the explain operation's receipt (eval/evidence.py);
reading the prepared text's citations must give the same entries, for every configuration and
budget of the smoke run, in the legacy and the Markdown format, cut entries included."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from eval import run
from eval.evidence import whole_entries
from eval.locomo import load
from powercontext_client import PowerContextClient

from ..conftest import LiveServer, settings_for
from .test_eval_smoke import SMOKE
from .text_citations import whole_entries_in_text


def test_the_receipt_and_the_text_carry_the_same_whole_entries(tmp_path: Path) -> None:
    # In process: what is compared is the answers' bytes, which a server process would send alike.
    server = LiveServer(settings_for(tmp_path))
    server.start()
    seen: Counter[tuple[str, bool]] = Counter()
    compared = 0
    try:
        with PowerContextClient(server.base_url, timeout=60) as pc:
            for conversation in load(SMOKE):
                turn_of = run.seed(pc, conversation)
                scope_id = run.scope_of(conversation)
                for config in run.CONFIGS:
                    layout = "legacy" if config.assembly is None else "markdown"
                    for budget in run.BUDGETS:
                        for question in conversation.questions:
                            _, _, explained = run.prepare(pc, scope_id, question.question, config, budget)
                            carried = whole_entries(explained.items, scope_id)
                            assert carried == whole_entries_in_text(explained.content), (config.key, budget)
                            assert carried <= set(turn_of)
                            compared += 1
                            for item in explained.items:
                                if item.family == "memory" and item.included:
                                    seen[layout, item.truncated] += 1
    finally:
        server.stop()
    questions = sum(len(c.questions) for c in load(SMOKE))
    assert compared == questions * len(run.CONFIGS) * len(run.BUDGETS)
    # Not vacuous: both formats carried whole entries and cut ones.
    assert all(seen[layout, cut] for layout in ("legacy", "markdown") for cut in (False, True)), seen


def test_the_text_cross_check_reads_citations_in_both_formats() -> None:
    markdown = (
        '    Artifact: family="memory", id="memory", revision=3\n'
        '    Entry: id="entry-1", version="entry-1-v1"\n    Recall rank: 1\n    Truncated: no\n\n'
        '    Artifact: family="memory", id="memory", revision=3\n'
        '    Entry: id="entry-2", version="entry-2-v1"\n    Truncated: yes\n'
    )
    assert whole_entries_in_text(markdown) == {"entry-1"}
    legacy = (
        "notice\n\nBEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\n"
        '{"trust":"untrusted_history","items":[{"citation":{"entry_id":"entry-7"},"content":"x","truncated":false},'
        '{"citation":{"entry_id":"entry-8"},"content":"y","truncated":true}]}\nEND_POWERCONTEXT_PREPARED_CONTEXT_V1'
    )
    assert whole_entries_in_text(legacy) == {"entry-7"}
    assert whole_entries_in_text(None) == set()
