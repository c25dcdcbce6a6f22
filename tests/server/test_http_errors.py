"""Every failure path of the HTTP edge, through a real server: status, error code, body shape, headers.

existing-runtime §2: every error body is exactly `{"error": {"code", "message", "details"}}`, a 422
carries pydantic-shaped `type`/`loc`/`msg` items and never the submitted values, and every response
carries `X-PowerContext-Request-ID`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from powercontext_runtime import RetrievalUnavailable

# `start_server(**env)` from tests/conftest.py: a private server with `base_url` and `application`.
StartServer = Callable[..., Any]

REQUEST_ID = "X-PowerContext-Request-ID"
INVALID = "The request violates the API contract."
JSON = {"Content-Type": "application/json"}


def error_of(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Assert the exact error envelope and return its `error` object."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert len(response.headers[REQUEST_ID]) == 32
    body = response.json()
    assert list(body) == ["error"]
    assert list(body["error"]) == ["code", "message", "details"]
    assert body["error"]["code"] == code
    error: dict[str, Any] = body["error"]
    return error


def invalid_items(response: httpx.Response) -> list[dict[str, Any]]:
    error = error_of(response, 422, "invalid_request")
    assert error["message"] == INVALID
    assert list(error["details"]) == ["errors"]
    items: list[dict[str, Any]] = error["details"]["errors"]
    assert items
    for item in items:
        assert list(item) == ["type", "loc", "msg"]
    return items


def pairs(items: list[dict[str, Any]]) -> list[tuple[str, list[Any]]]:
    return [(item["type"], item["loc"]) for item in items]


# Request id ---------------------------------------------------------------------------------------
def test_every_response_carries_a_fresh_request_id(http: httpx.Client) -> None:
    responses = [
        http.get("/health/live"),
        http.get("/v1/capabilities"),
        http.get("/openapi.json"),
        http.get("/nowhere"),
        http.delete("/v1/capabilities"),
        http.post("/v1/scopes", json={}),
        http.post("/v1/scopes", content=b"{}", headers={"Content-Type": "text/plain"}),
    ]
    ids = [r.headers[REQUEST_ID] for r in responses]
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    assert len(set(ids)) == len(ids)


def test_an_incoming_request_id_is_not_echoed(http: httpx.Client) -> None:
    response = http.get("/health/live", headers={REQUEST_ID: "caller-chosen"})
    assert response.headers[REQUEST_ID] != "caller-chosen"


# 422 from structural validation -------------------------------------------------------------------
def test_malformed_json_is_422_invalid_request(http: httpx.Client) -> None:
    response = http.post("/v1/scopes", content=b'{"scope_id": "a",', headers=JSON)
    assert pairs(invalid_items(response)) == [("json_invalid", ["body"])]


def test_body_that_is_not_utf8_is_422_json_invalid(http: httpx.Client) -> None:
    response = http.post("/v1/scopes", content=b'{"scope_id": "\xff\xfe"}', headers=JSON)
    assert pairs(invalid_items(response)) == [("json_invalid", ["body"])]


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
def test_non_json_number_constants_are_422_json_invalid(http: httpx.Client, constant: bytes) -> None:
    response = http.post(
        "/v1/context/prepare",
        content=b'{"scope_id":"a","query":"q","max_bytes":' + constant + b"}",
        headers=JSON,
    )
    assert pairs(invalid_items(response)) == [("json_invalid", ["body"])]


def test_deeply_nested_json_is_422_not_500(http: httpx.Client) -> None:
    response = http.post("/v1/scopes", content=b"[" * 100_000 + b"]" * 100_000, headers=JSON)
    assert response.status_code == 422


def test_lone_surrogate_in_a_string_is_422_string_unicode(http: httpx.Client) -> None:
    response = http.post("/v1/scopes", content=b'{"scope_id": "a\\ud800b"}', headers=JSON)
    assert pairs(invalid_items(response)) == [("string_unicode", ["body", "scope_id"])]


def test_empty_body_is_422_missing(http: httpx.Client) -> None:
    response = http.post("/v1/scopes", content=b"", headers=JSON)
    assert pairs(invalid_items(response)) == [("missing", ["body"])]


@pytest.mark.parametrize("body", [b"null", b"[]", b'"text"', b"7"])
def test_body_that_is_not_an_object_is_422_dict_type(http: httpx.Client, body: bytes) -> None:
    response = http.post("/v1/scopes", content=body, headers=JSON)
    assert pairs(invalid_items(response)) == [("dict_type", ["body"])]


def test_missing_required_field_is_422_missing(http: httpx.Client) -> None:
    response = http.post("/v1/context/prepare", json={"scope_id": "project:x"})
    assert invalid_items(response) == [{"type": "missing", "loc": ["body", "query"], "msg": "Field required"}]


def test_unknown_field_is_422_extra_forbidden_at_the_object(http: httpx.Client) -> None:
    response = http.post("/v1/context/prepare", json={"scope_id": "a", "query": "q", "sort_by": "score"})
    assert invalid_items(response) == [
        {"type": "extra_forbidden", "loc": ["body"], "msg": "Extra inputs are not permitted"}
    ]


def test_assembly_null_is_422_dict_type(http: httpx.Client) -> None:
    response = http.post("/v1/context/prepare", json={"scope_id": "a", "query": "q", "assembly": None})
    assert invalid_items(response) == [
        {"type": "dict_type", "loc": ["body", "assembly"], "msg": "Input should be a valid dictionary"}
    ]


def test_422_body_never_contains_submitted_values(http: httpx.Client) -> None:
    marker = "MARKER-7f3e9c-secret"
    response = http.post(
        "/v1/context/prepare",
        json={"scope_id": "project:x", "query": "Z" * 8193, marker: marker, "max_bytes": "9" * 30},
    )
    items = invalid_items(response)
    assert ("string_too_long", ["body", "query"]) in pairs(items)
    assert ("extra_forbidden", ["body"]) in pairs(items)
    assert ("int_type", ["body", "max_bytes"]) in pairs(items)
    assert b"ZZZZ" not in response.content
    assert marker.encode() not in response.content
    assert b"9" * 30 not in response.content


def test_string_too_long_reports_the_limit_not_the_value(http: httpx.Client) -> None:
    response = http.post("/v1/context/prepare", json={"scope_id": "a", "query": "Z" * 8193})
    assert invalid_items(response) == [
        {
            "type": "string_too_long",
            "loc": ["body", "query"],
            "msg": "String should have at most 8192 characters",
        }
    ]


@pytest.mark.parametrize("value", [True, 1024.5, "1024", None])
def test_wrongly_typed_integer_is_422_int_type_only(http: httpx.Client, value: object) -> None:
    response = http.post("/v1/context/prepare", json={"scope_id": "a", "query": "q", "max_bytes": value})
    assert pairs(invalid_items(response)) == [("int_type", ["body", "max_bytes"])]


@pytest.mark.parametrize(("value", "kind"), [(511, "greater_than_equal"), (32769, "less_than_equal")])
def test_integer_out_of_range_is_422_with_the_bound(http: httpx.Client, value: int, kind: str) -> None:
    response = http.post("/v1/context/prepare", json={"scope_id": "a", "query": "q", "max_bytes": value})
    assert pairs(invalid_items(response)) == [(kind, ["body", "max_bytes"])]


def test_whitespace_only_text_is_422_pattern_mismatch(http: httpx.Client) -> None:
    response = http.post("/v1/context/prepare", json={"scope_id": "a", "query": " \t\u3000"})
    assert pairs(invalid_items(response)) == [("string_pattern_mismatch", ["body", "query"])]


def test_nested_citation_errors_are_located_on_the_wire_shape(http: httpx.Client) -> None:
    citation = {
        "memory_ref": {"family": "profile", "artifact_id": "memory", "revision": 0},
        "entry_id": "",
        "entry_version_id": "v",
    }
    response = http.post("/v1/memory/entries/get", json={"scope_id": "a", "citation": citation})
    assert sorted(pairs(invalid_items(response))) == [
        ("greater_than_equal", ["body", "citation", "memory_ref", "revision"]),
        ("literal_error", ["body", "citation", "memory_ref", "family"]),
        ("string_too_short", ["body", "citation", "entry_id"]),
    ]


def test_bad_query_parameter_is_422_located_in_query(http: httpx.Client) -> None:
    for raw, kind in [
        ("abc", "int_type"),
        ("5_0", "int_type"),
        ("0", "greater_than_equal"),
        ("201", "less_than_equal"),
    ]:
        response = http.get("/v1/scopes", params={"limit": raw})
        assert pairs(invalid_items(response)) == [(kind, ["query", "limit"])], raw


def test_unknown_query_parameter_is_422_without_its_name(http: httpx.Client) -> None:
    response = http.get("/v1/scopes", params={"MARKER-q": "MARKER-v"})
    assert pairs(invalid_items(response)) == [("extra_forbidden", ["query"])]
    assert b"MARKER" not in response.content


def test_bad_path_parameter_is_422_located_in_path(http: httpx.Client) -> None:
    response = http.get("/v1/scopes/%20%20")
    assert pairs(invalid_items(response)) == [("string_pattern_mismatch", ["path", "scope_id"])]
    response = http.get("/v1/scopes/" + "s" * 257)
    assert pairs(invalid_items(response)) == [("string_too_long", ["path", "scope_id"])]


# 422 from the Runtime's own rules -----------------------------------------------------------------
def test_runtime_rule_violation_is_422_located_in_the_body(http: httpx.Client, fresh_scope: str) -> None:
    response = http.post(
        "/v1/scopes", json={"scope_id": "project:self", "context_references": ["project:self"]}
    )
    assert invalid_items(response) == [
        {
            "type": "reference_self",
            "loc": ["body", "context_references", 0],
            "msg": "A Scope cannot reference itself.",
        }
    ]
    response = http.put(
        f"/v1/scopes/{fresh_scope}", json={"expected_version": 1, "context_references": [fresh_scope]}
    )
    assert pairs(invalid_items(response)) == [("reference_self", ["body", "context_references", 0])]


def test_foreign_cursor_is_422_located_where_it_was_sent(http: httpx.Client, fresh_scope: str) -> None:
    response = http.get("/v1/scopes", params={"cursor": "bm90LWEtY3Vyc29y"})
    assert pairs(invalid_items(response)) == [("cursor_invalid", ["query", "cursor"])]
    response = http.post(
        "/v1/memory/entries/list", json={"scope_id": fresh_scope, "cursor": "bm90LWEtY3Vyc29y"}
    )
    assert pairs(invalid_items(response)) == [("cursor_invalid", ["body", "cursor"])]


# 415, 413 -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"]
)
def test_wrong_content_type_is_415_unsupported_media_type(http: httpx.Client, content_type: str) -> None:
    response = http.post("/v1/scopes", content=b'{"scope_id":"a"}', headers={"Content-Type": content_type})
    error_of(response, 415, "unsupported_media_type")


def test_missing_content_type_is_415_unsupported_media_type(http: httpx.Client) -> None:
    response = http.post("/v1/scopes", content=b'{"scope_id":"a"}')
    assert "content-type" not in response.request.headers
    error_of(response, 415, "unsupported_media_type")


def test_body_over_the_cap_with_content_length_is_413(start_server: StartServer) -> None:
    server = start_server(POWERCONTEXT_SERVER_MAX_BODY_BYTES="1024")
    body = b'{"scope_id":"a","title":"' + b"t" * 1100 + b'"}'
    response = httpx.post(server.base_url + "/v1/scopes", content=body, headers=JSON)
    assert response.request.headers["content-length"] == str(len(body))
    error_of(response, 413, "payload_too_large")


def test_chunked_body_over_the_cap_is_413(start_server: StartServer) -> None:
    server = start_server(POWERCONTEXT_SERVER_MAX_BODY_BYTES="1024")

    def chunks() -> Iterator[bytes]:
        yield b'{"scope_id":"a","title":"'
        for _ in range(20):
            yield b"t" * 100
        yield b'"}'

    response = httpx.post(server.base_url + "/v1/scopes", content=chunks(), headers=JSON)
    assert response.request.headers["transfer-encoding"] == "chunked"
    error_of(response, 413, "payload_too_large")


def test_chunked_body_under_the_cap_is_read_whole(http: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"scope_id":"project:chunked-'
        yield b'ok","title":"in pieces"}'

    response = http.post("/v1/scopes", content=chunks(), headers=JSON)
    assert response.request.headers["transfer-encoding"] == "chunked"
    assert response.status_code in (201, 409), response.text
    assert http.get("/v1/scopes/project:chunked-ok").json()["title"] == "in pieces"


# 404, 405 -----------------------------------------------------------------------------------------
def test_unknown_route_is_404_not_found(http: httpx.Client) -> None:
    error = error_of(http.get("/v1/nothing-here"), 404, "not_found")
    assert error["details"] is None


@pytest.mark.parametrize(
    "path",
    ["/v1/scopes/", "/health/live/", "/openapi.json/", "/metrics/", "/ui/app.js/", "/v1/capabilities/"],
)
def test_a_trailing_slash_is_404_never_a_redirect_to_the_callers_host(http: httpx.Client, path: str) -> None:
    response = http.get(path, headers={"Host": "attacker.example"})
    error_of(response, 404, "not_found")
    assert "location" not in response.headers
    assert b"attacker" not in response.content


def test_wrong_method_is_405_keeping_the_allow_header(http: httpx.Client) -> None:
    response = http.patch("/v1/scopes/project:any", json={})
    error_of(response, 405, "method_not_allowed")
    assert {m.strip() for m in response.headers["allow"].split(",")} >= {"GET", "PUT", "DELETE"}
    response = http.get("/v1/context/prepare")
    error_of(response, 405, "method_not_allowed")
    assert "POST" in response.headers["allow"]


# Runtime failures ---------------------------------------------------------------------------------
def test_unknown_scope_is_404_scope_not_found(http: httpx.Client) -> None:
    response = http.post("/v1/context/prepare", json={"scope_id": "project:missing-404", "query": "q"})
    error = error_of(response, 404, "scope_not_found")
    assert error == {
        "code": "scope_not_found",
        "message": "The requested Scope was not found.",
        "details": None,
    }


def test_unknown_entry_is_404_entry_not_found(http: httpx.Client, fresh_scope: str) -> None:
    citation = {
        "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": 1},
        "entry_id": "entry-404",
        "entry_version_id": "entry-404-v1",
    }
    response = http.post("/v1/memory/entries/get", json={"scope_id": fresh_scope, "citation": citation})
    error = error_of(response, 404, "entry_not_found")
    assert error == {"code": "entry_not_found", "message": "The cited entry was not found.", "details": None}


def test_duplicate_scope_is_409_scope_exists(http: httpx.Client, fresh_scope: str) -> None:
    error = error_of(http.post("/v1/scopes", json={"scope_id": fresh_scope}), 409, "scope_exists")
    assert error["message"] == "A Scope with this id already exists."


def test_stale_version_is_409_revision_conflict(http: httpx.Client, fresh_scope: str) -> None:
    assert (
        http.put(f"/v1/scopes/{fresh_scope}", json={"expected_version": 1, "title": "a"}).status_code == 200
    )
    response = http.put(f"/v1/scopes/{fresh_scope}", json={"expected_version": 1, "title": "b"})
    error = error_of(response, 409, "revision_conflict")
    assert error["message"] and error["details"] is None


def test_storage_failure_is_503_retrieval_unavailable(
    start_server: StartServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_server()

    def unavailable(*_: object) -> None:
        raise RetrievalUnavailable()

    monkeypatch.setattr(server.application, "health_ready", unavailable)
    response = httpx.get(server.base_url + "/health/ready")
    error = error_of(response, 503, "retrieval_unavailable")
    assert error["message"] == "A configured retrieval or storage service failed."


def test_unexpected_exception_is_500_internal_error_and_logs_the_traceback(
    start_server: StartServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    server = start_server()

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("SECRET-internal-detail")

    monkeypatch.setattr(server.application, "list_scopes", broken)
    with caplog.at_level(logging.ERROR, logger="powercontext.server"):
        response = httpx.get(server.base_url + "/v1/scopes")
    error = error_of(response, 500, "internal_error")
    assert error == {"code": "internal_error", "message": "The Server failed.", "details": None}
    assert b"SECRET" not in response.content
    logged = [r for r in caplog.records if r.exc_info and r.exc_info[1] is not None]
    assert logged and "SECRET-internal-detail" in str(logged[0].exc_info[1])  # type: ignore[index]
    assert response.headers[REQUEST_ID] in logged[0].getMessage()
