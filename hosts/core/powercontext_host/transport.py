"""What every request to PowerContext shares: no redirects, the headers, a hard deadline, and
log-safe error text.

Nothing here ever puts the token, a request body or a response body into a message.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


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


def get_request(base_url: str, path: str, token: str | None) -> urllib.request.Request:
    headers = {"Accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return urllib.request.Request(f"{base_url}{path}", headers=headers, method="GET")


class DeadlinePassed(Exception):
    """`within` gave up waiting; the abandoned call ends on its own socket timeout."""


def within(seconds: float, call: Callable[[], T], name: str) -> T:
    """Run `call` with a hard deadline (urllib's timeout bounds each socket operation, not the sum)."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name=name, daemon=True).start()
    if not done.wait(seconds):
        raise DeadlinePassed
    if "error" in box:
        raise box["error"]
    result: T = box["value"]
    return result


def server_label(base_url: str) -> str:
    """scheme://host[:port] of a server, for log lines: no user info, path or query."""
    parts = urllib.parse.urlsplit(base_url)
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + ("" if port is None else f":{port}")


class Unreachable(Exception):
    """No HTTP answer at all; the message is log-safe ("server unreachable (connection refused)")."""


def exchange(request: urllib.request.Request, timeout: float, limit: int) -> tuple[int, bytes]:
    """Send `request`: its status and at most `limit + 1` bytes of body, for any HTTP answer
    (an error status or a refused redirect included). `Unreachable` when none came."""
    try:
        with OPENER.open(request, timeout=timeout) as response:
            return int(response.status), response.read(limit + 1)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(limit + 1)
    except urllib.error.URLError as exc:
        raise Unreachable(f"server unreachable ({_reason_text(exc.reason)})") from None
    except TimeoutError:
        raise Unreachable("timed out") from None
    except OSError as exc:
        raise Unreachable(f"connection failed ({type(exc).__name__})") from None


def error_code(body: bytes) -> str | None:
    """The `error.code` of a PowerContext error body, or None (the body itself is never logged)."""
    try:
        code = json.loads(body)["error"]["code"]
    except Exception:
        return None
    return code if isinstance(code, str) and code.isidentifier() else None


def failure_text(status: int, body: bytes) -> str:
    """`HTTP 404 scope_not_found`, or `HTTP 502` when the body is no PowerContext error."""
    code = error_code(body)
    return f"HTTP {status}" + ("" if code is None else f" {code}")


def _reason_text(reason: object) -> str:
    """A short, log-safe name for why a connection failed."""
    if isinstance(reason, TimeoutError):
        return "timed out"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    return type(reason).__name__
