"""`/openapi.json` and `/openapi.yaml`: the served contract, rendered once when the app is built.

connexion renders the spec on every request, on the event loop (about 0.25 s of CPU for the YAML),
and these paths need no credential, so a few callers could hold every other request. The served
contract never changes while the process runs, so its bytes are made once and sent as they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from connexion.jsonifier import Jsonifier
from connexion.spec import Specification, canonical_base_path
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

JSON_PATH = "/openapi.json"
YAML_PATH = "/openapi.yaml"


# Characters after which YAML must break a line: a string holding one is written as a block.
_LINE_BREAKS = frozenset("\n\r\x1c\x1d\x1e\x85\u2028\u2029")


class _ContractDumper(yaml.CSafeDumper):
    """connexion's YAML form of a contract (no anchors for repeated parts, a string that spans
    lines as a `|` block), written by libyaml: connexion's pure-Python dumper took about a second
    of CPU per app built, most of a server's or a test's start."""

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def represent_scalar(self, tag: str, value: str, style: str | None = None) -> yaml.ScalarNode:
        block = "|" if not _LINE_BREAKS.isdisjoint(value) else self.default_style
        return super().represent_scalar(tag, value, block)


def load_contract(path: Path) -> dict[str, Any]:
    """The contract file as a dict (libyaml's loader; the file is checked by `make spec-check`
    and the contract tests, not at every start)."""
    loaded: dict[str, Any] = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    return loaded


def rendered_contract(spec: Specification) -> tuple[bytes, bytes]:
    """(JSON, YAML) of the contract as connexion would serve it at the root path: its `$ref`s
    resolved and the root as its one server (what `spec.with_base_path("")` gives, without
    another check of the whole contract)."""
    served = {**spec.spec, "servers": [{"url": canonical_base_path("")}]}
    as_yaml = yaml.dump(served, Dumper=_ContractDumper, allow_unicode=True)
    return Jsonifier().dumps(served).encode("utf-8"), as_yaml.encode("utf-8")


def contract_routes(spec: Specification) -> list[BaseRoute]:
    as_json, as_yaml = rendered_contract(spec)

    def serve(body: bytes, media_type: str) -> Any:
        async def contract(request: Request) -> Response:
            return Response(body, media_type=media_type)

        return contract

    return [
        Route(JSON_PATH, serve(as_json, "application/json"), methods=["GET"]),
        Route(YAML_PATH, serve(as_yaml, "text/yaml"), methods=["GET"]),
    ]
