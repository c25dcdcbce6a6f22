"""Imports flow one way: server -> runtime -> generated, client -> generated (docs/contributing.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HTTP_LIBRARIES = ("starlette", "connexion", "uvicorn", "httpx", "powercontext_server")


def imported_by(module: str) -> set[str]:
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return {name.split(".")[0] for name in json.loads(out)}


def test_the_runtime_imports_no_http_code() -> None:
    loaded = imported_by("powercontext_runtime.application")
    assert not loaded & set(HTTP_LIBRARIES)


@pytest.mark.parametrize("module", ["powercontext_client", "powercontext_client.cli"])
def test_the_client_imports_neither_runtime_nor_server(module: str) -> None:
    loaded = imported_by(module)
    assert not loaded & {"powercontext_runtime", "powercontext_server", "starlette", "connexion"}
