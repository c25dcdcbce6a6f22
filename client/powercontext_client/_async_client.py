"""`AsyncPowerContextClient`: `PowerContextClient` with coroutine methods, over `httpx.AsyncClient`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import Any

import httpx

from powercontext_api.client import AsyncMethods
from powercontext_api.models import ScopeImport
from powercontext_api.operations import Operation

from . import _operations as ops
from . import _transfer as transfer
from ._connection import Connection
from ._exchange import Outcome, Plan, Step
from ._operations import ModelT
from ._transfer import Sink, Source


class AsyncPowerContextClient(AsyncMethods, Connection[httpx.AsyncClient, httpx.AsyncBaseTransport]):
    """An asynchronous PowerContext API client: `PowerContextClient`'s constructor, methods,
    retries and errors, with coroutine methods over `httpx.AsyncClient`; it sends the same bytes.

    ```python
    async with AsyncPowerContextClient("http://127.0.0.1:8000", token="...") as pc:
        await pc.create_scope("project:demo", title="Demo")
        prepared = await pc.prepare_context("project:demo", "how do I validate an API change?")
    ```
    """

    def _open(self, **options: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(**options)

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

    async def _call_exact(self, operation: Operation[ModelT], given: Mapping[str, Any]) -> ModelT:
        return await self._send(ops.any_operation(operation, **given))

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
