"""Tokens shared by every backend: Chinese inside longer words (issue 2); normalised, stemmed
words and stop words (issue 13)."""

import itertools
import unicodedata
from collections import Counter

import pytest
import Stemmer
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext_runtime.search._batch_terms import grouped_terms
from powercontext_runtime.search._bm25 import MAX_TERM_LENGTH, document_terms
from powercontext_runtime.search._tokens import MAX_QUERY_TERMS, STOP_WORDS, normalise, parse_query, tokens


def reference_tokens(text: str) -> list[tuple[str, bool]]:
    """The definition, one character at a time after NFKC and case folding: CJK characters alone,
    other word characters (`str.isalnum()` or `_`) in runs, stemmed one word at a time, everything
    else separates."""
    stem = Stemmer.Stemmer("english", 0).stemWord

    def cjk(ch: str) -> bool:
        cp = ord(ch)
        return any(low <= cp <= high for low, high in CJK_RANGES)

    out: list[tuple[str, bool]] = []
    word = ""
    for ch in unicodedata.normalize("NFKC", text).casefold():
        if cjk(ch) or not (ch.isalnum() or ch == "_"):
            if word:
                out.append((stem(word), False))
                word = ""
            if cjk(ch):
                out.append((ch, True))
        else:
            word += ch
    if word:
        out.append((stem(word), False))
    return out


CJK_RANGES = (
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0x20000, 0x3134F),
)
# Each range's edges and their neighbours, and characters whose lower case or class is tricky.
EDGES = [chr(cp) for low, high in CJK_RANGES for cp in (low - 1, low, low + 1, high - 1, high, high + 1)]
MIXED_TEXT = st.text(
    st.one_of(
        st.characters(),
        st.sampled_from([*EDGES, *"_- \n.İßǅ٣²ⅷ"]),
        st.characters(min_codepoint=0x3000, max_codepoint=0xFB00),
    ),
    max_size=80,
)


FULL_WIDTH_TEXT = st.text(
    st.one_of(
        st.characters(min_codepoint=0xFF00, max_codepoint=0xFFEF),
        st.sampled_from([*"\u3000\u0301\u0308\u3099\u309a", "\U0001d400"]),
        st.characters(),
    ),
    max_size=40,
)


@settings(max_examples=600)
@given(st.one_of(MIXED_TEXT, FULL_WIDTH_TEXT))
def test_normalise_is_nfkc_then_case_folding(text: str) -> None:
    """The quick paths (ASCII, full-width forms replaced before the NFKC check) give exactly NFKC
    followed by case folding, combining marks after a full-width letter included."""
    assert normalise(text) == unicodedata.normalize("NFKC", text).casefold()


@settings(max_examples=400)
@given(MIXED_TEXT)
def test_tokens_follow_the_character_by_character_definition(text: str) -> None:
    assert [(t.text, t.cjk) for t in tokens(text)] == reference_tokens(text)


@settings(max_examples=400)
@given(st.one_of(MIXED_TEXT, st.text(st.characters(max_codepoint=0x7F), max_size=80)))
def test_indexed_terms_follow_the_same_definition(text: str) -> None:
    """`document_terms` (indexing: an ASCII-only scan, CJK stretches counted whole) counts the tokens
    of the character-by-character definition, cut to the term limit, and each two adjacent CJK
    tokens as a pair."""
    expected = reference_tokens(text)
    counts = Counter(t[:MAX_TERM_LENGTH] for t, _ in expected)
    counts.update(a + b for (a, x), (b, y) in itertools.pairwise(expected) if x and y)
    assert document_terms(text) == counts


@settings(max_examples=200)
@given(st.lists(st.one_of(MIXED_TEXT, st.text(st.characters(max_codepoint=0x7F), max_size=40)), max_size=12))
def test_a_batch_is_grouped_into_the_terms_of_each_of_its_texts(texts: list[str]) -> None:
    """`grouped_terms` (a batch's CJK counted in numpy) holds, for every term, exactly the texts
    `document_terms` gives it to, in order, with their frequencies."""
    grouped = grouped_terms(texts)
    counted = [document_terms(text) for text in texts]
    expected = {
        term: [(i, counts[term]) for i, counts in enumerate(counted) if term in counts]
        for term in sorted(set().union(*counted))
    }
    found = {
        term: list(
            zip(
                grouped.positions[grouped.bounds[i] : grouped.bounds[i + 1]].tolist(),
                grouped.tfs[grouped.bounds[i] : grouped.bounds[i + 1]].tolist(),
                strict=True,
            )
        )
        for i, term in enumerate(grouped.terms)
    }
    assert grouped.terms == list(expected)
    assert found == expected
    assert grouped.lengths == [sum(counts.values()) for counts in counted]


