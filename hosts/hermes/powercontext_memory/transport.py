"""What every request to PowerContext shares: no redirects, the headers, and log-safe error text.

Nothing here ever puts the token, a request body or a response body into a message.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is a failure: never resend the body or the credential elsewhere."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


OPENER = urllib.request.build_opener(_NoRedirect)


def json_headers(token: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def post_request(base_url: str, path: str, token: str | None, body: object) -> urllib.request.Request:
    return urllib.request.Request(
        f"{base_url}{path}",
        data=json.dumps(body).encode("utf-8"),
        headers=json_headers(token),
        method="POST",
    )


def error_code(exc: urllib.error.HTTPError) -> str | None:
    """The `error.code` of a PowerContext error body, or None (the body itself is never logged)."""
    try:
        code = json.loads(exc.read(65536))["error"]["code"]
    except Exception:
        return None
    return code if isinstance(code, str) and code.isidentifier() else None


def reason_text(reason: object) -> str:
    """A short, log-safe name for why a connection failed."""
    if isinstance(reason, TimeoutError):
        return "timed out"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    return type(reason).__name__
