"""The bundled models themselves: all-MiniLM-L6-v2 (the default) gives unit vectors that rank by
meaning, and the same vector for a text whatever it is embedded with and from however many threads
at once; the evaluation's model server serves the model it is asked for, at its tuned weight.
(all-mpnet-base-v2's wheels come with `make eval` only; its encoder's parts are checked in
test_mpnet.py.)"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np
import pytest

from devtools.embedding_models import DEFAULT, MINILM, MODELS, MPNET
from eval.hybrid import model_env, weight_for
from powercontext_runtime import VECTOR_WEIGHT

FOOD = "A man is eating food."


def test_the_default_is_minilm_with_unit_vectors_that_rank_by_meaning(
    model_embed: Callable[[Sequence[str]], Any],
) -> None:
    assert DEFAULT == MINILM
    texts = [FOOD, "A man is eating a piece of bread.", "A man is riding a horse.", "Where is my car?"]
    vectors = np.asarray(model_embed(texts))
    assert vectors.shape == (4, MINILM.dimensions) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similar = vectors[1:] @ vectors[0]
    assert list(np.argsort(-similar)) == [0, 1, 2]  # bread, then horse, then the car
    assert similar[0] > 0.7  # all-MiniLM-L6-v2 puts these two at about 0.75
    vehicle, car, cat = model_embed(["vehicle", "I parked my car in the garage", "the cat sleeps"])
    assert float(vehicle @ car) > float(vehicle @ cat) + 0.1


def test_a_text_has_one_vector_alone_in_a_batch_or_beside_longer_texts(
    model_embed: Callable[[Sequence[str]], Any],
) -> None:
    long = "We talked for hours about painting, the beach trip and the new job. " * 40  # past 256 tokens
    alone = np.asarray(model_embed([FOOD]))[0]
    batched = np.asarray(model_embed([long, FOOD, "hi"]))
    assert alone.tobytes() == batched[1].tobytes()
    assert np.all(np.isfinite(batched)) and batched.shape == (3, MINILM.dimensions)


def test_texts_embedded_from_several_threads_at_once_get_their_own_vectors(
    model_embed: Callable[[Sequence[str]], Any],
) -> None:
    texts = [f"note {i}: we went hiking near the lake with {i} friends" for i in range(24)]
    alone = [np.asarray(model_embed([text]))[0].tobytes() for text in texts]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(lambda text: np.asarray(model_embed([text]))[0].tobytes(), texts))
    assert together == alone


@pytest.mark.parametrize("name", sorted(set(MODELS) - {MPNET.name}))
def test_the_evaluation_serves_the_model_it_names(name: str) -> None:
    with model_env(model=name) as env:
        assert env["POWERCONTEXT_SERVER_EMBEDDING_MODEL"] == name
        dims = int(env["POWERCONTEXT_SERVER_EMBEDDING_DIMENSIONS"])
        assert dims == MODELS[name].dimensions
        # No weight is tuned for these in the evaluation: the server's default (tuned on dev).
        assert env["POWERCONTEXT_SERVER_EMBEDDING_WEIGHT"] == str(VECTOR_WEIGHT)
        body = {"model": name, "input": ["vehicle", "car"]}
        response = httpx.post(env["POWERCONTEXT_SERVER_EMBEDDING_URL"] + "/embeddings", json=body, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["model"] == name
    assert [len(row["embedding"]) for row in response.json()["data"]] == [dims, dims]


def test_a_run_weighs_vectors_as_asked_else_as_tuned_for_its_model_else_by_default() -> None:
    assert weight_for(MPNET.name) == 0.22
    assert weight_for(MINILM.name) == weight_for(None) == VECTOR_WEIGHT
    assert weight_for(MPNET.name, 0.3) == weight_for(MINILM.name, 0.3) == 0.3