def test_cjk_characters_are_indexed_one_token_each() -> None:
    assert [t.text for t in tokens("我们的记忆系统 uses SQLite")] == [*"我们的记忆系统", "use", "sqlite"]


def test_a_cjk_run_in_a_query_becomes_overlapping_pairs() -> None:
    assert parse_query("记忆系统").terms == (("记", "忆"), ("忆", "系"), ("系", "统"))


def test_a_single_cjk_character_is_its_own_term() -> None:
    assert parse_query("猫 cat").terms == (("猫",), ("cat",))


def test_query_punctuation_cannot_become_search_syntax() -> None:
    assert parse_query('"a" OR b* NEAR(c) -- ;').terms == (("b",), ("near",), ("c",))


def test_query_terms_are_unique_and_bounded() -> None:
    query = parse_query(" ".join(f"w{i} w{i}" for i in range(500)))
    assert len(query.terms) == MAX_QUERY_TERMS
    assert len(set(query.terms)) == MAX_QUERY_TERMS


def test_a_query_of_only_symbols_has_no_terms() -> None:
    assert parse_query("?!… 🎉").is_empty


def test_every_cjk_range_edge_splits_exactly_as_defined() -> None:
    for ch in EDGES:
        text = f"{ch}{ch}a_b{ch}Z"
        assert [(t.text, t.cjk) for t in tokens(text)] == reference_tokens(text), hex(ord(ch))


@pytest.mark.parametrize(
    ("written", "searched"),
    [
        ("caf\u00e9", "cafe\u0301"),  # NFC and NFD
        ("\uff21\uff30\uff29", "api"),  # full-width letters
        ("\ufb01le", "file"),  # the fi ligature
        ("Stra\u00dfe", "strasse"),  # sharp s folds to ss
        ("releases", "release"),
        ("Released", "releasing"),
    ],
)
def test_written_and_searched_forms_meet(written: str, searched: str) -> None:
    assert [t.text for t in tokens(written)] == [t.text for t in tokens(searched)]


def test_a_query_drops_stop_words_unless_it_holds_nothing_else() -> None:
    assert parse_query("When did the team ship it?").terms == (("team",), ("ship",))
    assert parse_query("what is it").terms == (("what",), ("is",), ("it",))
    assert {"the", "did", "it", "s"} <= STOP_WORDS


def test_stop_words_are_still_indexed() -> None:
    assert [t.text for t in tokens("The Who")] == ["the", "who"]


def reference_first_match(text: str, terms: set[str]) -> int | None:
    """Every word normalised and stemmed, every CJK character and every pair of CJK characters
    with no word between them, listed in the order a reader meets them (a pair when its second
    character is reached), each with where it starts: the first whose term is asked for."""
    import re

    from powercontext_runtime.search._tokens import normalise

    stem = Stemmer.Stemmer("english", 0).stemWord
    pieces = [
        (found.start(), found.group(1) is not None, normalise(found.group()))
        for found in re.finditer(r"([\u3040-\u30ff\u4e00-\u9fff])|([^\W\u3040-\u30ff\u4e00-\u9fff]+)", text)
    ]
    met: list[tuple[int, str]] = []
    for i, (start, cjk, piece) in enumerate(pieces):
        met.append((start, piece if cjk else stem(piece)))
        if cjk and i > 0 and pieces[i - 1][1]:
            met.append((pieces[i - 1][0], pieces[i - 1][2] + piece))
    return next((start for start, term in met if term in terms), None)


SNIPPET_TEXT = st.lists(
    st.sampled_from(
        [*"abcsyz _-.É", "Happy", "skies", "HAPPIER", "dying", "ＡＰＩ", "记", "忆", "ﬁle", "Stra\u00dfe"]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=300)
@given(SNIPPET_TEXT, st.sampled_from(["happy", "sky die", "api file", "记忆", "strasse abc", "zzz"]))
def test_first_match_finds_what_stemming_every_word_finds(text: str, query: str) -> None:
    from powercontext_runtime.search._tokens import first_match

    terms = {"".join(term) for term in parse_query(query).terms}
    assert first_match(text, terms) == reference_first_match(text, terms)
