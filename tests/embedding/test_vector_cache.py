"""The searched vectors a process holds stay within their byte budget
(`POWERCONTEXT_SERVER_EMBEDDING_CACHE_MB`): the least recently searched Scope goes first, and is
read again, with the same answer, when it is searched next."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.embedded import wait_embedded
from devtools.embedding_models import WORDLLAMA
from powercontext_api.models import (
    MemorySearchRequest,
    PrepareContextRequest,
    RememberBatchRequest,
    ScopeCreateRequest,
)
from powercontext_runtime import (
    DEFAULT_CACHE_BYTES,
    ConfigurationError,
    EmbeddingLeg,
    Settings,
    open_application,
)
from powercontext_server.embedding_client import EmbeddingClient, embedding_leg
from powercontext_server.settings import EmbeddingSettings

LEG = {
    "POWERCONTEXT_SERVER_EMBEDDING_URL": "http://127.0.0.1:9/v1",
    "POWERCONTEXT_SERVER_EMBEDDING_MODEL": "m",
    "POWERCONTEXT_SERVER_EMBEDDING_DIMENSIONS": "4",
}
ENTRIES = 40
# What one Scope's vectors take held: 40 rows of 256 float32 and of 256 int8 (with each row's
# scale and sum of steps, float64), their int64 keys, and the keys sorted with each one's row (for
# fusion's lookups).
ONE_SCOPE = ENTRIES * (WORDLLAMA.dimensions * 5 + 8 + 8 + 8 + 8 + 8)


def _answers(app: Any, scope_id: str) -> tuple[str, str | None]:
    """The search answer as the server sends it, and the prepared text, for a query no stored
    text contains: the car notes are found by their vectors."""
    search = app.search_memory(
        MemorySearchRequest.model_validate({"scope_id": scope_id, "query": "a vehicle", "limit": 8})
    )
    prepared = app.prepare_context(
        PrepareContextRequest.model_validate({"scope_id": scope_id, "query": "a vehicle", "assembly": {}})
    )
    return search.model_dump_json(), prepared.content


def test_held_vectors_stay_within_the_budget_and_answer_alike(tmp_path: Path) -> None:
    model = WORDLLAMA.load()

    def embed(texts: Sequence[str], timeout_s: float) -> Any:
        return np.asarray(model(list(texts)), dtype=np.float32)

    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    scopes = ["cache:a", "cache:b", "cache:c"]
    loader = open_application(Settings(database_url=url))
    for n, scope_id in enumerate(scopes):
        loader.create_scope(ScopeCreateRequest.model_validate({"scope_id": scope_id}))
        entries = [{"text": f"note {n}-{i}: the car {i} was parked by the river"} for i in range(ENTRIES)]
        loader.remember_batch(RememberBatchRequest.model_validate({"scope_id": scope_id, "entries": entries}))
    answers = []
    for budget in (10 * ONE_SCOPE, ONE_SCOPE + ONE_SCOPE // 2):  # all three, then one at a time
        app = open_application(Settings(database_url=url))
        app.use_embeddings(
            EmbeddingLeg(embed, WORDLLAMA.name, WORDLLAMA.dimensions, 10.0, cache_bytes=budget)
        )
        wait_embedded(url, WORDLLAMA.name, WORDLLAMA.dimensions, timeout_s=60)
        found = []
        for scope_id in [*scopes, scopes[0]]:  # the first again: read back after it was let go
            found.append(_answers(app, scope_id))
            assert app.held_vector_bytes() <= budget
        answers.append(found)
        held = app.held_vector_bytes()
        app.close()
        assert held == (3 * ONE_SCOPE if budget > 3 * ONE_SCOPE else ONE_SCOPE)
    assert answers[0] == answers[1]
    assert all("the car" in search and "the car" in (content or "") for search, content in answers[0])
    lexical = open_application(Settings(database_url=url))  # the leg off: nothing is found
    assert [_answers(lexical, scope_id) for scope_id in scopes] == [('{"hits":[]}', None)] * 3
    lexical.close()
    loader.close()


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "many", "²"])
def test_a_cache_size_that_is_no_positive_integer_is_refused(value: str) -> None:
    env = {**LEG, "POWERCONTEXT_SERVER_EMBEDDING_CACHE_MB": value}
    with pytest.raises(ConfigurationError, match="POWERCONTEXT_SERVER_EMBEDDING_CACHE_MB must be a positive"):
        EmbeddingSettings.from_env(env)


def test_the_cache_size_reaches_the_leg() -> None:
    settings = EmbeddingSettings.from_env({**LEG, "POWERCONTEXT_SERVER_EMBEDDING_CACHE_MB": "64"})
    assert settings is not None and settings.cache_mb == 64
    leg = embedding_leg(settings, EmbeddingClient(settings), lambda reason: None)
    assert leg.cache_bytes == 64 * 2**20
    default = EmbeddingSettings.from_env(LEG)
    assert default is not None and default.cache_mb * 2**20 == DEFAULT_CACHE_BYTES


def test_the_retired_fusion_constant_is_refused_by_name() -> None:
    """Reciprocal-rank fusion is gone: a setting left from it would silently do nothing."""
    with pytest.raises(ConfigurationError, match="POWERCONTEXT_SERVER_EMBEDDING_FUSION_K is no longer read"):
        EmbeddingSettings.from_env({**LEG, "POWERCONTEXT_SERVER_EMBEDDING_FUSION_K": "2"})
    assert (
        EmbeddingSettings.from_env({**LEG, "POWERCONTEXT_SERVER_EMBEDDING_WEIGHT": "0.3"}).vector_weight
        == 0.3
    )
