"""The server against its own contract: schemathesis fuzzes every operation in process (ASGI).

Valid and invalid requests alike must never produce a 5xx, and every response must use a declared
status code, content type, headers and body schema; invalid requests must be rejected with a 4xx.
The app runs over a real store on each backend (SQLite in a temporary directory, then OceanBase
seekdb). Random Scope ids almost never exist, so every other valid case is aimed at a seeded Scope
(and its real citations) to reach the success paths too.

How many cases and which seed come from the environment (`tests/contract/conftest.py`): `make test`
runs a small fixed-seed sample, `make fuzz` at least 10,000 cases per backend; either prints the
number of cases it ran and of 5xx answers per backend at the end.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from pydantic import ValidationError
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.core import NOT_SET
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from powercontext_api import models
from powercontext_api.operations import BY_ID, Operation
from powercontext_runtime import Settings, open_application
from powercontext_server.app import create_app, default_spec_path

from ..conftest import BACKENDS, database_env
from .conftest import FUZZ, FuzzTally

MAX_EXAMPLES = FUZZ.examples
SEEDED_SCOPE = "project:contract"
SEEDED_TEXTS = ["alpha beta gamma", "the quick brown fox", "ünïcödé text 記憶 😀", "x " * 3000]

# The seed is always explicit (a fixed one unless asked otherwise) and no example database is read,
# so a run depends on its seed and size alone.
CONFIG = f"""
seed = {FUZZ.seed}

[warnings]
fail-on = true

[generation]
mode = "all"
max-examples = {MAX_EXAMPLES}
database = "none"
"""

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
TOKEN = "contract-test-token"
INTEGER = re.compile(r"-?[0-9]{1,30}")
AUTH = {"Authorization": f"Bearer {TOKEN}"}

schema = schemathesis.openapi.from_path(default_spec_path(), config=SchemathesisConfig.from_str(CONFIG))


@schemathesis.serializer("application/x-ndjson")
def json_lines(ctx: Any, value: Any) -> bytes:
    """An import's body: the generated line (or each of a generated list) as one JSON line."""
    if isinstance(value, bytes):
        return value
    lines = value if isinstance(value, list) else [value]
    return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)


class Seeded:
    def __init__(self, backend: str, citations: list[dict[str, Any]]) -> None:
        self.backend = backend
        self.citations = citations
        self._turn = itertools.count()

    def aim(self, case: Any) -> None:
        """Point every other positive case at the seeded Scope, keeping the generated rest.

        Never an erasing operation: the seeded data must outlive every case, whatever their order.
        """
        turn = next(self._turn)
        if case.meta is None or not case.meta.generation.mode.is_positive or turn % 2:
            return
        if case.operation.definition.raw.get("x-powercontext-access") == "scope.erase":
            return
        if "scope_id" in case.path_parameters:
            case.path_parameters["scope_id"] = SEEDED_SCOPE
        if isinstance(case.body, dict) and "scope_id" in case.body:
            case.body["scope_id"] = SEEDED_SCOPE
            if "citation" in case.body:
                case.body["citation"] = self.citations[turn // 2 % len(self.citations)]


@pytest.fixture(scope="module", params=BACKENDS)
def asgi_app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Any, Seeded]]:
    data_dir = tmp_path_factory.mktemp("contract-data")
    # Authentication on: every protected operation needs the bearer token (checked after each case).
    server_settings = Settings.from_env(
        {
            "POWERCONTEXT_SERVER_DATA_DIR": str(data_dir),
            "POWERCONTEXT_SERVER_AUTH_TOKEN": TOKEN,
            **database_env(request, str(request.param)),
        }
    )
    application = open_application(server_settings)
    application.create_scope(models.ScopeCreateRequest(scope_id=SEEDED_SCOPE, title="Contract"))
    citations = [
        application.remember(models.RememberRequest(scope_id=SEEDED_SCOPE, text=t)).citation.model_dump(
            mode="json"
        )
        for t in SEEDED_TEXTS
    ]
    # Every family has committed data, so fuzzed assembly requests reach rendering and budgeting.
    for proposal in (
        application.propose_experience(
            models.ProposeExperienceRequest(
                scope_id=SEEDED_SCOPE, situation="alpha", action="beta", outcome="gamma", lesson="x"
            )
        ),
        application.propose_profile(models.ProposeProfileRequest(scope_id=SEEDED_SCOPE, content="# Me\n")),
    ):
        application.approve_candidate(
            models.CandidateDecisionRequest(
                scope_id=SEEDED_SCOPE, candidate_id=proposal.candidate_id, expected_version=1
            )
        )
    application.put_topic(
        models.PutTopicRequest(scope_id=SEEDED_SCOPE, title="alpha", summary="beta", detail="gamma")
    )
    yield create_app(application), Seeded(str(request.param), citations)
    application.close()


