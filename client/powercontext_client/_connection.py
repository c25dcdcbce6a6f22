"""What both clients are made with: the server's address, the token, timeouts and the retry policy."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import httpx

from ._operations import client_headers
from ._retry import DEFAULT_BACKOFF, DEFAULT_MAX_DELAY, DEFAULT_RETRIES, RetryPolicy

HttpT = TypeVar("HttpT", httpx.Client, httpx.AsyncClient)
TransportT = TypeVar("TransportT", httpx.BaseTransport, httpx.AsyncBaseTransport)


class Connection(Generic[HttpT, TransportT]):
    """The constructor both clients share; each opens its own kind of `httpx` client (`_open`)."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 10.0,
        transport: TransportT | None = None,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
        max_retry_delay: float = DEFAULT_MAX_DELAY,
    ) -> None:
        self._retry = RetryPolicy(retries, backoff, max_retry_delay)
        self._http: HttpT = self._open(
            base_url=base_url,
            headers=client_headers(token),
            timeout=httpx.Timeout(timeout),
            transport=transport,
            follow_redirects=False,
            # A plain-HTTP address never meets TLS (redirects are not followed), so it needs no CA
            # bundle, which httpx otherwise loads for every client: some 35 ms of each CLI command.
            verify=httpx.URL(base_url).scheme != "http",
        )

    def _open(self, **options: Any) -> HttpT:
        raise NotImplementedError

    def __repr__(self) -> str:
        # Never show the token.
        return f"{type(self).__name__}(base_url={str(self._http.base_url)!r})"
