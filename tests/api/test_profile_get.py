"""`POST /v1/profile/get`: a Scope's current Profile (the operation docs/contributing.md adds)."""

from __future__ import annotations

import httpx

from powercontext_api import operations
from powercontext_api.models import Profile
from powercontext_client import NotFoundError, PowerContextClient

from .helpers import new_scope, profile


def test_the_current_profile_is_the_latest_approved_snapshot(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    first = profile(http, scope_id, "# Team\nWe ship on Fridays.")
    profile(http, scope_id, "# Team v2\nWe ship daily.", approve=False)  # pending: not current
    response = http.post("/v1/profile/get", json={"scope_id": scope_id})
    assert response.status_code == 200, response.text
    assert response.json() == {
        "artifact": first["committed"],
        "content": "# Team\nWe ship on Fridays.\n",
    }


def test_a_scope_without_an_approved_profile_is_404_entry_not_found(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    response = http.post("/v1/profile/get", json={"scope_id": scope_id})
    assert (response.status_code, response.json()["error"]["code"]) == (404, "entry_not_found")
    response = http.post("/v1/profile/get", json={"scope_id": "project:no-such-scope"})
    assert (response.status_code, response.json()["error"]["code"]) == (404, "scope_not_found")


def test_the_client_reaches_it_through_the_operation_table(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    profile(http, scope_id, "# Me")
    with PowerContextClient(str(http.base_url)) as pc:
        found = pc.call(operations.GET_PROFILE, {"scope_id": scope_id})
        assert isinstance(found, Profile)
        assert (found.content, found.artifact.revision) == ("# Me\n", 1)
        try:
            pc.call(operations.GET_PROFILE, {"scope_id": new_scope(http)})
        except NotFoundError as exc:
            assert exc.code == "entry_not_found"
        else:
            raise AssertionError("no 404")
