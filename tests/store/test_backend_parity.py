"""The same seeded data and the same requests give byte-identical results on SQLite and OceanBase."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.seekdb import SeekdbServer
from powercontext_api.models import (
    CandidateDecisionRequest,
    MemorySearchRequest,
    PrepareContextRequest,
    ProposeExperienceRequest,
    ProposeProfileRequest,
    PutTopicRequest,
    RememberBatchRequest,
    RememberRequest,
    ReviseEntryRequest,
    ScopeCreateRequest,
    SearchRequest,
)
from powercontext_runtime import ScopedContextApplication, Settings, open_application
from powercontext_runtime.store import clock
from tests.store.writes import small_merges

WORDS = [
    "contract",
    "api",
    "change",
    "test",
    "deploy",
    "gateway",
    "memory",
    "记忆",
    "系统",
    "测试",
    "部署",
    "😀",
    "café",
    "naïve",
    "schema",
]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12)))


def seed(app: ScopedContextApplication, batched: bool = False) -> None:
    """Deterministic data: three Scopes with references, every family, revisions and ties. Batched:
    the Memory entries go in batches of 1 to 6, the same entries with the same citations."""
    rng = random.Random(2026)
    sizes = random.Random(7)
    for scope_id, refs in (("team:b", []), ("team:c", []), ("project:a", ["team:c", "team:b"])):
        app.create_scope(
            ScopeCreateRequest.model_validate({"scope_id": scope_id, "context_references": refs})
        )
        texts = [sentence(rng) for _ in range(25)]
        citations = []
        while texts:
            size = sizes.randint(1, 6) if batched else 1
            chunk, texts = texts[:size], texts[size:]
            if batched:
                body = {"scope_id": scope_id, "entries": [{"text": text} for text in chunk]}
                citations += app.remember_batch(RememberBatchRequest.model_validate(body)).citations
            else:
                body = {"scope_id": scope_id, "text": chunk[0]}
                citations.append(app.remember(RememberRequest.model_validate(body)).citation)
        for citation in citations[:5]:
            app.revise_memory_entry(
                ReviseEntryRequest.model_validate(
                    {
                        "scope_id": scope_id,
                        "citation": citation.model_dump(mode="json"),
                        "text": sentence(rng),
                    },
                )
            )
        tie = {"scope_id": scope_id, "text": "exact tie words", "deduplicate": False}  # two equal entries
        app.remember(RememberRequest.model_validate(tie))
        app.remember(RememberRequest.model_validate(tie))
        for _ in range(4):
            fields = {k: sentence(rng) for k in ("situation", "action", "outcome", "lesson")}
            proposed = app.propose_experience(
                ProposeExperienceRequest.model_validate({"scope_id": scope_id, **fields})
            )
            app.approve_candidate(
                CandidateDecisionRequest.model_validate(
                    {"scope_id": scope_id, "candidate_id": proposed.candidate_id, "expected_version": 1},
                )
            )
            app.put_topic(
                PutTopicRequest.model_validate(
                    {
                        "scope_id": scope_id,
                        "title": sentence(rng),
                        "summary": sentence(rng),
                        "detail": sentence(rng),
                    },
                )
            )
        profile = app.propose_profile(
            ProposeProfileRequest.model_validate({"scope_id": scope_id, "content": sentence(rng)})
        )
        app.approve_candidate(
            CandidateDecisionRequest.model_validate(
                {"scope_id": scope_id, "candidate_id": profile.candidate_id, "expected_version": 1},
            )
        )


QUERIES = [
    "contract api",
    "记忆",
    "测试部署",
    "😀 café",
    "exact tie words",
    "gateway schema deploy naïve",
    "nothing-matches",
]
ASSEMBLIES: list[dict[str, Any] | None] = [
    None,
    {},
    {
        "sections": [{"family": "experience", "limit": 2}, {"family": "memory", "limit": 6}],
        "show": ["recall_rank"],
    },
    {
        "sections": [
            {"family": "profile", "limit": 3},
            {"family": "topic-memory", "limit": 2},
            {"family": "memory", "limit": 2},
            {"family": "experience", "limit": 1},
        ],
        "show": ["confidence", "recall_rank"],
    },
]


def observe(app: ScopedContextApplication) -> list[object]:
    seen: list[object] = []
    for query in QUERIES:
        search = {"scope_id": "project:a", "query": query, "limit": 50}
        seen.append(app.search_memory(MemorySearchRequest.model_validate(search)))
        seen.append(app.search_experience(SearchRequest.model_validate(search)))
        seen.append(app.search_topics(SearchRequest.model_validate(search)))
        for assembly in ASSEMBLIES:
            for max_bytes in (512, 2000, 32768):
                request: dict[str, Any] = {"scope_id": "project:a", "query": query, "max_bytes": max_bytes}
                if assembly is not None:
                    request["assembly"] = assembly
                seen.append(app.prepare_context(PrepareContextRequest.model_validate(request)).content)
    return seen


@pytest.fixture
def applications(tmp_path: Path, seekdb: SeekdbServer) -> Iterator[tuple[ScopedContextApplication, ...]]:
    apps = (
        open_application(
            Settings(database_url=f"sqlite:///{tmp_path / 'parity.sqlite3'}", assembly_max_entries=8)
        ),
        open_application(Settings(database_url=seekdb.new_database_url(), assembly_max_entries=8)),
    )
    yield apps
    for app in apps:
        app.close()


@pytest.mark.parametrize("batched", [False, True], ids=["single", "deferred-batches"])
def test_both_backends_return_the_same_search_order_and_prepared_bytes(
    applications: tuple[ScopedContextApplication, ...], batched: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deferred batches: their postings wait in the log and merge into runs every few batches, and
    runs into larger runs, some before and some after their entries are revised."""
    small_merges(monkeypatch, 7)
    sqlite_app, oceanbase_app = applications
    seed(sqlite_app, batched)
    seed(oceanbase_app, batched)
    on_sqlite = observe(sqlite_app)
    on_oceanbase = observe(oceanbase_app)
    assert sum(1 for content in on_sqlite if isinstance(content, str)) > 20  # the comparison has substance
    assert on_oceanbase == on_sqlite


def test_both_backends_leave_out_the_same_expired_entries(
    applications: tuple[ScopedContextApplication, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entries expiring a second apart: at each instant both backends recall, rank and prepare
    exactly the same, and what they recall changes as entries expire."""
    instants = [f"2031-01-01T00:00:{second:02d}.000000+00:00" for second in (0, 6, 59)]
    monkeypatch.setattr(clock, "now", lambda: instants[0])
    for app in applications:
        seed(app)
        rng = random.Random(11)
        for i in range(12):
            text = f"{sentence(rng)} expiring {i}"
            body = {"scope_id": "project:a", "text": text, "expires_at": f"2031-01-01T00:00:{i + 1:02d}Z"}
            app.remember(RememberRequest.model_validate(body))
    seen = []
    for instant in instants:
        monkeypatch.setattr(clock, "now", lambda instant=instant: instant)
        on_sqlite, on_oceanbase = (observe(app) for app in applications)
        assert on_oceanbase == on_sqlite, instant
        seen.append(on_sqlite)
    assert seen[0] != seen[1] != seen[2]
