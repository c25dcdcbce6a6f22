"""The app around the handlers: served contract, docs, capabilities, prepare's exact shape, CLI settings."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import httpx
import pytest
import yaml
from connexion.jsonifier import Jsonifier
from connexion.spec import Specification
from connexion.utils import yamldumper

from powercontext_runtime import ConfigurationError
from powercontext_server.app import default_spec_path, without_security
from powercontext_server.cli import settings_from
from powercontext_server.contract_routes import load_contract, rendered_contract
from tests.conftest import LiveServer, settings_for


def test_the_served_contract_is_the_repository_spec(http: httpx.Client) -> None:
    served = http.get("/openapi.json")
    assert served.status_code == 200
    spec = yaml.safe_load(default_spec_path().read_text(encoding="utf-8"))
    assert served.json()["paths"].keys() == spec["paths"].keys()
    assert served.json()["info"] == spec["info"]


def test_swagger_ui_is_served_at_docs(http: httpx.Client) -> None:
    response = http.get("/docs/")
    assert response.status_code == 200
    assert "swagger-ui" in response.text


def test_capabilities_state_the_prepare_contract(http: httpx.Client) -> None:
    spec = yaml.safe_load(default_spec_path().read_text(encoding="utf-8"))
    families = ["memory", "experience", "profile", "topic-memory"]
    assert http.get("/v1/capabilities").json() == {
        "api_version": spec["info"]["version"],
        "families": families,
        "prepare": {
            "legacy": True,
            "assembly": True,
            "assembly_families": families,
            "assembly_formats": ["markdown"],
            "assembly_max_entries": 8,
            "schema": "powercontext.prepared-context.v1",
            "min_max_bytes": 512,
            "max_max_bytes": 32768,
            "default_max_bytes": 8000,
        },
    }


def test_prepare_answers_exactly_four_keys_with_a_request_id(http: httpx.Client, fresh_scope: str) -> None:
    empty = http.post("/v1/context/prepare", json={"scope_id": fresh_scope, "query": "nothing"})
    assert empty.status_code == 200
    assert empty.json() == {
        "schema": "powercontext.prepared-context.v1",
        "status": "empty",
        "content": None,
        "content_bytes": 0,
    }
    assert len(empty.headers["X-PowerContext-Request-ID"]) == 32
    http.post("/v1/memory/remember", json={"scope_id": fresh_scope, "text": "otters hold hands — 🦦"})
    ready = http.post("/v1/context/prepare", json={"scope_id": fresh_scope, "query": "otters"}).json()
    assert list(ready) == ["schema", "status", "content", "content_bytes"]
    assert ready["status"] == "ready"
    assert ready["content_bytes"] == len(ready["content"].encode("utf-8"))


def _args(**flags: object) -> argparse.Namespace:
    return argparse.Namespace(**{"host": None, "port": None, "data_dir": None, **flags})


def test_serve_flags_override_the_environment() -> None:
    env = {
        "POWERCONTEXT_SERVER_HOST": "0.0.0.0",
        "POWERCONTEXT_SERVER_PORT": "9000",
        "POWERCONTEXT_SERVER_DATABASE_URL": "sqlite:///elsewhere.sqlite3",
    }
    assert settings_from(_args(), env)[1].port == 9000
    settings, http = settings_from(_args(host="127.0.0.2", port=8123, data_dir="/srv/pc"), env)
    assert (http.host, http.port) == ("127.0.0.2", 8123)
    assert settings.database_url == "sqlite:////srv/pc/powercontext.sqlite3"


@pytest.mark.parametrize("port", [0, 65536])
def test_serve_rejects_an_impossible_port(port: int) -> None:
    with pytest.raises(ConfigurationError):
        settings_from(_args(port=port), {})


def test_the_contract_is_rendered_once_not_per_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spec paths need no credential: rendering the 300 kB contract per request would let
    anyone spend the server's CPU. Count the serialisations a request makes once the app is up."""
    server = LiveServer(settings_for(tmp_path))
    server.start()
    renders: list[str] = []
    real_yaml_dump, real_json_dumps = yaml.dump, json.dumps
    monkeypatch.setattr(yaml, "dump", lambda *a, **k: renders.append("yaml") or real_yaml_dump(*a, **k))
    monkeypatch.setattr(json, "dumps", lambda *a, **k: renders.append("json") or real_json_dumps(*a, **k))
    try:
        with httpx.Client(base_url=server.base_url) as client:
            yamls = [client.get("/openapi.yaml") for _ in range(3)]
            jsons = [client.get("/openapi.json") for _ in range(3)]
    finally:
        monkeypatch.undo()
        server.stop()
    assert renders == []
    # libyaml's loader (the same data as yaml.safe_load's, in a tenth of the time of its
    # pure-Python one: 0.7 s per 300 kB contract).
    spec = yaml.load(default_spec_path().read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    assert all(r.status_code == 200 for r in [*yamls, *jsons])
    assert all(r.headers["content-type"].startswith("text/yaml") for r in yamls)
    assert all(r.headers["content-type"] == "application/json" for r in jsons)
    served = jsons[0].json()
    assert all(r.json() == served for r in jsons)
    assert all(yaml.load(r.content, Loader=yaml.CSafeLoader) == served for r in yamls)
    assert served["info"] == spec["info"] and served["paths"].keys() == spec["paths"].keys()
    assert "security" not in served  # access is disabled on this server


@pytest.mark.parametrize("enforced", [False, True])
def test_the_served_contract_is_byte_for_byte_what_connexion_renders(enforced: bool) -> None:
    """The contract is loaded, checked and written once per app, by libyaml; the bytes served are
    those connexion's own loading and pure-Python dumper give."""
    path = default_spec_path()
    raw = Specification.load(path).raw
    assert load_contract(path) == raw
    served = raw if enforced else without_security(raw)
    theirs = Specification.from_dict(served).with_base_path("").spec
    as_json, as_yaml = rendered_contract(Specification.from_dict(served))
    assert as_json == Jsonifier().dumps(theirs).encode("utf-8")
    assert as_yaml == yamldumper(theirs).encode("utf-8")
