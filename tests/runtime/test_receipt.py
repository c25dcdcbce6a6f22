"""The receipt as pure functions: every candidate accounted for, with the reason it was left out."""

from __future__ import annotations

from powercontext_runtime.prepare.builder import AssemblyOptions, Section, build_text_context
from powercontext_runtime.prepare.legacy import build_legacy_context
from powercontext_runtime.prepare.markdown import FRAME_BYTES
from powercontext_runtime.recall import Candidate, Origin


def memory(n: int, body: str, version: int = 1) -> Candidate:
    return Candidate(
        Origin("project:demo", "memory", "memory", 3, f"entry-{n}", f"entry-{n}-v{version}"), body, True
    )


def test_cleaning_reports_blank_bodies_and_repeated_identities() -> None:
    pool = [memory(1, "first"), memory(2, " \n\t "), memory(1, "first again"), memory(1, "newer", version=2)]
    built = build_text_context({"memory": pool}, AssemblyOptions((Section("memory", 8),)), 8000)
    receipt = [(c.candidate.body, c.recall_rank, c.reason) for c in built.receipt]
    # Ranks count the cleaned pool: the newer version of entry-1 is rank 2, not 4.
    assert receipt == [
        ("first", 1, None),
        ("newer", 2, None),
        (" \n\t ", None, "blank"),
        ("first again", None, "duplicate"),
    ]
    legacy = build_legacy_context(pool, 8000)
    assert [(c.candidate.body, c.reason) for c in legacy.receipt] == [
        ("first", None),
        ("newer", None),
        (" \n\t ", "blank"),
        ("first again", "duplicate"),
    ]


def test_included_bytes_add_up_to_the_content() -> None:
    pool = [memory(n, f"fact {n} " * (20 * n)) for n in range(1, 9)]
    for max_bytes in (600, 1000, 2500, 8000):
        built = build_text_context({"memory": pool}, AssemblyOptions((Section("memory", 8),)), max_bytes)
        added = sum(c.rendered_bytes for c in built.receipt if c.included)
        assert built.result.content_bytes == (FRAME_BYTES + added if added else 0)


def test_a_body_under_the_floor_is_told_apart_from_no_room() -> None:
    long = memory(1, "word " * 400)
    options = AssemblyOptions((Section("memory", 1),))
    # Just enough for the frame and a few bytes of body, under the 64-byte floor of a cut.
    sizes = {}
    for max_bytes in range(FRAME_BYTES, FRAME_BYTES + 400):
        (considered,) = build_text_context({"memory": [long]}, options, max_bytes).receipt
        sizes.setdefault(considered.reason, max_bytes)
    assert list(sizes) == ["budget", "below_minimum_body", None]
    assert sizes["budget"] < sizes["below_minimum_body"] < sizes[None]
