"""The ASGI application: the contract's operations routed from the generated operation table.

Each operation is one generic endpoint over the Runtime (`endpoints.py`); beside them the contract
itself, rendered once (`contract_routes.py`), Swagger UI (`/docs`, served by connexion), `/metrics`
(`metrics.py`) and the preview page `/ui/` (`ui_page.py`). Request id, body cap and the access log
wrap everything (`middleware.py`).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from anyio import CapacityLimiter
from connexion.middleware.swagger_ui import SwaggerUIMiddleware
from connexion.options import SwaggerUIOptions
from connexion.spec import Specification
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from powercontext_api.operations import OPERATIONS
from powercontext_runtime import ScopedContextApplication, load_access_policy, one_blas_thread

from .contract_routes import JSON_PATH, contract_routes, load_contract
from .embedding_client import EmbeddingClient, embedding_leg
from .endpoints import endpoint
from .errors import REQUEST_ID_SCOPE_KEY, response_for
from .metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from .metrics import Metrics
from .middleware import EdgeMiddleware
from .settings import HttpSettings
from .streams import streamed_body
from .threads import limiter_for, read_threads
from .ui_page import ui_routes

SPEC_FILENAME = "powercontext.yaml"
DOCS_PATH = "/docs"


def default_spec_path() -> Path:
    """The contract: shipped inside the package when built as a wheel, else the monorepo's copy."""
    packaged = Path(__file__).resolve().parent / "openapi" / SPEC_FILENAME
    if packaged.is_file():
        return packaged
    return Path(__file__).resolve().parents[2] / "openapi" / SPEC_FILENAME


def without_security(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The contract as an access-disabled server serves it: no operation asks for a token."""
    open_spec = copy.deepcopy(dict(spec))
    open_spec.pop("security", None)
    open_spec.get("components", {}).pop("securitySchemes", None)
    for item in open_spec["paths"].values():
        for method, operation in item.items():
            if method != "parameters":
                operation.pop("security", None)
    return open_spec


def allowed_methods(path: str, routes: list[BaseRoute]) -> list[str]:
    """Every method the contract serves at `path` (starlette names only the first route's)."""
    methods: set[str] = set()
    for route in routes:
        if isinstance(route, Route) and route.path_regex.fullmatch(path):
            methods.update(route.methods or ())
    return sorted(methods)


def create_app(
    application: ScopedContextApplication,
    http: HttpSettings | None = None,
    *,
    spec_path: Path | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> ASGIApp:
    """Build the ASGI app. The caller owns `application` and closes it after the server stops.
    `clock` times the embedding leg's back-off (a test's own clock decides when it ends)."""
    http = http or HttpSettings()
    policy = load_access_policy(application.settings)
    http.check_binding(policy)
    raw = load_contract(spec_path or default_spec_path())
    # Built once: connexion checks a contract against the OpenAPI schema at every Specification.
    served = Specification.from_dict(raw if policy.enforced else without_security(raw))

    metrics = Metrics()
    application.observe_prepares(metrics.observe_prepare)
    application.observe_remembers(metrics.observe_remember)
    if http.embedding is not None:
        leg = embedding_leg(
            http.embedding, EmbeddingClient(http.embedding), metrics.observe_embedding_fallback, clock
        )
        one_blas_thread()
        application.use_embeddings(leg)

    async def metrics_text(request: Request) -> Response:
        return Response(metrics.exposition(), media_type=METRICS_CONTENT_TYPE)

    width = read_threads(http, application.reads_in_process)
    reads = None if width is None else CapacityLimiter(width)
    routes: list[BaseRoute] = [
        Route(
            op.path, endpoint(op, application, policy, metrics, limiter_for(op, reads)), methods=[op.method]
        )
        for op in OPERATIONS
    ]
    routes += [Route("/metrics", metrics_text, methods=["GET"]), *ui_routes(), *contract_routes(served)]

    async def framework_error(request: Request, exc: Exception) -> Response:
        request_id = str(request.scope.get(REQUEST_ID_SCOPE_KEY, "-"))
        methods = allowed_methods(request.url.path, routes) if isinstance(exc, HTTPException) else []
        return response_for(exc, request_id, methods)

    operations_app = Starlette(
        routes=routes, exception_handlers={HTTPException: framework_error, Exception: framework_error}
    )
    docs = SwaggerUIMiddleware(operations_app)
    docs.add_api(
        served,
        swagger_ui_options=SwaggerUIOptions(serve_spec=False, spec_path=JSON_PATH, swagger_ui_path=DOCS_PATH),
    )
    without_slash_redirects(operations_app.router)
    without_slash_redirects(docs.router)
    return EdgeMiddleware(
        _DocsBeside(operations_app, docs),
        max_body_bytes=http.max_body_bytes,
        metrics=metrics,
        streamed=streamed_body,
    )


def without_slash_redirects(router: Router) -> None:
    """No redirect from `/path/` to `/path`: starlette builds its `Location` from the caller's
    `Host` header, so anyone could have the server point at another host. Such a path is a 404."""
    router.redirect_slashes = False
    for route in router.routes:
        if isinstance(route, Mount) and isinstance(route.app, Router):
            without_slash_redirects(route.app)


class _DocsBeside:
    """Send the Swagger UI paths through connexion's middleware and every operation straight to
    the router, so an operation pays nothing for the docs."""

    def __init__(self, operations: ASGIApp, docs: ASGIApp) -> None:
        self._operations = operations
        self._docs = docs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] == "http" and path.startswith(DOCS_PATH):
            await self._docs(scope, receive, send)
        else:
            await self._operations(scope, receive, send)
