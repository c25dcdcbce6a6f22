"""Tokens shared by indexing and querying: normalised, stemmed words, and single CJK characters.

Text is normalised before it is split: Unicode NFKC, then case folding, so `café` typed as one code
point or as `e` plus an accent, full-width `ＡＰＩ` and `api`, the ligature in `ﬁle` and `file`, and
`Straße` and `strasse` are the same words. A word is then reduced to its English Snowball stem
(PyStemmer), so `releases`, `released` and `release` meet; other languages written in Latin, Greek
or Cyrillic letters are normalised but not stemmed, and a stem of a non-English word only has to be
the same at index and query time, which it is. English stop words are indexed, but a query drops
them unless it holds nothing else.

Chinese, Japanese and Korean text has no spaces, so each CJK character is a token of its own and a
query turns each CJK run into its overlapping two-character pairs; `_bm25.py` indexes those
pairs as terms, which finds `记忆` inside `记忆系统`.
"""

from __future__ import annotations

import itertools
import re
import threading
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import Stemmer

MAX_QUERY_TERMS = 64


# Hiragana and Katakana, CJK Extension A, CJK Unified Ideographs, Hangul syllables, CJK
# Compatibility Ideographs, Extensions B-H.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
# A CJK character alone, or a run of word characters (str.isalnum() or "_", which is what `\w`
# means for str patterns) that are not CJK. One C-level scan instead of a Python loop per character.
_TOKEN = re.compile(f"([{_CJK}])|([^\\W{_CJK}]+)")
_CJK_RUN_OR_WORD = re.compile(f"([{_CJK}]+)|([^\\W{_CJK}]+)")
# For case-folded ASCII text: every byte that is not a word character ([a-z0-9_]) becomes a space,
# so `split()` yields the words; three times faster than finding them with a pattern.
_ASCII_BREAKS = bytes(c if chr(c).isalnum() or c == ord("_") else ord(" ") for c in range(128)) + b" " * 128

# Function words that say nothing about what an entry is about, after normalisation and before
# stemming; `s`, `t`, `ll`, … are what is left of contractions and possessives.
STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "re",
        "ve",
    ]
)


class _Stems:
    """English Snowball stems, remembered. PyStemmer keeps a cache of its own, but asking it costs
    about four times a dict lookup made from C (`map`), and indexing asks for every word of every
    text: a text of 47 words took 11 µs, 2.6 µs from this dict. A PyStemmer instance must not be used
    by two threads at once, so one lock guards it and every change to the dict."""

    MAX_WORDS = 65_536  # then start afresh: a stream of one-off words (ids, typos) cannot grow it

    def __init__(self) -> None:
        self._stemmer = Stemmer.Stemmer("english")
        self._lock = threading.Lock()
        self._known: dict[str, str] = {}

    def __call__(self, words: Sequence[str]) -> list[str]:
        stems = list(map(self._known.get, words))
        if None not in stems:
            return stems  # type: ignore[return-value]
        with self._lock:
            missing = list(
                dict.fromkeys(word for word, stem in zip(words, stems, strict=True) if stem is None)
            )
            fresh = dict(zip(missing, self._stemmer.stemWords(missing), strict=True))
            if len(self._known) + len(fresh) > self.MAX_WORDS:
                self._known.clear()  # the words of `stems` found before may go: they are answered below
            self._known.update(fresh)
        return [fresh[word] if stem is None else stem for word, stem in zip(words, stems, strict=True)]


_STEMS = _Stems()


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    cjk: bool
    stop: bool = False


# U+FF01-FF5E decompose to U+0021-007E, U+3000 (ideographic space) to a space.
_FULL_WIDTH = re.compile("[\uff01-\uff5e\u3000]")


def _half_width(match: re.Match[str]) -> str:
    code = ord(match.group())
    return " " if code == 0x3000 else chr(code - 0xFEE0)


class Normalised(str):
    """A text as `normalise` returns it, so normalising it again costs nothing: a remember works
    out its duplicate check's form and its terms from one normalisation."""

    __slots__ = ()


def normalised(text: str) -> Normalised:
    return Normalised(normalise(text))


