"""`AsyncPowerContextClient`: `PowerContextClient` with coroutine methods, over `httpx.AsyncClient`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import Any

import httpx
from pydantic import BaseModel

from powercontext_api.client import AsyncMethods
from powercontext_api.models import ScopeImport
from powercontext_api.operations import Operation

from . import _operations as ops
from . import _transfer as transfer
from ._exchange import Outcome, Plan, Step
from ._operations import ModelT
from ._retry import DEFAULT_BACKOFF, DEFAULT_MAX_DELAY, DEFAULT_RETRIES, RetryPolicy
from ._transfer import Sink, Source


class AsyncPowerContextClient(AsyncMethods):
    """An asynchronous PowerContext API client.

    ```python
    async with AsyncPowerContextClient("http://127.0.0.1:8000", token="...") as pc:
        await pc.create_scope("project:demo", title="Demo")
        await pc.remember("project:demo", "Run make contract-test after changing the API.")
        prepared = await pc.prepare_context("project:demo", "how do I validate an API change?")
    ```

    Every method returns the generated response model of its operation. Arguments set to `None`
    (the default) are left out of the request, so the server applies its own defaults. Arguments
    are validated against the generated request models before anything is sent
    (`InvalidArgumentError`). Failures raise subclasses of `PowerContextError`.

    Reads (prepare included), `update_scope`, `delete_scope` and `create_scope(exist_ok=True)` are
    sent again after a failed connection or a 503, up to `retries` times, waiting `backoff` seconds
    and then twice as long each time, or what the 503's `Retry-After` says, at most
    `max_retry_delay`. Other writes are sent once. `retries=0` turns retrying off.

    It has the methods of `PowerContextClient`, as coroutines, and sends the same bytes.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
        max_retry_delay: float = DEFAULT_MAX_DELAY,
    ) -> None:
        self._retry = RetryPolicy(retries, backoff, max_retry_delay)
        self._http = httpx.AsyncClient(
            base_url=base_url,
            headers=ops.client_headers(token),
            timeout=httpx.Timeout(timeout),
            transport=transport,
            follow_redirects=False,
        )

    # Lifecycle ----------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Close the connection pool. The client cannot be used afterwards."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncPowerContextClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        # Never show the token.
        return f"AsyncPowerContextClient(base_url={str(self._http.base_url)!r})"

    # Moving a Scope -----------------------------------------------------------------------------
    async def export_scope(self, scope_id: str, out: Sink) -> int:
        """`GET /v1/scopes/{scope_id}/export` (needs `scope.export`): write the Scope's export, the
        JSON Lines `powercontext export` writes, to `out` (a binary file, or a callable given each
        chunk) as it arrives; the number of bytes written. Sent once. An answer the server could
        not finish raises `TransportError`: whatever `out` holds then is incomplete."""
        call, write = transfer.export_call(scope_id), transfer.Writer(out)
        try:
            async with self._http.stream(call.method, call.path, headers=transfer.EXPORT_HEADERS) as response:
                if not response.is_success:
                    await response.aread()
                    transfer.raise_unless_success(call, response)
                async for chunk in response.aiter_bytes():
                    write(chunk)
        except httpx.RequestError as exc:
            raise call.transport_error(exc) from exc
        return write.written

    async def import_scope(self, source: Source, *, scope_id: str | None = None) -> ScopeImport:
        """`POST /v1/scopes/{scope_id}/import` (needs `server.admin`): recreate the Scope an export
        holds (its bytes, a binary file or an iterable of chunks, sent as it is read) under
        `scope_id`, by default the id it was exported under, in one transaction. Sent once, and
        waits for the answer as long as the import takes. A refused stream is a 422
        `invalid_export` (`InvalidRequestError`), a taken id a 409 `scope_exists`."""
        call, body, arguments = transfer.import_request(scope_id, source, self._http.timeout)

        async def sent() -> AsyncIterator[bytes]:  # an async client sends an async stream
            for chunk in body:
                yield chunk

        try:
            response = await self._http.request(content=sent(), **arguments)
        except httpx.RequestError as exc:
            raise call.transport_error(exc) from exc
        return ops.read_response(call, response)

    # Sending ------------------------------------------------------------------------------------
    async def _call(self, operation: Operation[ModelT], arguments: Mapping[str, Any]) -> ModelT:
        return await self._send(ops.request(operation, arguments))

    async def _call_exact(
        self,
        operation: Operation[ModelT],
        body: BaseModel | Mapping[str, Any] | None,
        path: Mapping[str, str | int] | None,
        query: Mapping[str, str | int] | None,
    ) -> ModelT:
        call = ops.any_operation(operation, body, path, query)
        return await self._send(call)

    async def _send(self, call: ops.Call[ModelT]) -> ModelT:
        plan = Plan(call, self._retry)
        step = plan.step()
        while step is not None:
            outcome = await self._do(step)
            step = plan.step(outcome)
        return plan.result()

    async def _do(self, step: Step) -> Outcome:
        if isinstance(step, float):
            await asyncio.sleep(step)
            return None
        request = self._http.request(
            step.method, step.path, content=step.content, headers=step.headers, params=step.params
        )
        try:
            return await request
        except httpx.RequestError as exc:
            return exc
