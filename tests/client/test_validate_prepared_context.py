"""`validate_prepared_context`: the host-side checks before a prepare answer is injected."""

from __future__ import annotations

from typing import Any

import pytest

from powercontext_api.models import PreparedContext
from powercontext_client import (
    InvalidPreparedContextError,
    PowerContextError,
    ValidatedContext,
    validate_prepared_context,
)

SCHEMA = "powercontext.prepared-context.v1"


def ready(content: str, content_bytes: int | None = None) -> dict[str, Any]:
    size = len(content.encode("utf-8")) if content_bytes is None else content_bytes
    return {"schema": SCHEMA, "status": "ready", "content": content, "content_bytes": size}


EMPTY = {"schema": SCHEMA, "status": "empty", "content": None, "content_bytes": 0}


def test_ready_answer_returns_its_content_unchanged() -> None:
    content = "  记忆 context\n\twith spaces \n"
    assert validate_prepared_context(ready(content), max_bytes=8000) == ValidatedContext(
        content=content, content_bytes=len(content.encode("utf-8"))
    )


def test_empty_answer_returns_none() -> None:
    assert validate_prepared_context(EMPTY, max_bytes=8000) is None


def test_the_generated_model_is_accepted_like_the_dict() -> None:
    model = PreparedContext.model_validate(ready("abc"))
    assert validate_prepared_context(model, max_bytes=3) == ValidatedContext("abc", 3)
    assert validate_prepared_context(PreparedContext.model_validate(EMPTY), max_bytes=512) is None


def test_content_of_exactly_the_cap_passes_and_one_byte_over_fails() -> None:
    content = "é" * 256  # 512 bytes of UTF-8
    assert validate_prepared_context(ready(content), max_bytes=512) is not None
    with pytest.raises(InvalidPreparedContextError, match="over the host's cap of 511"):
        validate_prepared_context(ready(content), max_bytes=511)


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({**ready("x"), "items": []}, "exactly the keys"),
        ({k: v for k, v in ready("x").items() if k != "content_bytes"}, "exactly the keys"),
        ({**ready("x"), "schema": "powercontext.prepared-context.v2"}, "schema"),
        ({**ready("x"), "status": "partial"}, "status"),
        (ready("x", content_bytes=2), "content_bytes is 2 but content is 1 bytes"),
        (ready("é", content_bytes=1), "content_bytes is 1 but content is 2 bytes"),
        ({**ready("x"), "content_bytes": "1"}, "not an integer"),
        ({**ready("x"), "content_bytes": True}, "not an integer"),
        ({**ready("x"), "content": None}, "non-blank string"),
        (ready(" \n\t"), "non-blank string"),
        (ready(""), "non-blank string"),
        ({**ready("x"), "content": 1}, "non-blank string"),
        ({**EMPTY, "content": ""}, "content null and content_bytes 0"),
        ({**EMPTY, "content_bytes": 1}, "content null and content_bytes 0"),
        (ready("\ud800", content_bytes=3), "UTF-8"),
        (["not", "an", "object"], "not a JSON object"),
    ],
    ids=[
        "extra-key",
        "missing-key",
        "wrong-schema",
        "unknown-status",
        "length-too-large",
        "length-counted-in-characters",
        "length-as-string",
        "length-as-bool",
        "ready-null-content",
        "ready-blank-content",
        "ready-empty-content",
        "ready-non-string-content",
        "empty-with-content",
        "empty-with-bytes",
        "lone-surrogate",
        "not-an-object",
    ],
)
def test_each_contract_violation_raises_a_typed_error_naming_it(payload: Any, problem: str) -> None:
    with pytest.raises(InvalidPreparedContextError, match=problem) as caught:
        validate_prepared_context(payload, max_bytes=8000)
    assert isinstance(caught.value, PowerContextError)


@pytest.mark.parametrize("cap", [-1, 1.5, True, "8000"])
def test_a_bad_host_cap_is_a_programming_error(cap: Any) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        validate_prepared_context(EMPTY, max_bytes=cap)
