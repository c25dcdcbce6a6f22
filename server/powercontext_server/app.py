"""The connexion application serving `openapi/powercontext.yaml` over a `ScopedContextApplication`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import connexion
from connexion.datastructures import MediaTypeDict
from connexion.exceptions import ProblemException
from connexion.jsonifier import Jsonifier
from connexion.middleware import ConnexionMiddleware
from connexion.middleware.server_error import ServerErrorMiddleware
from connexion.options import SwaggerUIOptions
from connexion.resolver import Resolver
from connexion.spec import Specification

from powercontext_runtime.access_config import load_access_policy
from powercontext_runtime.application import ScopedContextApplication
from powercontext_runtime.config import Settings
from powercontext_runtime.models import FAMILIES, PREPARED_SCHEMA
from powercontext_runtime.requests import DEFAULT_MAX_BYTES, MAX_MAX_BYTES, MIN_MAX_BYTES

from .access import access_by_operation, bearer_security_map, guarded, without_security
from .errors import HANDLED_EXCEPTIONS, exception_handler
from .handlers import Handlers
from .middleware import EdgeMiddleware
from .validation import JsonBodyValidator, ParameterValidator, ValidatorCache

SPEC_FILENAME = "powercontext.yaml"


def default_spec_path() -> Path:
    """The contract: shipped inside the package when built as a wheel, else the monorepo's copy."""
    packaged = Path(__file__).resolve().parent / "openapi" / SPEC_FILENAME
    if packaged.is_file():
        return packaged
    return Path(__file__).resolve().parents[2] / "openapi" / SPEC_FILENAME


def capabilities(api_version: str, settings: Settings) -> dict[str, Any]:
    return {
        "api_version": api_version,
        "families": list(FAMILIES),
        "prepare": {
            "legacy": True,
            "assembly": True,
            "assembly_families": list(FAMILIES),
            "assembly_formats": ["markdown"],
            "assembly_max_entries": settings.assembly_max_entries,
            "schema": PREPARED_SCHEMA,
            "min_max_bytes": MIN_MAX_BYTES,
            "max_max_bytes": MAX_MAX_BYTES,
            "default_max_bytes": DEFAULT_MAX_BYTES,
        },
    }


class HandlerResolver(Resolver):  # type: ignore[misc]  # connexion is untyped
    """Resolve each operationId to the bound method of the same name on `handlers`, guarded by the
    access the contract declares for it."""

    def __init__(self, handlers: Handlers, access: Mapping[str, str], enforced: bool) -> None:
        super().__init__(function_resolver=self._method)
        self._handlers = handlers
        self._access = access
        self._enforced = enforced

    def _method(self, operation_id: str) -> Any:
        method = getattr(self._handlers, operation_id, None)
        if method is None or operation_id.startswith("_"):
            raise ValueError(f"No handler for operationId {operation_id!r}")
        return guarded(method, self._access[operation_id], self._enforced)


_HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def allowed_methods_of(paths: Mapping[str, Mapping[str, Any]]) -> Callable[[str], Sequence[str]]:
    """`path -> methods` for the `Allow` header of a 405, from the contract's path templates."""
    routes: list[tuple[re.Pattern[str], list[str]]] = []
    for template, item in paths.items():
        pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
        methods = [m.upper() for m in _HTTP_METHODS if m in item]
        if "GET" in methods and "HEAD" not in methods:
            methods.append("HEAD")
        routes.append((re.compile(pattern), sorted(methods)))

    def allowed(path: str) -> Sequence[str]:
        for pattern, methods in routes:
            if pattern.fullmatch(path):
                return methods
        return ()

    return allowed


def create_app(
    application: ScopedContextApplication,
    settings: Settings,
    *,
    spec_path: Path | None = None,
) -> connexion.AsyncApp:
    """Build the ASGI app. The caller owns `application` and closes it after the server stops."""
    specification = Specification.load(spec_path or default_spec_path())
    policy = load_access_policy(settings)
    raw = specification.raw if policy.enforced else without_security(specification.raw)
    handlers = Handlers(application, capabilities(str(raw["info"]["version"]), settings))
    handle_exception = exception_handler(allowed_methods_of(raw["paths"]))
    validators = ValidatorCache()

    app = connexion.AsyncApp(
        __name__,
        middlewares=[
            partial(EdgeMiddleware, max_body_bytes=settings.max_body_bytes),
            partial(ServerErrorMiddleware, handler=handle_exception),
            *ConnexionMiddleware.default_middlewares[1:],
        ],
        jsonifier=Jsonifier(json, separators=(",", ":"), ensure_ascii=False),
        strict_validation=True,
        validate_responses=False,
        validator_map={
            "parameter": partial(ParameterValidator, cache=validators),
            "body": MediaTypeDict({"*/*json": partial(JsonBodyValidator, cache=validators)}),
        },
        swagger_ui_options=SwaggerUIOptions(spec_path="/openapi.json", swagger_ui_path="/docs"),
        security_map=bearer_security_map(policy),
    )
    app.add_api(raw, resolver=HandlerResolver(handlers, access_by_operation(raw), policy.enforced))
    for exc_class in (*HANDLED_EXCEPTIONS, ProblemException):
        app.add_error_handler(exc_class, handle_exception)
    return app
