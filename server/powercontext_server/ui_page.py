"""The pages at `/ui/`: the prepare preview (`/ui/`) and the Memory page (`/ui/memory`), static
files shipped in the package, no build step.

Served with a Content-Security-Policy that lets a page load only its own scripts and style and
talk only to this server, so recalled text, which they show, can never run as code.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

_HTML = "text/html; charset=utf-8"
_JS = "text/javascript; charset=utf-8"
# URL path under /ui/ -> (file in ui/, media type)
_FILES = {
    "": ("index.html", _HTML),
    "app.js": ("app.js", _JS),
    "api.js": ("api.js", _JS),
    "style.css": ("style.css", "text/css; charset=utf-8"),
    "memory": ("memory.html", _HTML),
    "memory.js": ("memory.js", _JS),
    "memory_view.js": ("memory_view.js", _JS),
    "line_diff.js": ("line_diff.js", _JS),
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
    """`/ui` redirects to `/ui/`; `/ui/` is the preview and `/ui/memory` the Memory page, beside
    their scripts and style."""
    folder = Path(__file__).resolve().parent / "ui"
    pages = {path: (folder / name).read_bytes() for path, (name, _) in _FILES.items()}

    def serve(path: str) -> Route:
        async def page(request: Request) -> Response:
            return Response(pages[path], media_type=_FILES[path][1], headers=_HEADERS)

        return Route(f"/ui/{path}", page, methods=["GET", "HEAD"])

    async def to_page(request: Request) -> Response:
        return RedirectResponse("/ui/", status_code=308)

    return [Route("/ui", to_page, methods=["GET", "HEAD"]), *(serve(path) for path in _FILES)]
