"""`embedding_server --cache FILE` (`devtools.vector_file`): a text embedded once is never embedded
again, in this process or the next one reading the file, and gets the same vector bytes back; a
line cut short by a killed process costs only its own text."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from devtools.vector_file import VectorFile

DIMENSIONS = 4


class CountingModel:
    """A deterministic stand-in for a model that counts every text it is asked to embed."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        self.asked += texts
        return [(np.arange(DIMENSIONS) + len(text) / 7).astype(np.float32) for text in texts]


def test_a_text_is_embedded_once_across_processes_with_the_same_bytes(tmp_path: Path) -> None:
    path = tmp_path / "vectors.txt"
    model = CountingModel()
    first = VectorFile(model, path, DIMENSIONS)
    vectors = first(["alpha", "beta", "alpha"])
    assert model.asked == ["alpha", "beta"]  # a repeat within one request is embedded once too
    assert first(["beta"])[0].tobytes() == vectors[1].tobytes()
    assert model.asked == ["alpha", "beta"]

    later_model = CountingModel()
    later = VectorFile(later_model, path, DIMENSIONS)
    assert len(later) == 2
    again = later(["beta", "gamma", "alpha"])
    assert later_model.asked == ["gamma"]
    assert again[0].tobytes() == vectors[1].tobytes() and again[2].tobytes() == vectors[0].tobytes()
    assert again[1].tobytes() == CountingModel()(["gamma"])[0].tobytes()


def test_a_line_cut_short_costs_only_its_own_text(tmp_path: Path) -> None:
    path = tmp_path / "vectors.txt"
    VectorFile(CountingModel(), path, DIMENSIONS)(["kept", "cut"])
    whole = path.read_text()
    path.write_text(whole[: len(whole) - 9])  # killed while writing the second line

    model = CountingModel()
    reopened = VectorFile(model, path, DIMENSIONS)
    assert len(reopened) == 1
    reopened(["kept", "cut", "new"])
    assert model.asked == ["cut", "new"]

    model = CountingModel()
    assert len(VectorFile(model, path, DIMENSIONS)) == 3  # the appends began on a line of their own


def test_lines_of_other_dimensions_or_garbage_are_not_read(tmp_path: Path) -> None:
    path = tmp_path / "vectors.txt"
    VectorFile(CountingModel(), path, DIMENSIONS)(["one"])
    with path.open("a") as file:
        file.write("not a line\n" + "f" * 64 + "\t%%%\n")
    assert len(VectorFile(CountingModel(), path, DIMENSIONS)) == 1
    assert len(VectorFile(CountingModel(), path, DIMENSIONS * 2)) == 0
