"""The prepare preview page at `/ui/`: three static files shipped in the package, no build step.

Served with a Content-Security-Policy that lets the page load only its own script and style and
talk only to this server, so recalled text, which it shows, can never run as code.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

_FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def ui_routes() -> list[BaseRoute]:
    """`/ui` redirects to `/ui/`; `/ui/` is the page, beside its script and style."""
    folder = Path(__file__).resolve().parent / "ui"
    pages = {name: (folder / name).read_bytes() for name in _FILES}

    def serve(name: str) -> Route:
        async def page(request: Request) -> Response:
            return Response(pages[name], media_type=_FILES[name], headers=_HEADERS)

        return Route("/ui/" if name == "index.html" else f"/ui/{name}", page, methods=["GET", "HEAD"])

    async def to_page(request: Request) -> Response:
        return RedirectResponse("/ui/", status_code=308)

    return [Route("/ui", to_page, methods=["GET", "HEAD"]), *(serve(name) for name in _FILES)]
