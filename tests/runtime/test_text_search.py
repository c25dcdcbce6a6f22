"""Tokens shared by every backend (issue 2: FTS finds Chinese inside longer words)."""

from powercontext_runtime.text_search import MAX_QUERY_TERMS, parse_query, tokens


def test_cjk_characters_are_indexed_one_token_each() -> None:
    assert [t.text for t in tokens("我们的记忆系统 uses SQLite")] == [*"我们的记忆系统", "uses", "sqlite"]


def test_a_cjk_run_in_a_query_becomes_overlapping_pairs() -> None:
    assert parse_query("记忆系统").terms == (("记", "忆"), ("忆", "系"), ("系", "统"))


def test_a_single_cjk_character_is_its_own_term() -> None:
    assert parse_query("猫 cat").terms == (("猫",), ("cat",))


def test_query_punctuation_cannot_become_search_syntax() -> None:
    assert parse_query('"a" OR b* NEAR(c) -- ;').terms == (("a",), ("or",), ("b",), ("near",), ("c",))


def test_query_terms_are_unique_and_bounded() -> None:
    query = parse_query(" ".join(f"w{i} w{i}" for i in range(500)))
    assert len(query.terms) == MAX_QUERY_TERMS
    assert len(set(query.terms)) == MAX_QUERY_TERMS


def test_a_query_of_only_symbols_has_no_terms() -> None:
    assert parse_query("?!… 🎉").is_empty
