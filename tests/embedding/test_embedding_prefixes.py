"""The embedding leg's query and document prefixes, on both backends, with the real model behind
the loopback endpoint: what the endpoint is asked to embed, what is stored and under which name,
and a change of document prefix as a re-embed (docs/configuration.md, "The embedding leg")."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from devtools.embedding_server import MODEL, EmbeddingServer
from powercontext_runtime import MAX_SPACE_CHARS, ConfigurationError, vector_space
from powercontext_server.settings import EmbeddingSettings, HttpSettings
from tests.api.helpers import new_scope, remember
from tests.conftest import LiveServer, settings_for

from .conftest import leg_env, stored_vectors, wait_for_vectors
from .test_embedding_leg import NOTES, TEXTS, search

QUERY, DOCUMENT = "search_query: ", "search_document: "
# The notes about vehicles, none of which has the word: lexical search finds none of them.
VEHICLES = {note for note in NOTES if any(w in note for w in ("car", "truck", "bus", "bike"))}


class Recorder:
    """The real model, noting every text it is asked to embed."""

    def __init__(self, embed: Callable[[Sequence[str]], Any]) -> None:
        self._embed = embed
        self._lock = threading.Lock()
        self.texts: list[str] = []

    def __call__(self, texts: Sequence[str]) -> Any:
        with self._lock:
            self.texts.extend(texts)
        return self._embed(texts)

    def taken(self) -> list[str]:
        """The texts asked for since the last call."""
        with self._lock:
            taken, self.texts = self.texts, []
        return taken


@pytest.fixture
def recorder(model_embed: Callable[[Sequence[str]], Any]) -> Recorder:
    return Recorder(model_embed)


@pytest.fixture
def recording_server(recorder: Recorder) -> Iterator[EmbeddingServer]:
    with EmbeddingServer(recorder) as server:
        yield server


def prefixes(query: str, document: str) -> dict[str, str]:
    return {
        "POWERCONTEXT_SERVER_EMBEDDING_QUERY_PREFIX": query,
        "POWERCONTEXT_SERVER_EMBEDDING_DOCUMENT_PREFIX": document,
    }


def test_queries_and_stored_texts_are_embedded_with_their_prefixes(
    start_server: Any,
    recording_server: EmbeddingServer,
    recorder: Recorder,
    model_embed: Callable[[Sequence[str]], Any],
) -> None:
    server = start_server(**{**leg_env(recording_server.url), **prefixes(QUERY, DOCUMENT)})
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        scope_id = new_scope(http)
        for text in TEXTS:
            remember(http, scope_id, text)
        rows = wait_for_vectors(server, len(TEXTS), model=vector_space(MODEL, DOCUMENT))
        assert recorder.taken() == [DOCUMENT + text for text in TEXTS]
        assert search(http, scope_id, "vehicle")[0] == TEXTS[0]
        assert recorder.taken() == [QUERY + "vehicle"]
    # Stored as the endpoint gave them for the prefixed texts, under the model and the prefix.
    assert [model for _, model, _, _ in rows] == [f'["{MODEL}", "{DOCUMENT}"]'] * len(TEXTS)
    prefixed = np.asarray(model_embed([DOCUMENT + text for text in TEXTS]), dtype="<f4")
    bare = np.asarray(model_embed(list(TEXTS)), dtype="<f4")
    for (_, _, _, blob), vector, unprefixed in zip(rows, prefixed, bare, strict=True):
        assert np.array_equal(np.frombuffer(blob, dtype="<f4"), vector)
        assert not np.array_equal(vector, unprefixed)


def test_a_new_document_prefix_re_embeds_and_a_new_query_prefix_does_not(
    start_server: Any, recording_server: EmbeddingServer, recorder: Recorder, tmp_path: Path
) -> None:
    first = start_server(**{**leg_env(recording_server.url), **prefixes("query: ", "passage: ")})
    url = first.application.settings.database_url
    with httpx.Client(base_url=first.base_url, timeout=30) as http:
        scope_id = new_scope(http)
        http.post(
            "/v1/memory/remember/batch",
            json={"scope_id": scope_id, "entries": [{"text": note} for note in NOTES]},
        ).raise_for_status()
    wait_for_vectors(first, len(NOTES), model=vector_space(MODEL, "passage: "))
    first.stop()
    recorder.taken()

    def restarted(name: str, query: str, document: str) -> LiveServer:
        env = {**leg_env(recording_server.url), **prefixes(query, document)}
        server = LiveServer(
            settings_for(tmp_path / name, POWERCONTEXT_SERVER_DATABASE_URL=url),
            http=HttpSettings.from_env(env),
        )
        server.start()
        return server

    # Another document prefix: every entry again, under its own name; the old vectors stay.
    second = restarted("second", "query: ", DOCUMENT)
    try:
        rows = wait_for_vectors(second, len(NOTES), model=vector_space(MODEL, DOCUMENT))
        with httpx.Client(base_url=second.base_url, timeout=30) as http:
            assert search(http, scope_id, "vehicle")[0] in VEHICLES
    finally:
        second.stop()
    by_space: dict[str, list[str]] = {}
    for version, model, _, _ in rows:
        by_space.setdefault(model, []).append(version)
    assert sorted(by_space[vector_space(MODEL, "passage: ")]) == sorted(
        by_space[vector_space(MODEL, DOCUMENT)]
    )
    assert sorted(recorder.taken()) == sorted([DOCUMENT + note for note in NOTES] + ["query: vehicle"])

    # Another query prefix only: the stored vectors serve as they are. The embedder takes versions
    # in order, so once a new entry's vector is stored, no older one was embedded again before it.
    third = restarted("third", QUERY, DOCUMENT)
    try:
        with httpx.Client(base_url=third.base_url, timeout=30) as http:
            assert search(http, scope_id, "vehicle")[0] in VEHICLES
            remember(http, scope_id, "The ferry crossed the bay at dawn")
            wait_for_vectors(third, len(NOTES) + 1, model=vector_space(MODEL, DOCUMENT))
    finally:
        third.stop()
    assert recorder.taken() == [QUERY + "vehicle", DOCUMENT + "The ferry crossed the bay at dawn"]
    assert len(stored_vectors(third)) == 2 * len(NOTES) + 1


def embedding_env(**more: str) -> dict[str, str]:
    return {
        "POWERCONTEXT_SERVER_EMBEDDING_URL": "http://127.0.0.1:9/v1",
        "POWERCONTEXT_SERVER_EMBEDDING_MODEL": "nomic-embed-text",
        "POWERCONTEXT_SERVER_EMBEDDING_DIMENSIONS": "768",
        **more,
    }


def test_prefixes_are_read_as_given_and_default_to_none() -> None:
    settings = EmbeddingSettings.from_env(embedding_env(**prefixes(QUERY, DOCUMENT)))
    assert settings is not None
    assert (settings.query_prefix, settings.document_prefix) == (QUERY, DOCUMENT)
    plain = EmbeddingSettings.from_env(embedding_env())
    assert plain is not None
    assert (plain.query_prefix, plain.document_prefix) == ("", "")
    # Without a document prefix, vectors keep the model's own name (those stored before it, too).
    assert vector_space("nomic-embed-text") == "nomic-embed-text"


def test_a_model_and_document_prefix_too_long_to_store_are_refused_at_start() -> None:
    fits = "p" * (MAX_SPACE_CHARS - len(vector_space("nomic-embed-text", "p")) + 1)
    assert EmbeddingSettings.from_env(embedding_env(POWERCONTEXT_SERVER_EMBEDDING_DOCUMENT_PREFIX=fits))
    with pytest.raises(ConfigurationError, match="too long together") as refused:
        EmbeddingSettings.from_env(embedding_env(POWERCONTEXT_SERVER_EMBEDDING_DOCUMENT_PREFIX=fits + "p"))
    assert fits not in str(refused.value)
