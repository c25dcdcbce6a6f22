"""Writing Memory entries: `POST /v1/memory/remember/batch`, creating the Scope when it is missing.

The batch is tried first, so a Scope that exists costs one request. Only a 404 `scope_not_found`
leads to `POST /v1/scopes` (which needs `server.admin`) and one resend. A token that may not create
Scopes is noted per server and Scope and logged once; later turns still try to write, in case
someone else creates the Scope. Failures raise `WriteFailure` with a log-safe message.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from ._contract import REMEMBER_BATCH_PATH, SCOPES_PATH
from .transport import Unreachable, error_code, exchange, failure_text, post_request

WRITE_TIMEOUT = 5.0  # per request; writes run in the background, so this may exceed the prepare cap
MAX_RESPONSE_BYTES = 1 << 20
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Destination:
    """Where entries go: a server, its credential and one Scope."""

    base_url: str
    token: str | None = field(repr=False)
    scope_id: str


@dataclass(frozen=True)
class Written:
    """What a batch did: entries stored, and entries the Scope already held (an active entry with
    the same text, or an earlier one of the batch), which stored nothing."""

    stored: int
    duplicates: int = 0


class WriteFailure(Exception):
    """The entries were not stored. The message never holds the token or any text."""

    def __init__(self, message: str, status: int | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class MemoryWriter:
    """Sends batches; remembers, per server and Scope, that Scope creation was refused."""

    def __init__(self, timeout: float = WRITE_TIMEOUT) -> None:
        self._timeout = timeout
        self._refused: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def remember(self, destination: Destination, texts: Sequence[str], kind: str) -> Written:
        """Store `texts` as entries of `kind`, all or nothing; how many were stored and how many
        the Scope already held."""
        try:
            return self._batch(destination, texts, kind)
        except WriteFailure as exc:
            if exc.code != "scope_not_found" or not self._create_scope(destination):
                raise
        return self._batch(destination, texts, kind)

    def _batch(self, destination: Destination, texts: Sequence[str], kind: str) -> Written:
        body = {"scope_id": destination.scope_id, "entries": [{"text": t, "kind": kind} for t in texts]}
        status, payload = self._post(destination, REMEMBER_BATCH_PATH, body)
        citations = payload.get("citations") if isinstance(payload, dict) else None
        if status != 200 or not isinstance(citations, list) or len(citations) != len(texts):
            raise WriteFailure(f"unexpected answer to remember/batch (HTTP {status})", status)
        # A server from before the duplicate check answers without `duplicate`: all were stored.
        flags = payload.get("duplicate") if isinstance(payload, dict) else None
        duplicates = sum(flag is True for flag in flags) if isinstance(flags, list) else 0
        return Written(len(citations) - duplicates, duplicates)

    def _create_scope(self, destination: Destination) -> bool:
        """True when the Scope now exists (created here or by someone else meanwhile)."""
        key = (destination.base_url, destination.scope_id)
        with self._lock:
            if key in self._refused:
                return False
        try:
            self._post(destination, SCOPES_PATH, {"scope_id": destination.scope_id})
        except WriteFailure as exc:
            if exc.code == "scope_exists":
                return True
            if exc.status not in (401, 403):
                raise
            with self._lock:
                self._refused.add(key)
            logger.warning(
                "PowerContext Scope %r does not exist and this token may not create it (HTTP %s); "
                "turns are not captured until it exists",
                destination.scope_id,
                exc.status,
            )
            return False
        logger.info("PowerContext Scope %r created for captured turns", destination.scope_id)
        return True

    def _post(self, destination: Destination, path: str, body: object) -> tuple[int, object]:
        request = post_request(destination.base_url, path, destination.token, body)
        try:
            status, data = exchange(request, self._timeout, MAX_RESPONSE_BYTES)
        except Unreachable as exc:
            raise WriteFailure(str(exc)) from None
        if not 200 <= status < 300:
            raise WriteFailure(failure_text(status, data), status, error_code(data))
        if len(data) > MAX_RESPONSE_BYTES:
            raise WriteFailure("response is too large", status)
        try:
            return status, json.loads(data)
        except ValueError:
            raise WriteFailure("response is not valid JSON", status) from None
