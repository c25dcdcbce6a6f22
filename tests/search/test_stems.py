"""English stems are remembered up to a bound, then the memory starts afresh; a call that crosses
the bound still answers every word, those it knew before included (a batch of notes with ticket
numbers crossed it and failed with a 500)."""

from __future__ import annotations

import pytest
import Stemmer

from powercontext_runtime.search import _tokens


def test_crossing_the_bound_answers_every_word_known_or_new(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tokens._Stems, "MAX_WORDS", 8)
    stems = _tokens._Stems()
    reference = Stemmer.Stemmer("english")
    known = ["running", "stores", "merged"]
    assert stems(known) == reference.stemWords(known)
    mixed = [*known, *(f"store_{n}" for n in range(10)), "running"]
    assert stems(mixed) == reference.stemWords(mixed)
    assert stems(known) == reference.stemWords(known)  # forgotten, asked again
