"""What a captured turn becomes before it is sent: redacted, cleaned, formatted and split."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from hosts.hermes.powercontext_memory._core.entries import (
    MAX_ENTRY_CHARS,
    clean,
    entry_texts,
    fingerprint,
    turn_body,
)
from hosts.hermes.powercontext_memory._core.redact import MARKER, redact
from hosts.hermes.powercontext_memory._core.split import split_text

# Redaction

SECRETS = {
    "openai": (
        "key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z done",
        "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    ),
    "openai-legacy": ("sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"),
    "anthropic": (
        "use sk-ant-api03-Ab3dEf6hIj9k_Lm2nOp5-qRs8tUv1",
        "sk-ant-api03-Ab3dEf6hIj9k_Lm2nOp5-qRs8tUv1",
    ),
    "github-classic": (
        "ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z0123",
        "ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z0123",
    ),
    "github-fine": (
        "github_pat_11AB3DEF0_Ab3dEf6hIj9kLm2nOp5qRs8",
        "github_pat_11AB3DEF0_Ab3dEf6hIj9kLm2nOp5qRs8",
    ),
    "aws": ("aws id AKIAIOSFODNN7EXAMPLE.", "AKIAIOSFODNN7EXAMPLE"),
    "slack-bot": ("xoxb-123456789012-1234567890123-AbCdEfGhIj", "xoxb-123456789012-1234567890123-AbCdEfGhIj"),
    "slack-user": ("token xoxp-1234-5678-90ab-cdef12345", "xoxp-1234-5678-90ab-cdef12345"),
    "api-key-assign": ("api_key=Zq81mPr0vNc", "Zq81mPr0vNc"),
    "token-colon": ("token: s3cr3t-value, then", "s3cr3t-value"),
    "json-secret": ('{"client_secret": "a b c d 42"}', "a b c d 42"),
    "env-secret": ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    "password-quoted": ("password = 'hunter two'", "hunter two"),
    "query-token": ("GET /cb?access_token=Zq81mPr0vNc&page=2", "Zq81mPr0vNc"),
    "auth-header": (
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
        "eyJhbGciOiJIUzI1NiJ9",
    ),
    "auth-basic": ("-H 'Authorization: Basic dXNlcjpwYXNzd29yZA=='", "dXNlcjpwYXNzd29yZA=="),
    "bearer-alone": ("then send Bearer 9f8e7d6c5b4a3f2e1d0c", "9f8e7d6c5b4a3f2e1d0c"),
    "url-password": ("postgres://admin:Sup3r-S3cret@db.internal:5432/app", "Sup3r-S3cret"),
    "private-key": (
        "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7x\nQ2xvdWQ=\n-----END RSA PRIVATE KEY-----\nok",
        "MIIEpAIBAAKCAQEA7x",
    ),
    "private-key-cut-off": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXkt\nQ2xvdWQ=",
        "b3BlbnNzaC1rZXkt",
    ),
}


@pytest.mark.parametrize(("text", "secret"), SECRETS.values(), ids=SECRETS.keys())
def test_each_secret_shape_is_replaced_by_the_marker(text: str, secret: str) -> None:
    redacted = redact(text)
    assert secret not in redacted
    assert MARKER in redacted
    assert redact(redacted) == redacted  # stable when applied again


def test_redaction_keeps_what_is_around_the_secret() -> None:
    assert redact("postgres://admin:Sup3r-S3cret@db:5432/app") == f"postgres://admin:{MARKER}@db:5432/app"
    assert redact("Authorization: Bearer abc.def-123") == f"Authorization: Bearer {MARKER}"
    assert redact("api_key=Zq81mPr0vNc&x=1") == f"api_key={MARKER}&x=1"
    assert redact('"password": "hunter two"') == f'"password": "{MARKER}"'
    block = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----"
    assert redact(f"before\n{block}\nafter") == f"before\n{MARKER}\nafter"
    assert (
        redact("-----BEGIN PRIVATE KEY-----\nMHcCAQEE\nThen run make test.")
        == f"{MARKER}\nThen run make test."
    )


NORMAL = [
    "The tide-pool survey is on Thursday; my locker code is 4471.",
    "Run `make test` after changing the OpenAPI document, then make contract-test.",
    "def check(token: str, password: Optional[str] = None) -> bool:\n    return token == expected",
    "The Bearer token scheme sends credentials; a tokenizer: bpe splits words.",
    "Visit https://example.com:8080/docs or http://localhost:8000/v1/scopes, mail me@example.com.",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
    "Tasks: ask-question, risk-assessment and the desk-sk-list; the secret of success is practice.",
    "Привет, мир — 你好 ✓ emoji 🦓 and a\ttab",
]


@pytest.mark.parametrize("text", NORMAL)
def test_normal_text_is_left_untouched(text: str) -> None:
    assert redact(text) == text


# Splitting

WORDS = [f"word{i:05d}" for i in range(6000)]
PARAGRAPHS = "\n\n".join(" ".join(WORDS[i : i + 90]) for i in range(0, len(WORDS), 90))
LINES = "\n".join(" ".join(WORDS[i : i + 7]) for i in range(0, len(WORDS), 7))
ONE_LINE = " ".join(WORDS)
SPACEY = "  \n\n ".join(["  alpha   beta  ", "\tgamma\n\n\n delta  "] * 3000)


@pytest.mark.parametrize(
    "text", [PARAGRAPHS, LINES, ONE_LINE, SPACEY], ids=["paragraphs", "lines", "one-line", "spacey"]
)
@pytest.mark.parametrize("limit", [16000, 1000, 57])
def test_split_pieces_fit_keep_every_word_and_are_never_blank(text: str, limit: int) -> None:
    pieces = split_text(text, limit)
    assert len(pieces) > 1
    assert all(0 < len(piece) <= limit for piece in pieces)
    assert all(piece.strip() == piece for piece in pieces)
    assert " ".join(pieces).split() == text.split()


def test_split_prefers_paragraph_then_line_then_word_boundaries() -> None:
    first, second = "a" * 50 + " " + "b" * 40, "c" * 60
    assert split_text(f"{first}\n\n{second}", 100) == [first, second]
    assert split_text(f"{first}\n{second}", 100) == [first, second]
    assert split_text("x" * 30 + " " + "y" * 50, 60) == ["x" * 30, "y" * 50]


def test_a_run_without_breaks_is_cut_and_keeps_every_character() -> None:
    blob = "QUJD" * 10001
    pieces = split_text(f"see {blob} end", 16000)
    assert all(0 < len(piece) <= 16000 for piece in pieces)
    assert "".join(pieces).replace(" ", "") == f"see{blob}end"


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t "])
def test_blank_text_gives_no_pieces(text: str) -> None:
    assert split_text(text, 100) == []


def test_short_text_is_one_stripped_piece() -> None:
    assert split_text("  keep  me \n", 16000) == ["keep  me"]


# Entries

WHEN = datetime(2026, 5, 22, 10, 15, 3, 987654, tzinfo=UTC)


def test_a_turn_is_one_entry_with_a_header_user_and_assistant() -> None:
    [text] = entry_texts(
        turn_body("When is the survey?", "On Thursday."), "20260522_101500_ab12cd", WHEN, "Hermes"
    )
    assert text == (
        "[Hermes conversation | session 20260522_101500_ab12cd | 2026-05-22T10:15:03Z]\n"
        "User: When is the survey?\n\nAssistant: On Thursday."
    )


def test_the_time_is_written_in_utc() -> None:
    local = WHEN.astimezone(timezone(timedelta(hours=-7)))
    [text] = entry_texts("User: x", "s", local, "Hermes")
    assert "| 2026-05-22T10:15:03Z]" in text


def test_a_long_turn_is_split_into_numbered_parts_within_the_entry_limit() -> None:
    body = turn_body(ONE_LINE, PARAGRAPHS)
    texts = entry_texts(body, "s1", WHEN, "Hermes")
    assert len(texts) >= 2
    assert all(len(text) <= MAX_ENTRY_CHARS for text in texts)
    for index, text in enumerate(texts, 1):
        assert text.startswith(
            f"[Hermes conversation | session s1 | 2026-05-22T10:15:03Z | part {index}/{len(texts)}]\n"
        )
    joined = " ".join(text.split("\n", 1)[1] for text in texts)
    assert joined.split() == body.split()


def test_a_blank_side_is_left_out_and_a_blank_turn_is_empty() -> None:
    assert turn_body("hello", "") == "User: hello"
    assert turn_body("", "") == ""


def test_clean_removes_recalled_context_control_characters_and_secrets() -> None:
    text = (
        "My question\r\n<memory-context>\nrecalled: old text\n</memory-context>\x00\x07 "
        "key sk-Ab3dEf6hIj9kLm2nOp5qRs8t \ud800end"
    )
    cleaned = clean(text)
    assert "recalled" not in cleaned and "memory-context" not in cleaned
    assert "\x00" not in cleaned and "\x07" not in cleaned and "\r" not in cleaned
    assert "sk-Ab3d" not in cleaned and MARKER in cleaned
    cleaned.encode("utf-8")  # no lone surrogate is left
    assert cleaned.startswith("My question\n")


def test_the_fingerprint_ignores_whitespace_but_not_scope_or_server() -> None:
    base = fingerprint("http://a", "project:x", "User: hi\n\nAssistant: yo")
    assert fingerprint("http://a", "project:x", "User:  hi Assistant:\tyo") == base
    assert fingerprint("http://a", "project:y", "User: hi\n\nAssistant: yo") != base
    assert fingerprint("http://b", "project:x", "User: hi\n\nAssistant: yo") != base
    assert fingerprint("http://a", "project:x", "User: hi\n\nAssistant: no") != base
