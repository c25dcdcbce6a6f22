"""`embedding_server --cache FILE` (`devtools.vector_file`): a text embedded once is never embedded
again, in this process or the next one reading the file, and gets the same vector bytes back; a
line cut short by a killed process costs only its own text."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from devtools.embedding_models import DEFAULT, Embed
from devtools.vector_file import VectorFile

DIMENSIONS = DEFAULT.dimensions


@pytest.fixture(scope="module")
def model() -> Embed:
    return DEFAULT.load()


class CountingModel:
    """The bundled model, counting every text it is asked to embed."""

    def __init__(self, embed: Embed) -> None:
        self.embed = embed
        self.asked: list[str] = []

    def __call__(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        self.asked += texts
        return list(np.asarray(self.embed(texts), dtype=np.float32))


def test_a_text_is_embedded_once_across_processes_with_the_same_bytes(tmp_path: Path, model: Embed) -> None:
    path = tmp_path / "vectors.txt"
    counted = CountingModel(model)
    first = VectorFile(counted, path, DIMENSIONS)
    vectors = first(["alpha", "beta", "alpha"])
    assert counted.asked == ["alpha", "beta"]  # a repeat within one request is embedded once too
    assert first(["beta"])[0].tobytes() == vectors[1].tobytes()
    assert counted.asked == ["alpha", "beta"]

    later_counted = CountingModel(model)
    later = VectorFile(later_counted, path, DIMENSIONS)
    assert len(later) == 2
    again = later(["beta", "gamma", "alpha"])
    assert later_counted.asked == ["gamma"]
    assert again[0].tobytes() == vectors[1].tobytes() and again[2].tobytes() == vectors[0].tobytes()
    assert again[1].tobytes() == np.asarray(model(["gamma"]), dtype=np.float32)[0].tobytes()


def test_a_line_cut_short_costs_only_its_own_text(tmp_path: Path, model: Embed) -> None:
    path = tmp_path / "vectors.txt"
    VectorFile(CountingModel(model), path, DIMENSIONS)(["kept", "cut"])
    whole = path.read_text()
    path.write_text(whole[: len(whole) - 9])  # killed while writing the second line

    counted = CountingModel(model)
    reopened = VectorFile(counted, path, DIMENSIONS)
    assert len(reopened) == 1
    reopened(["kept", "cut", "new"])
    assert counted.asked == ["cut", "new"]
    # The appends began on a line of their own:
    assert len(VectorFile(CountingModel(model), path, DIMENSIONS)) == 3


def test_lines_of_other_dimensions_or_garbage_are_not_read(tmp_path: Path, model: Embed) -> None:
    path = tmp_path / "vectors.txt"
    VectorFile(CountingModel(model), path, DIMENSIONS)(["one"])
    with path.open("a") as file:
        file.write("not a line\n" + "f" * 64 + "\t%%%\n")
    assert len(VectorFile(CountingModel(model), path, DIMENSIONS)) == 1
    assert len(VectorFile(CountingModel(model), path, DIMENSIONS * 2)) == 0
