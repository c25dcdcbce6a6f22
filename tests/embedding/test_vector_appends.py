"""A Scope searched between writes, as an agent's loop searches it: the process that holds its
vectors adds each write's rows to them (without copying the rest), and answers exactly as a
process that reads them all afresh; a removal makes it read them again. On both backends."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.embedded import wait_embedded
from devtools.embedding_models import WORDLLAMA
from powercontext_api.models import (
    EntryCitationRequest,
    MemorySearchRequest,
    PrepareContextRequest,
    RememberBatchRequest,
    ReviseEntryRequest,
    ScopeCreateRequest,
)
from powercontext_runtime import EmbeddingLeg, open_application
from tests.conftest import database_env, settings_for

THINGS = ("car", "bicycle", "boat", "kettle", "violin", "tent")
PLACES = ("river", "garage", "market", "station", "orchard")
QUERIES = (
    "a vehicle",
    "music at home",
    "the car by the river",
    "kettle or boat",
)  # the last two: lexical hits too


def _answers(app: Any, scope_id: str) -> list[str]:
    """Each query's search answer as the server sends it, and its prepared text."""
    found = []
    for query in QUERIES:
        search = {"scope_id": scope_id, "query": query, "limit": 8}
        found.append(app.search_memory(MemorySearchRequest.model_validate(search)).model_dump_json())
        prepare = {"scope_id": scope_id, "query": query, "assembly": {}}
        found.append(str(app.prepare_context(PrepareContextRequest.model_validate(prepare)).content))
    return found


def test_a_scope_searched_between_writes_answers_as_one_read_afresh(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path
) -> None:
    model = WORDLLAMA.load()

    def embed(texts: Sequence[str], timeout_s: float) -> Any:
        return np.asarray(model(list(texts)), dtype=np.float32)

    def leg() -> EmbeddingLeg:
        return EmbeddingLeg(embed, WORDLLAMA.name, WORDLLAMA.dimensions, 10.0)

    settings = settings_for(tmp_path, **database_env(request, backend))
    url = settings.database_url
    rng = random.Random(11)
    scope_id = "appends:a"
    live = open_application(settings)
    live.use_embeddings(leg())
    live.create_scope(ScopeCreateRequest.model_validate({"scope_id": scope_id}))
    citations: list[Any] = []  # MemoryCitation, as the answers give them
    try:
        for step in range(12):
            if step in (5, 9):  # a revise, then a retire: the held copy lost a row
                citation = citations.pop(rng.randrange(len(citations)))
                if step == 5:
                    revise = {"scope_id": scope_id, "citation": citation, "text": "the violin by the river"}
                    revised = live.revise_memory_entry(ReviseEntryRequest.model_validate(revise))
                    citations.append(revised.citation.model_dump())
                else:
                    retire = {"scope_id": scope_id, "citation": citation}
                    live.retire_memory_entry(EntryCitationRequest.model_validate(retire))
            else:
                entries = [
                    {"text": f"note {step}-{i}: the {rng.choice(THINGS)} by the {rng.choice(PLACES)}"}
                    for i in range(rng.randint(1, 4))
                ]
                batch = {"scope_id": scope_id, "entries": entries}
                cited = live.remember_batch(RememberBatchRequest.model_validate(batch))
                citations.extend(citation.model_dump() for citation in cited.citations)
            wait_embedded(url, WORDLLAMA.name, WORDLLAMA.dimensions, timeout_s=60)
            held_before = live.held_vector_bytes()
            seen = _answers(live, scope_id)
            fresh = open_application(settings)
            fresh.use_embeddings(leg())
            try:
                assert seen == _answers(fresh, scope_id), f"step {step}"
                exact = fresh.held_vector_bytes()  # read whole: no room
            finally:
                fresh.close()
            held = live.held_vector_bytes()
            if step in (0, 5, 9):  # read whole: the first search, and after each removal
                assert held == exact, f"step {step}"
            else:  # rows added past the held ones, into room kept for more
                assert held > exact and (held == held_before or step in (1, 6, 10)), f"step {step}"
        assert any("violin" in answer for answer in seen)
    finally:
        live.close()
