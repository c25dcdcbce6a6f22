"""`/openapi.json` and `/openapi.yaml`: the served contract, rendered once when the app is built.

connexion renders the spec on every request, on the event loop (about 0.25 s of CPU for the YAML),
and these paths need no credential, so a few callers could hold every other request. The served
contract never changes while the process runs, so its bytes are made once and sent as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connexion.jsonifier import Jsonifier
from connexion.spec import Specification
from connexion.utils import yamldumper
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

JSON_PATH = "/openapi.json"
YAML_PATH = "/openapi.yaml"


def rendered_contract(served: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """(JSON, YAML) of the contract as connexion would serve it at the root path."""
    spec = Specification.from_dict(dict(served)).with_base_path("").spec
    return Jsonifier().dumps(spec).encode("utf-8"), yamldumper(spec).encode("utf-8")


def contract_routes(served: Mapping[str, Any]) -> list[BaseRoute]:
    as_json, as_yaml = rendered_contract(served)

    def serve(body: bytes, media_type: str) -> Any:
        async def contract(request: Request) -> Response:
            return Response(body, media_type=media_type)

        return contract

    return [
        Route(JSON_PATH, serve(as_json, "application/json"), methods=["GET"]),
        Route(YAML_PATH, serve(as_yaml, "text/yaml"), methods=["GET"]),
    ]
