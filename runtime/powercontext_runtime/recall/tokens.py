"""Tokens shared by indexing and querying: lower-cased words, and single CJK characters.

Chinese, Japanese and Korean text has no spaces, so each CJK character is a token of its own and a
query turns each CJK run into its overlapping two-character pairs; `bm25.py` indexes those
pairs as terms, which finds `记忆` inside `记忆系统`.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

MAX_QUERY_TERMS = 64


# Hiragana and Katakana, CJK Extension A, CJK Unified Ideographs, Hangul syllables, CJK
# Compatibility Ideographs, Extensions B-H.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
# A CJK character alone, or a run of word characters (str.isalnum() or "_", which is what `\w`
# means for str patterns) that are not CJK. One C-level scan instead of a Python loop per character.
_TOKEN = re.compile(f"([{_CJK}])|([^\\W{_CJK}]+)")


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    cjk: bool


def tokens(text: str) -> list[Token]:
    """Lower-cased word tokens and single CJK characters, in text order."""
    return [Token(cjk, True) if cjk else Token(word, False) for cjk, word in _TOKEN.findall(text.lower())]


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """Terms to match, any of them; a term with several tokens is a phrase (adjacent tokens)."""

    terms: tuple[tuple[str, ...], ...]

    @property
    def is_empty(self) -> bool:
        return not self.terms


def parse_query(text: str) -> SearchQuery:
    """Words become single-token terms; each CJK run becomes its overlapping character pairs."""
    terms: list[tuple[str, ...]] = []
    seen: set[tuple[str, ...]] = set()

    def add(term: tuple[str, ...]) -> None:
        if term not in seen and len(terms) < MAX_QUERY_TERMS:
            seen.add(term)
            terms.append(term)

    run: list[str] = []

    def flush_run() -> None:
        if len(run) == 1:
            add((run[0],))
        for a, b in itertools.pairwise(run):
            add((a, b))
        run.clear()

    for token in tokens(text):
        if token.cjk:
            run.append(token.text)
        else:
            flush_run()
            add((token.text,))
    flush_run()
    return SearchQuery(tuple(terms))
