"""Small hostile requests get their 4xx from the generated models in time linear in their size, and
never a 5xx: each case below froze or crashed the jsonschema validator this server used before.

How fast each one is answered (and that /health/live stays fast meanwhile) is measured by
`make bench-hostile`; these tests pin the answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from .test_http_errors import JSON, error_of, invalid_items, pairs

StartServer = Callable[..., Any]


def test_a_64kb_scope_id_ending_in_a_slash_is_422_too_long(http: httpx.Client) -> None:
    response = http.post("/v1/memory/remember", json={"scope_id": "a" * 65536 + "/", "text": "x"})
    assert ("string_too_long", ["body", "scope_id"]) in pairs(invalid_items(response))
    assert b"aaaa" not in response.content


def test_four_thousand_objects_in_show_are_422_too_long(http: httpx.Client) -> None:
    body = {"scope_id": "a", "query": "q", "assembly": {"show": [{"k": i} for i in range(4000)]}}
    response = http.post("/v1/context/prepare", json=body)
    assert pairs(invalid_items(response))[0] == ("too_long", ["body", "assembly", "show"])


def test_a_repeated_show_value_is_422_unique_items(http: httpx.Client) -> None:
    body = {"scope_id": "a", "query": "q", "assembly": {"show": ["confidence", "confidence"]}}
    response = http.post("/v1/context/prepare", json=body)
    assert invalid_items(response) == [
        {"type": "unique_items", "loc": ["body", "assembly", "show"], "msg": "List items should be unique"}
    ]


def test_a_repeated_context_reference_is_422_unique_items(http: httpx.Client) -> None:
    body = {"scope_id": "project:dup-refs", "context_references": ["team:x", "team:x"]}
    response = http.post("/v1/scopes", json=body)
    assert pairs(invalid_items(response)) == [("unique_items", ["body", "context_references"])]


@pytest.mark.parametrize("depth", [200, 950, 954, 5000])
def test_deep_nesting_in_sections_is_422_json_invalid(http: httpx.Client, depth: int) -> None:
    nested = "[" * depth + "]" * depth
    raw = '{"scope_id":"a","query":"q","assembly":{"sections":' + nested + "}}"
    response = http.post("/v1/context/prepare", content=raw.encode(), headers=JSON)
    assert response.status_code == 422, response.text
    assert pairs(invalid_items(response))[0][0] in ("json_invalid", "dict_type")


def test_an_unknown_family_names_every_allowed_one(http: httpx.Client) -> None:
    body = {"scope_id": "a", "query": "q", "assembly": {"sections": [{"family": "SECRET", "limit": 1}]}}
    response = http.post("/v1/context/prepare", json=body)
    assert invalid_items(response) == [
        {
            "type": "literal_error",
            "loc": ["body", "assembly", "sections", 0, "family"],
            "msg": "Input should be 'experience' or 'memory' or 'profile' or 'topic-memory'",
        }
    ]
    assert b"SECRET" not in response.content


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ({"family": "experience", "limit": 3}, ("less_than_equal", "limit")),
        ({"family": "memory", "limit": 9}, ("less_than_equal", "limit")),
        ({"limit": 1}, ("missing", "family")),
        ({"family": "memory", "limit": 1, "extra": 1}, ("extra_forbidden", None)),
    ],
)
def test_section_errors_name_the_branch_the_family_selects(
    http: httpx.Client, section: dict[str, Any], expected: tuple[str, str | None]
) -> None:
    body = {"scope_id": "a", "query": "q", "assembly": {"sections": [section]}}
    kind, field = expected
    loc = ["body", "assembly", "sections", 0] + ([field] if field else [])
    assert pairs(invalid_items(http.post("/v1/context/prepare", json=body))) == [(kind, loc)]


@pytest.mark.parametrize(
    "content_type",
    [
        "APPLICATION/JSON",
        "Application/Json",
        "application/json; charset=UTF-8",
        'application/json;charset="utf-8"',
        "application/vnd.powercontext+json",
    ],
)
def test_content_type_is_matched_without_regard_to_case_or_parameters(
    http: httpx.Client, fresh_scope: str, content_type: str
) -> None:
    body = json.dumps({"scope_id": fresh_scope, "query": "anything"}).encode()
    response = http.post("/v1/context/prepare", content=body, headers={"Content-Type": content_type})
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "empty"


@pytest.mark.parametrize(
    "content_type",
    ["text/json", "application/jsonx", "application/json; charset=latin-1", "multipart/form-data"],
)
def test_a_non_json_content_type_is_415(http: httpx.Client, content_type: str) -> None:
    response = http.post("/v1/scopes", content=b'{"scope_id":"a"}', headers={"Content-Type": content_type})
    error = error_of(response, 415, "unsupported_media_type")
    assert error["details"] == {"supported": ["application/json"]}


def test_content_type_case_does_not_bypass_access(start_server: StartServer) -> None:
    server = start_server(POWERCONTEXT_SERVER_AUTH_TOKEN="hostile-token")
    body = json.dumps({"scope_id": "project:x", "query": "q"}).encode()
    headers = {"Content-Type": "APPLICATION/JSON"}
    response = httpx.post(server.base_url + "/v1/context/prepare", content=body, headers=headers)
    error_of(response, 401, "unauthorized")
    headers["Authorization"] = "Bearer hostile-token"
    response = httpx.post(server.base_url + "/v1/context/prepare", content=body, headers=headers)
    error_of(response, 404, "scope_not_found")
