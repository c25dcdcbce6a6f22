"""RFC step 5 through direct Runtime calls: blank bodies and exact-identity repeats are dropped.

The public API never stores a blank body and a store never returns one identity twice, so these
tests put them there: a real SQLite store whose search answers are rewritten on the way out (the
real hits, repeated, blanked or reordered), under a real `ScopedContextApplication`. What they check
is the delivered content, in the text format and in the legacy one. The opposite case (identical
text under different identities stays two entries) is
tests/api/test_prepare_assembly.py::test_identical_text_with_different_identities_is_not_deduplicated.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from powercontext_api.models import (
    CandidateDecisionRequest,
    PrepareContextRequest,
    ProposeExperienceRequest,
    ProposeProfileRequest,
    PutTopicRequest,
    RememberRequest,
    ScopeCreateRequest,
)
from powercontext_runtime import ScopedContextApplication, Settings, open_store
from powercontext_runtime.store import Store

SCOPE = "project:dedupe"
REFERENCE = "project:dedupe-ref"
QUERY = "auklet"
TEXT_ASSEMBLY = {
    "sections": [
        {"family": "memory", "limit": 8},
        {"family": "experience", "limit": 2},
        {"family": "topic-memory", "limit": 8},
        {"family": "profile", "limit": 8},
    ],
    "show": ["recall_rank"],
}
BLANKS = (" ", "\n\n", "\t \u3000\r\n")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A real store: Memory, Experience and Profiles in a Scope and its Context Reference, and
    Topic Memory in the Scope, all matching the query."""
    opened = open_store(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    app = runtime(opened)
    app.create_scope(ScopeCreateRequest(scope_id=REFERENCE))
    app.create_scope(
        ScopeCreateRequest.model_validate({"scope_id": SCOPE, "context_references": [REFERENCE]})
    )
    for scope_id in (SCOPE, REFERENCE):
        for text in ("auklet one", "auklet two auklet", "auklet three auklet auklet"):
            app.remember(RememberRequest(scope_id=scope_id, text=f"{text} in {scope_id}"))
        for n in (1, 2, 3):
            proposed = app.propose_experience(
                ProposeExperienceRequest(
                    scope_id=scope_id, situation=f"auklet case {n}", action="a", outcome="o", lesson="l"
                )
            )
            approve(app, scope_id, proposed.candidate_id)
        approve(
            app,
            scope_id,
            app.propose_profile(
                ProposeProfileRequest(scope_id=scope_id, content=f"Profile of {scope_id}")
            ).candidate_id,
        )
    for n in (1, 2, 3):
        app.put_topic(PutTopicRequest(scope_id=SCOPE, title=f"auklet topic {n}", summary="s"))
    yield opened
    opened.close()


def runtime(store: Store) -> ScopedContextApplication:
    # 8 + 2 + 8 + 8 section limits: above the default total of 8.
    return ScopedContextApplication(store, Settings(database_url="unused", assembly_max_entries=26))


def approve(app: ScopedContextApplication, scope_id: str, candidate_id: str) -> None:
    app.approve_candidate(
        CandidateDecisionRequest(scope_id=scope_id, candidate_id=candidate_id, expected_version=1)
    )


def delivered(store: Store) -> tuple[str, str]:
    """The text-format content and the legacy content, as a direct Runtime call returns them."""
    app = runtime(store)
    request: dict[str, Any] = {"scope_id": SCOPE, "query": QUERY, "max_bytes": 32768}
    text = app.prepare_context(PrepareContextRequest.model_validate({**request, "assembly": TEXT_ASSEMBLY}))
    legacy = app.prepare_context(PrepareContextRequest.model_validate(request))
    assert text.content is not None and legacy.content is not None
    return text.content, legacy.content


def rewrite(monkeypatch: pytest.MonkeyPatch, store: Store, method: str, change: Callable[[Any], Any]) -> None:
    """Make `store.method` answer `change(real answer)`."""
    real = getattr(store, method)
    monkeypatch.setattr(store, method, lambda *args, **kwargs: change(real(*args, **kwargs)))


def per_scope(change: Callable[[list[Any]], list[Any]]) -> Callable[[list[list[Any]]], list[list[Any]]]:
    return lambda answer: [change(list(hits)) for hits in answer]


def blank_memory(hit: Any, n: int) -> Any:
    """A hit with an identity of its own and a body that is only whitespace."""
    citation = dataclasses.replace(hit.citation, entry_id=f"blank-{n}", entry_version_id=f"blank-{n}-v1")
    return dataclasses.replace(hit, citation=citation, text=BLANKS[n % len(BLANKS)])


def test_entries_without_bodies_are_removed_before_recall_ranks_are_assigned(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R step 5: "Within the bounded pool, remove entries without bodies", and step 6: "Assign each
    family's remaining candidates a recall_rank starting at 1."

    Whitespace-only Memory hits ahead of, between and after the real ones, and a whitespace-only
    Profile snapshot for the current Scope, leave exactly the text of the store without them:
    no entry for them, no citation, no rank taken (the real entries keep ranks 1, 2, …).
    """
    text_without, legacy_without = delivered(store)

    rewrite(
        monkeypatch,
        store,
        "search_memory",
        per_scope(
            lambda hits: [
                blank_memory(hits[0], 0),
                hits[0],
                blank_memory(hits[0], 1),
                *hits[1:],
                blank_memory(hits[0], 2),
            ]
        ),
    )
    assert delivered(store) == (text_without, legacy_without)

    # A blank Profile: as if the current Scope had none; the reference's Profile is Profile 1, rank 1.
    rewrite(monkeypatch, store, "latest_profiles", lambda snapshots: [None, *snapshots[1:]])
    text_no_profile, _ = delivered(store)
    monkeypatch.undo()
    for blank in BLANKS:

        def blanked(snapshots: list[Any], blank: str = blank) -> list[Any]:
            return [dataclasses.replace(snapshots[0], content=blank), *snapshots[1:]]

        rewrite(monkeypatch, store, "latest_profiles", blanked)
        assert delivered(store)[0] == text_no_profile
        monkeypatch.undo()
    profile = text_no_profile.split("\n\n## Profile\n\n", 1)[1]
    assert profile.startswith(f'### Profile 1\n\n    Scope: "{REFERENCE}"\n')
    assert "    Recall rank: 1\n" in profile and "### Profile 2" not in profile


def test_exact_identity_repeats_are_removed_keeping_the_first_occurrence(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R step 5: "deduplicate exact identities, keeping the first occurrence. Identity includes
    Scope, family, Artifact ID, and revision; Memory also includes entry ID and entry version ID."

    Every Memory, Experience and Topic hit is answered twice more, later in its list, under the same
    identity but with a different body: the text and the legacy envelope are exactly those of the
    store without repeats (so the later bodies never show). Then a repeat placed first wins.
    """
    text_without, legacy_without = delivered(store)

    def shadow_memory(hit: Any) -> Any:
        return dataclasses.replace(hit, text=f"SHADOW {hit.text}")

    def shadow_experience(hit: Any) -> Any:
        return dataclasses.replace(hit, fields=dataclasses.replace(hit.fields, lesson="SHADOW"))

    def shadow_topic(hit: Any) -> Any:
        return dataclasses.replace(hit, title=f"SHADOW {hit.title}")

    def repeated(shadow: Callable[[Any], Any]) -> Callable[[list[Any]], list[Any]]:
        return lambda hits: [h for hit in hits for h in (hit, shadow(hit))] + [shadow(h) for h in hits]

    rewrite(monkeypatch, store, "search_memory", per_scope(repeated(shadow_memory)))
    rewrite(monkeypatch, store, "search_experience", per_scope(repeated(shadow_experience)))
    rewrite(monkeypatch, store, "search_topics", repeated(shadow_topic))
    text, legacy = delivered(store)
    assert (text, legacy) == (text_without, legacy_without)
    assert "SHADOW" not in text + legacy
    monkeypatch.undo()

    # The first occurrence is the one kept: a repeat answered ahead of the original replaces it.
    first_text = text_without.split("\n>     ", 1)[1].split("\n", 1)[0]  # Memory 1's body
    rewrite(
        monkeypatch,
        store,
        "search_memory",
        lambda answer: [[shadow_memory(answer[0][0]), *answer[0]], *answer[1:]],  # the current Scope's
    )
    text, legacy = delivered(store)
    assert f">     SHADOW {first_text}\n" in text and f">     {first_text}\n" not in text
    assert json.dumps(f"SHADOW {first_text}") in legacy and json.dumps(first_text) not in legacy
    assert text.count("\n### Memory ") == text_without.count("\n### Memory ") == 6


def test_an_other_entry_version_is_another_identity(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """R step 5: Memory identity "also includes entry ID and entry version ID": a hit that differs
    from an earlier one only in its entry version is not a repeat, and is printed as its own entry."""
    other = "auklet-other-version"

    def with_other_version(hits: list[Any]) -> list[Any]:
        citation = dataclasses.replace(hits[0].citation, entry_version_id=other)
        return [*hits, dataclasses.replace(hits[0], citation=citation)]

    rewrite(monkeypatch, store, "search_memory", per_scope(with_other_version))
    text, _ = delivered(store)
    assert text.count(f'version="{other}"') == 2  # once per Scope
    assert text.count("\n### Memory ") == 8
