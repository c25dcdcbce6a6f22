"""Authentication, per-Scope grants and Context References that leak nothing (RFC A6, step 2).

A private server runs with an auth file. Scope `project:a` references `project:b` and `team:c`;
every Scope holds planted marker strings in every family. The matrix drives principals × Scopes ×
operations through HTTP and searches the raw response bytes of every refusal for the markers.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from powercontext_runtime import token_digest

from ..conftest import BACKENDS

SCOPES = ("project:a", "project:b", "team:c")
FAMILY_MARK = {"memory": "MEM", "experience": "EXP", "profile": "PRO", "topic-memory": "TOP"}
FORBIDDEN = {
    "error": {
        "code": "forbidden",
        "message": "The Principal is not authorized for this operation.",
        "details": None,
    }
}
UNAUTHORIZED = {
    "error": {"code": "unauthorized", "message": "A valid credential is required.", "details": None}
}

# name -> grants as (actions, scopes)
PRINCIPALS: dict[str, list[tuple[list[str], list[str]]]] = {
    "admin": [(["scope.read", "scope.write", "scope.review", "server.admin"], ["*"])],
    "writer": [(["scope.read", "scope.write"], ["project:*"])],
    "reviewer": [(["scope.read", "scope.review"], ["project:*"])],
    "limited": [(["scope.read"], ["project:a", "project:b"])],
    "projadmin": [(["server.admin", "scope.read"], ["project:*"])],
    "nogrant": [],
}


def marker(scope_id: str, family: str) -> str:
    return f"MARK-{scope_id.split(':')[1].upper()}-{FAMILY_MARK[family]}"


def may(principal: str, action: str, scope_id: str) -> bool:
    for actions, patterns in PRINCIPALS[principal]:
        if action in actions and any(
            p == scope_id or (p.endswith("*") and scope_id.startswith(p[:-1])) for p in patterns
        ):
            return True
    return False


@dataclass
class World:
    base_url: str
    tokens: dict[str, str]
    citations: dict[str, dict[str, Any]]
    artifacts: dict[str, dict[str, Any]]

    def client(self, principal: str | None) -> httpx.Client:
        headers = {} if principal is None else {"Authorization": f"Bearer {self.tokens[principal]}"}
        return httpx.Client(base_url=self.base_url, headers=headers)


def write_auth_file(path: Path, tokens: dict[str, str]) -> None:
    lines = []
    for name, grants in PRINCIPALS.items():
        lines += ["[[principal]]", f'name = "{name}"', f'token_sha256 = "{token_digest(tokens[name])}"']
        rendered = ", ".join(
            "{ actions = ["
            + ", ".join(f'"{a}"' for a in actions)
            + "], scopes = ["
            + ", ".join(f'"{s}"' for s in scopes)
            + "] }"
            for actions, scopes in grants
        )
        lines += [f"grants = [{rendered}]", ""]
    path.write_text("\n".join(lines), encoding="utf-8")


@pytest.fixture(scope="module", params=BACKENDS)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    from ..conftest import LiveServer, database_env, settings_for

    root = tmp_path_factory.mktemp("access")
    tokens = {name: f"token-{name}-{i}-secret" for i, name in enumerate(PRINCIPALS)}
    write_auth_file(root / "auth.toml", tokens)
    env = database_env(request, str(request.param))
    server = LiveServer(
        settings_for(root / "data", POWERCONTEXT_SERVER_AUTH_FILE=str(root / "auth.toml"), **env)
    )
    server.start()
    w = World(server.base_url, tokens, {}, {})
    with w.client("admin") as admin:
        for scope_id in reversed(SCOPES):
            refs = ["project:b", "team:c"] if scope_id == "project:a" else []
            assert (
                admin.post("/v1/scopes", json={"scope_id": scope_id, "context_references": refs}).status_code
                == 201
            )
            text = f"shared word {marker(scope_id, 'memory')}"
            w.citations[scope_id] = admin.post(
                "/v1/memory/remember", json={"scope_id": scope_id, "text": text}
            ).json()["citation"]
            proposed = admin.post(
                "/v1/experience/propose",
                json={
                    "scope_id": scope_id,
                    "situation": "shared word",
                    "action": marker(scope_id, "experience"),
                    "outcome": "o",
                    "lesson": "l",
                },
            ).json()
            w.artifacts[scope_id] = admin.post(
                "/v1/candidates/approve",
                json={"scope_id": scope_id, "candidate_id": proposed["candidate_id"], "expected_version": 1},
            ).json()["committed"]
            prof = admin.post(
                "/v1/profile/propose", json={"scope_id": scope_id, "content": marker(scope_id, "profile")}
            ).json()
            admin.post(
                "/v1/candidates/approve",
                json={"scope_id": scope_id, "candidate_id": prof["candidate_id"], "expected_version": 1},
            )
            admin.post(
                "/v1/topic-memory/put",
                json={
                    "scope_id": scope_id,
                    "title": "shared word",
                    "summary": marker(scope_id, "topic-memory"),
                },
            )
    yield w
    server.stop()


# Operations: (name, action, request builder for a target Scope)
Request = Callable[[World, str], tuple[str, str, dict[str, Any] | None]]
OPERATIONS: list[tuple[str, str, Request]] = [
    ("get_scope", "scope.read", lambda w, s: ("GET", f"/v1/scopes/{s}", None)),
    (
        "search_memory",
        "scope.read",
        lambda w, s: ("POST", "/v1/memory/search", {"scope_id": s, "query": "shared word"}),
    ),
    ("list_memory", "scope.read", lambda w, s: ("POST", "/v1/memory/entries/list", {"scope_id": s})),
    (
        "get_memory_entry",
        "scope.read",
        lambda w, s: ("POST", "/v1/memory/entries/get", {"scope_id": s, "citation": w.citations[s]}),
    ),
    (
        "search_experience",
        "scope.read",
        lambda w, s: ("POST", "/v1/experience/search", {"scope_id": s, "query": "shared"}),
    ),
    (
        "search_topics",
        "scope.read",
        lambda w, s: ("POST", "/v1/topic-memory/search", {"scope_id": s, "query": "shared"}),
    ),
    ("list_candidates", "scope.read", lambda w, s: ("POST", "/v1/candidates/list", {"scope_id": s})),
    (
        "explain_prepare_context",
        "scope.read",
        # Topic Memory reads the target Scope alone; which references a prepare reads is tested below.
        lambda w, s: (
            "POST",
            "/v1/context/prepare/explain",
            {
                "scope_id": s,
                "query": "shared",
                "assembly": {"sections": [{"family": "topic-memory", "limit": 1}]},
            },
        ),
    ),
    ("get_profile", "scope.read", lambda w, s: ("POST", "/v1/profile/get", {"scope_id": s})),
    ("get_scope_grants", "scope.read", lambda w, s: ("GET", f"/v1/scopes/{s}/grants", None)),
    (
        "exact_read",
        "scope.read",
        lambda w, s: (
            "GET",
            f"/v1/scopes/{s}/artifacts/experience/{w.artifacts[s]['artifact_id']}/revisions/1",
            None,
        ),
    ),
    (
        "remember",
        "scope.write",
        lambda w, s: ("POST", "/v1/memory/remember", {"scope_id": s, "text": "new note"}),
    ),
    (
        "remember_batch",
        "scope.write",
        lambda w, s: ("POST", "/v1/memory/remember/batch", {"scope_id": s, "entries": [{"text": "a"}]}),
    ),
    (
        "put_topic",
        "scope.write",
        lambda w, s: ("POST", "/v1/topic-memory/put", {"scope_id": s, "title": "t", "summary": "s"}),
    ),
    (
        "propose_profile",
        "scope.write",
        lambda w, s: ("POST", "/v1/profile/propose", {"scope_id": s, "content": "p"}),
    ),
    (
        "approve_stale",
        "scope.review",
        lambda w, s: (
            "POST",
            "/v1/candidates/approve",
            {"scope_id": s, "candidate_id": "candidate-1", "expected_version": 1},
        ),
    ),
    (
        "update_title",
        "scope.write",
        lambda w, s: ("PUT", f"/v1/scopes/{s}", {"expected_version": 99, "title": "x"}),
    ),
    # No principal here holds scope.erase, not even the one with every other action: both are 403.
    (
        "erase_memory_entry",
        "scope.erase",
        lambda w, s: ("POST", "/v1/memory/entries/erase", {"scope_id": s, "entry_id": "entry-1"}),
    ),
    ("delete_scope", "scope.erase", lambda w, s: ("DELETE", f"/v1/scopes/{s}", None)),
    # Nor scope.export: an export is granted on purpose (import, server.admin: test_scope_transfer_http).
    ("export_scope", "scope.export", lambda w, s: ("GET", f"/v1/scopes/{s}/export", None)),
    (
        "create_scope",
        "server.admin",
        lambda w, s: ("POST", "/v1/scopes", {"scope_id": s.split(":")[0] + ":new-one"}),
    ),
]


def send(client: httpx.Client, method: str, path: str, body: dict[str, Any] | None) -> httpx.Response:
    return client.request(method, path, json=body) if body is not None else client.request(method, path)


def assert_no_markers(response: httpx.Response, scope_id: str) -> None:
    for family in FAMILY_MARK:
        assert marker(scope_id, family).encode() not in response.content


@pytest.mark.parametrize(("principal", "scope_id"), list(itertools.product(PRINCIPALS, SCOPES)))
def test_every_operation_is_allowed_exactly_when_granted(world: World, principal: str, scope_id: str) -> None:
    with world.client(principal) as client:
        for name, action, build in OPERATIONS:
            method, path, body = build(world, scope_id)
            response = send(client, method, path, body)
            if may(principal, action, scope_id):
                assert response.status_code not in (401, 403) and response.status_code < 500, (
                    name,
                    response.text,
                )
            else:
                assert (response.status_code, response.json()) == (403, FORBIDDEN), name
                for other in SCOPES:
                    assert_no_markers(response, other)


@pytest.mark.parametrize("credential", [None, "wrong-token"])
def test_missing_or_bad_token_is_401_with_bearer_challenge(world: World, credential: str | None) -> None:
    headers = {} if credential is None else {"Authorization": f"Bearer {credential}"}
    with httpx.Client(base_url=world.base_url, headers=headers) as client:
        for _, _, build in OPERATIONS:
            method, path, body = build(world, "project:a")
            response = send(client, method, path, body)
            assert response.status_code == 401 and response.json() == UNAUTHORIZED
            assert response.headers["WWW-Authenticate"] == "Bearer"
            assert_no_markers(response, "project:a")
        assert client.get("/health/live").status_code == 200
        assert client.get("/v1/capabilities").status_code == 200


def prepare(
    client: httpx.Client, sections: list[dict[str, Any]] | None, path: str = "/v1/context/prepare"
) -> httpx.Response:
    body: dict[str, Any] = {"scope_id": "project:a", "query": "shared word", "max_bytes": 32768}
    if sections is not None:
        body["assembly"] = {"sections": sections, "show": ["recall_rank"]}
    return client.post(path, json=body)


MODES: dict[str, list[dict[str, Any]] | None] = {
    "legacy": None,
    "memory": [{"family": "memory", "limit": 8}],
    "experience": [{"family": "experience", "limit": 2}],
    "profile": [{"family": "profile", "limit": 3}],
    "topic-memory": [{"family": "topic-memory", "limit": 8}],
    "all": [
        {"family": "profile", "limit": 3},
        {"family": "topic-memory", "limit": 1},
        {"family": "experience", "limit": 2},
        {"family": "memory", "limit": 2},
    ],
    "none": [],
}
READS_REFERENCES = {"legacy", "memory", "experience", "profile", "all"}


@pytest.mark.parametrize("path", ["/v1/context/prepare", "/v1/context/prepare/explain"])
@pytest.mark.parametrize(("principal", "mode"), list(itertools.product(PRINCIPALS, MODES)))
def test_prepare_needs_read_on_every_scope_it_will_read(
    world: World, principal: str, mode: str, path: str
) -> None:
    """RFC step 2: all or nothing; Topic Memory and `sections: []` read only the current Scope.
    The explain operation reads exactly what prepare reads, so it is allowed exactly as often."""
    needed = ["project:a", *(["project:b", "team:c"] if mode in READS_REFERENCES else [])]
    with world.client(principal) as client:
        response = prepare(client, MODES[mode], path)
    if all(may(principal, "scope.read", s) for s in needed):
        assert response.status_code == 200, response.text
    else:
        assert (response.status_code, response.json()) == (403, FORBIDDEN)
        for scope_id in SCOPES:
            assert_no_markers(response, scope_id)


def test_referenced_scopes_are_read_in_order_and_cited_with_their_own_scope(world: World) -> None:
    with world.client("admin") as client:
        content = prepare(client, [{"family": "memory", "limit": 3}]).json()["content"]
    scopes = [line.split(": ", 1)[1] for line in content.split("\n") if line.startswith("    Scope:")]
    assert scopes == ['"project:a"', '"project:b"', '"team:c"']
    for scope_id in SCOPES:
        assert marker(scope_id, "memory") in content


def test_topic_memory_never_reads_references(world: World) -> None:
    with world.client("limited") as client:
        content = prepare(client, [{"family": "topic-memory", "limit": 8}]).json()["content"]
    assert marker("project:a", "topic-memory") in content
    assert (
        marker("project:b", "topic-memory") not in content and marker("team:c", "topic-memory") not in content
    )


def test_cited_exact_reads_return_the_exact_version_only_to_readers(world: World) -> None:
    with world.client("limited") as client:
        ok = client.post(
            "/v1/memory/entries/get", json={"scope_id": "project:b", "citation": world.citations["project:b"]}
        )
        assert ok.status_code == 200 and ok.json()["text"] == f"shared word {marker('project:b', 'memory')}"
        denied = client.post(
            "/v1/memory/entries/get", json={"scope_id": "team:c", "citation": world.citations["team:c"]}
        )
        assert denied.status_code == 403 and marker("team:c", "memory").encode() not in denied.content


@pytest.mark.parametrize(("principal", "scope_id"), list(itertools.product(PRINCIPALS, SCOPES)))
def test_a_reader_is_told_its_own_actions_on_a_scope(world: World, principal: str, scope_id: str) -> None:
    """`get_scope_grants` lists exactly the actions the matrix above allows; a non-reader gets 403."""
    with world.client(principal) as client:
        response = client.get(f"/v1/scopes/{scope_id}/grants")
    if not may(principal, "scope.read", scope_id):
        assert (response.status_code, response.json()) == (403, FORBIDDEN)
        return
    actions = ["scope.read", "scope.write", "scope.review", "scope.erase", "scope.export", "server.admin"]
    expected = [action for action in actions if may(principal, action, scope_id)]
    assert (response.status_code, response.json()) == (200, {"scope_id": scope_id, "actions": expected})


def test_forbidden_and_missing_scopes_look_the_same(world: World) -> None:
    """A 403 never depends on existence: an unreadable Scope and an absent one both answer 403."""
    with world.client("limited") as client:
        exists = client.get("/v1/scopes/team:c")
        absent = client.get("/v1/scopes/team:does-not-exist")
    assert (
        (exists.status_code, exists.content) == (absent.status_code, absent.content) == (403, exists.content)
    )


def test_listing_shows_only_readable_scopes(world: World) -> None:
    with world.client("limited") as client:
        listed = [s["scope_id"] for s in client.get("/v1/scopes", params={"limit": 1}).json()["scopes"]]
        page = client.get("/v1/scopes", params={"limit": 1}).json()
        rest = client.get("/v1/scopes", params={"limit": 5, "cursor": page["next_cursor"]}).json()
    assert listed == ["project:a"]
    assert [s["scope_id"] for s in rest["scopes"]] == ["project:b"] and rest["next_cursor"] is None


def test_nobody_can_reference_their_way_into_a_scope(world: World) -> None:
    """Creating or re-pointing references needs server.admin and read on every referenced Scope."""
    with world.client("projadmin") as client:
        create = client.post(
            "/v1/scopes", json={"scope_id": "project:sneaky", "context_references": ["team:c"]}
        )
        assert create.status_code == 403
        assert client.get("/v1/scopes/project:sneaky").status_code == 404
        ok = client.post("/v1/scopes", json={"scope_id": "project:fine", "context_references": ["project:b"]})
        assert ok.status_code == 201
        repoint = client.put(
            "/v1/scopes/project:fine", json={"expected_version": 1, "context_references": ["team:c"]}
        )
        assert repoint.status_code == 403
    with world.client("writer") as client:
        # scope.write changes the title but not the references.
        refs = client.put("/v1/scopes/project:fine", json={"expected_version": 1, "context_references": []})
        assert refs.status_code == 403
        title = client.put("/v1/scopes/project:fine", json={"expected_version": 1, "title": "ok"})
        assert title.status_code == 200


def test_tokens_never_reach_the_logs(world: World, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    with world.client("limited") as client:
        client.get("/v1/scopes/team:c")
        client.post("/v1/context/prepare", json={"scope_id": "project:a", "query": "shared word"})
    with httpx.Client(
        base_url=world.base_url, headers={"Authorization": "Bearer leaked-guess-123"}
    ) as client:
        client.get("/v1/scopes/project:a")
    assert caplog.records  # the access log did run
    for secret in (*world.tokens.values(), "leaked-guess-123"):
        assert secret not in caplog.text


def test_the_server_refuses_disabled_access_on_a_public_address() -> None:
    from powercontext_runtime import ConfigurationError, Settings, load_access_policy
    from powercontext_server.settings import HttpSettings

    public, loopback = HttpSettings(host="0.0.0.0"), HttpSettings(host="127.0.0.1")
    with pytest.raises(ConfigurationError):
        public.check_binding(load_access_policy(Settings(database_url="sqlite:///x", access_mode="disabled")))
    with pytest.raises(ConfigurationError):
        load_access_policy(Settings(database_url="sqlite:///x", access_mode="enforced"))
    disabled = load_access_policy(Settings(database_url="sqlite:///x"))
    assert not disabled.enforced
    loopback.check_binding(disabled)
    enforced = load_access_policy(Settings(database_url="sqlite:///x", auth_token="t"))
    assert enforced.enforced
    public.check_binding(enforced)