def normalise(text: str) -> str:
    """NFKC, then case folding: the form every token is taken from."""
    if type(text) is Normalised:
        return text
    if text.isascii():  # ASCII is its own NFKC form
        return text.lower()
    # Chinese text is rarely NFKC only because of its full-width punctuation, and NFKC costs some
    # 12 µs a sentence where the quick check costs 0.1. A character replaced by its compatibility
    # decomposition leaves the NFKC form of the whole text unchanged.
    text = _FULL_WIDTH.sub(_half_width, text)
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    return text.casefold()


def comparable(text: str) -> str:
    """`normalise` with whitespace collapsed (a run to one space, none at the ends): texts that
    differ only in Unicode form, case or spacing compare equal (Memory's duplicate check)."""
    return " ".join(normalise(text).split())


def tokens(text: str) -> list[Token]:
    """Stemmed words (stop words marked) and single CJK characters, in text order."""
    found = _TOKEN.findall(normalise(text))
    stems = iter(_STEMS([word for cjk, word in found if not cjk]))
    return [Token(cjk, True) if cjk else Token(next(stems), False, word in STOP_WORDS) for cjk, word in found]


def index_tokens(text: str) -> tuple[list[str], list[str]]:
    """The tokens of a text to index, in two parts: its stemmed words, and its CJK stretches: runs of
    CJK characters with nothing but non-word characters between them, joined. Each character of a
    stretch is a token, and each two adjacent characters of one are adjacent tokens. Like `tokens`
    without the Token objects and without a Python step per CJK character (most of indexing's time)."""
    words, stretches = index_words(text)
    return _STEMS(words), stretches


def index_words(text: str) -> tuple[list[str], list[str]]:
    """`index_tokens` before stemming: the normalised words, and the CJK stretches. A batch stems
    each distinct word once (`stems`), not each occurrence."""
    normalised = normalise(text)
    if normalised.isascii():
        # The same words as `_TOKEN` finds in ASCII text, where a word character is [a-z0-9_]
        # once case-folded.
        return normalised.encode("ascii").translate(_ASCII_BREAKS).decode("ascii").split(), []
    words: list[str] = []
    stretches: list[str] = []
    runs: list[str] = []
    for run, word in _CJK_RUN_OR_WORD.findall(normalised):
        if run:
            runs.append(run)
            continue
        if runs:
            stretches.append("".join(runs))
            runs.clear()
        words.append(word)
    if runs:
        stretches.append("".join(runs))
    return words, stretches


def stems(words: Sequence[str]) -> list[str]:
    """The English Snowball stem of each normalised word."""
    return _STEMS(words)


def first_match(text: str, terms: Collection[str]) -> int | None:
    """Where `text`, as written, first holds a word or CJK pair whose term is in `terms`, or None.

    Only a word that can stem to a term is stemmed: stemming changes endings, never the first
    letter, so words starting with another letter are passed over (a detail can be 64,000
    characters, and stemming all of it cost about 13 ms)."""
    initials = {term[0] for term in terms if term}
    if not initials:
        return None
    if text.isascii():  # no CJK, and NFKC with case folding is lower-casing: let `re` find candidates
        starts = re.compile(rf"(?<!\w)[{re.escape(''.join(initials))}]\w*", re.IGNORECASE)
        for match in starts.finditer(text):
            if _STEMS([match.group().lower()])[0] in terms:
                return match.start()
        return None
    previous: tuple[int, str] | None = None
    for match in _TOKEN.finditer(text):
        word = match.group(2)
        if word:
            previous = None
            folded = normalise(word)
            if folded[:1] in initials and _STEMS([folded])[0] in terms:
                return match.start()
            continue
        character = normalise(match.group(1))
        if character in terms:
            return match.start()
        if previous is not None and previous[1] + character in terms:
            return previous[0]
        previous = (match.start(), character)
    return None


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """Terms to match, any of them; a term with several tokens is a phrase (adjacent tokens)."""

    terms: tuple[tuple[str, ...], ...]
    # The text as asked: what the embedding leg embeds (runtime/vectors).
    text: str = field(default="", compare=False)

    @property
    def is_empty(self) -> bool:
        return not self.terms


def parse_query(text: str) -> SearchQuery:
    """Words become single-token terms; each CJK run becomes its overlapping character pairs.
    Stop words are left out unless the query has nothing else."""
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

    found = tokens(text)
    keep_stop_words = all(token.stop for token in found)
    for token in found:
        if token.cjk:
            run.append(token.text)
        elif keep_stop_words or not token.stop:
            flush_run()
            add((token.text,))
    flush_run()
    return SearchQuery(tuple(terms), text)
