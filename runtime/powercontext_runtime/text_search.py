"""Tokens shared by indexing and querying: lower-cased words, and single CJK characters.

Chinese, Japanese and Korean text has no spaces, so each CJK character is a token of its own and a
query turns each CJK run into its overlapping two-character pairs; `search_index.py` indexes those
pairs as terms, which finds `记忆` inside `记忆系统`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

MAX_QUERY_TERMS = 64


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x3040 <= cp <= 0x30FF  # Hiragana, Katakana
        or 0x3400 <= cp <= 0x4DBF  # CJK Extension A
        or 0x4E00 <= cp <= 0x9FFF  # CJK Unified Ideographs
        or 0xAC00 <= cp <= 0xD7AF  # Hangul syllables
        or 0xF900 <= cp <= 0xFAFF  # CJK Compatibility Ideographs
        or 0x20000 <= cp <= 0x3134F  # Extensions B-H
    )


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    cjk: bool


def tokens(text: str) -> list[Token]:
    """Lower-cased word tokens and single CJK characters, in text order."""
    out: list[Token] = []
    word: list[str] = []
    for ch in text.lower():
        if _is_cjk(ch):
            if word:
                out.append(Token("".join(word), False))
                word = []
            out.append(Token(ch, True))
        elif _is_word_char(ch):
            word.append(ch)
        elif word:
            out.append(Token("".join(word), False))
            word = []
    if word:
        out.append(Token("".join(word), False))
    return out


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