# The rules a schema cannot state: the only 422s a body the generated model accepts may get.
# Each has its own test: duplicate_family and too_many_entries in tests/api/test_prepare_assembly.py,
# reference_self and cursor_invalid in tests/server/test_http_errors.py, reference_not_found in
# tests/api/test_scopes.py, expires_at (a date the pattern lets through that does not exist, such
# as 30 February) in tests/api/test_memory_expiry.py.
SEMANTIC_RULES = frozenset(
    {
        "duplicate_family",
        "too_many_entries",
        "reference_self",
        "reference_not_found",
        "cursor_invalid",
        "expires_at",
    }
)


def model_accepts(operation: Operation[Any], case: Any) -> tuple[bool, bool]:
    """(parameters valid, body valid) by the generated models alone, as a direct Runtime caller sees them."""
    parameters_ok = True
    if operation.parameters_model is not None:
        data: dict[str, Any] = {}
        for parameter in operation.parameters:
            source = case.path_parameters if parameter.location == "path" else (case.query or {})
            if parameter.name in source:
                value = source[parameter.name]
                text = value if isinstance(value, str) else json.dumps(value)
                if parameter.location == "path":
                    text = unquote(text)  # schemathesis holds path values percent-encoded, as sent
                data[parameter.name] = int(text) if parameter.integer and INTEGER.fullmatch(text) else text
        # A query parameter whose value is an empty list is not sent at all.
        sent = {name for name, value in (case.query or {}).items() if value != []}
        unknown = sent - {p.name for p in operation.parameters}
        parameters_ok = not unknown and _valid(lambda: operation.parameters_model.model_validate(data))
    body_ok = True
    if operation.body_model is not None:
        if case.body is NOT_SET:
            raw = b""
        elif isinstance(case.body, bytes):
            raw = case.body
        else:
            raw = json.dumps(case.body, ensure_ascii=False).encode()
        body_ok = bool(raw.strip()) and _valid(lambda: operation.body_model.model_validate_json(raw))
    return parameters_ok, body_ok


def _valid(validate: Any) -> bool:
    try:
        validate()
    except ValidationError:
        return False
    return True


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_every_operation_honours_the_contract(
    case: Any, asgi_app: tuple[Any, Seeded], fuzz_tally: FuzzTally
) -> None:
    app, seeded = asgi_app
    seeded.aim(case)
    tally = fuzz_tally.backend(seeded.backend)
    if case.meta is None:
        tally.case(case.operation.label, "unknown", "unknown")
    else:
        tally.case(case.operation.label, str(case.meta.generation.mode), str(case.meta.phase.name))
    # call_and_validate, with the status counted before the checks can stop the case.
    response = case.call(app=app, headers=AUTH)
    tally.response(response.status_code)
    case.validate_response(
        response, checks=CHECKS, headers=AUTH, transport_kwargs={"app": app, "headers": AUTH}
    )
    # Drift: the server refuses exactly what the generated models refuse, plus the semantic rules.
    operation = BY_ID[case.operation.definition.raw["operationId"]]
    parameters_ok, body_ok = model_accepts(operation, case)
    # (A case whose own headers replace the token is refused before validation: 401 says nothing.)
    if (
        case.method.upper() == operation.method
        and (case.media_type or "application/json") == "application/json"
        and response.status_code != 401
    ):
        if not parameters_ok:
            # An unroutable path parameter (an encoded "/") is a 404 before any validation.
            assert response.status_code in (404, 422), (case.operation.label, response.status_code)
        elif not body_ok:
            assert response.status_code == 422, (case.operation.label, response.status_code, response.text)
        elif response.status_code == 422:
            types = {e["type"] for e in response.json()["error"]["details"]["errors"]}
            assert types <= SEMANTIC_RULES, (case.operation.label, types)
    # Authentication is enforced: the same request without the token is refused before anything else.
    # (Positive cases only: a negative case may use another method, which routing refuses first.)
    positive = case.meta is not None and case.meta.generation.mode.is_positive
    if positive and case.operation.definition.raw.get("x-powercontext-access") != "public":
        anonymous = case.call(app=app)
        tally.response(anonymous.status_code)
        assert anonymous.status_code == 401, (
            case.operation.label,
            case.path_parameters,
            anonymous.status_code,
        )
