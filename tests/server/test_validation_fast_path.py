"""`ValidatorCache.certainly_valid` never lets an invalid body through, remembered or not."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from connexion.json_schema import resolve_refs
from connexion.spec import Specification
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext_server.app import default_spec_path
from powercontext_server.validation import ValidatorCache, schema_errors


@pytest.fixture(scope="module")
def prepare_schema() -> dict[str, Any]:
    spec = resolve_refs(Specification.load(default_spec_path()).raw)
    schema: dict[str, Any] = spec["paths"]["/v1/context/prepare"]["post"]["requestBody"]["content"][
        "application/json"
    ]["schema"]
    return schema


FAMILIES = st.sampled_from(["memory", "experience", "profile", "topic-memory", "nope", 3])
SECTION = st.fixed_dictionaries(
    {"family": FAMILIES, "limit": st.one_of(st.integers(-1, 10), st.just("2"), st.just(True))},
    optional={"extra": st.just(1)},
)
ASSEMBLY = st.one_of(
    st.just({}),
    st.none(),
    st.just([]),
    st.fixed_dictionaries(
        {},
        optional={
            "sections": st.lists(SECTION, max_size=5),
            "show": st.lists(st.sampled_from(["confidence", "recall_rank", "x"]), max_size=3),
            "format": st.sampled_from(["markdown", "html"]),
        },
    ),
)
BODY = st.fixed_dictionaries(
    {"scope_id": st.sampled_from(["project:demo", "", 7]), "query": st.sampled_from(["q", ""])},
    optional={"assembly": ASSEMBLY, "max_bytes": st.sampled_from([512, 100, 32768, "x"]), "more": st.just(1)},
)


@settings(max_examples=400, deadline=None)
@given(st.lists(BODY, min_size=1, max_size=4))
def test_certainly_valid_only_for_bodies_without_errors(
    prepare_schema: dict[str, Any], bodies: list[Any]
) -> None:
    cache = ValidatorCache()
    for body in bodies * 2:  # the second pass answers from what the first remembered
        if cache.certainly_valid(prepare_schema, copy.deepcopy(body)):
            assert schema_errors(ValidatorCache(), prepare_schema, body, ("body",)) == []


def test_a_valid_four_family_assembly_is_recognised(prepare_schema: dict[str, Any]) -> None:
    cache = ValidatorCache()
    sections = [{"family": f, "limit": 2} for f in ("memory", "experience", "profile", "topic-memory")]
    body = {"scope_id": "s", "query": "q", "assembly": {"sections": sections}, "max_bytes": 32768}
    assert cache.certainly_valid(prepare_schema, body)
    assert cache.certainly_valid(prepare_schema, body)
    body["assembly"]["sections"][0]["limit"] = 99
    assert not cache.certainly_valid(prepare_schema, body)
