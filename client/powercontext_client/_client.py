"""`PowerContextClient`: the generated methods (`powercontext_api.client.SyncMethods`) over `httpx.Client`."""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import httpx

from powercontext_api.client import SyncMethods
from powercontext_api.models import ScopeImport
from powercontext_api.operations import Operation

from . import _operations as ops
from . import _transfer as transfer
from ._connection import Connection
from ._exchange import Outcome, Plan, Step
from ._operations import ModelT
from ._transfer import Sink, Source


class PowerContextClient(SyncMethods, Connection[httpx.Client, httpx.BaseTransport]):
    """A synchronous PowerContext API client.

    ```python
    with PowerContextClient("http://127.0.0.1:8000", token="...") as pc:
        pc.create_scope("project:demo", title="Demo")
        pc.remember("project:demo", "Run make contract-test after changing the API.")
        prepared = pc.prepare_context("project:demo", "how do I validate an API change?")
    ```

    Every method returns the generated response model of its operation. Arguments set to `None`
    (the default) are left out of the request, so the server applies its own defaults. Arguments
    are validated against the generated request models before anything is sent
    (`InvalidArgumentError`). Failures raise subclasses of `PowerContextError`.

    Reads (prepare included), `update_scope`, `delete_scope` and `create_scope(exist_ok=True)` are
    sent again after a failed connection or a 503, up to `retries` times, waiting `backoff` seconds
    and then twice as long each time, or what the 503's `Retry-After` says, at most
    `max_retry_delay`. Other writes are sent once. `retries=0` turns retrying off.
    `AsyncPowerContextClient` has the same methods as coroutines and sends the same bytes.
    """

    def _open(self, **options: Any) -> httpx.Client:
        return httpx.Client(**options)

    # Lifecycle ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection pool. The client cannot be used afterwards."""
        self._http.close()

    def __enter__(self) -> PowerContextClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # Moving a Scope -----------------------------------------------------------------------------
    def export_scope(self, scope_id: str, out: Sink) -> int:
        """`GET /v1/scopes/{scope_id}/export` (needs `scope.export`): write the Scope's export, the
        JSON Lines `powercontext export` writes, to `out` (a binary file, or a callable given each
        chunk) as it arrives; the number of bytes written. Sent once. An answer the server could
        not finish raises `TransportError`: whatever `out` holds then is incomplete."""
        call, write = transfer.export_call(scope_id), transfer.Writer(out)
        try:
            with self._http.stream(call.method, call.path, headers=transfer.EXPORT_HEADERS) as response:
                transfer.raise_unless_success(call, response, response.read)
                for chunk in response.iter_bytes():
                    write(chunk)
        except httpx.RequestError as exc:
            raise call.transport_error(exc) from exc
        return write.written

    def import_scope(self, source: Source, *, scope_id: str | None = None) -> ScopeImport:
        """`POST /v1/scopes/{scope_id}/import` (needs `server.admin`): recreate the Scope an export
        holds (its bytes, a binary file or an iterable of chunks, sent as it is read) under
        `scope_id`, by default the id it was exported under, in one transaction. Sent once, and
        waits for the answer as long as the import takes. A refused stream is a 422
        `invalid_export` (`InvalidRequestError`), a taken id a 409 `scope_exists`."""
        call, body, arguments = transfer.import_request(scope_id, source, self._http.timeout)
        try:
            response = self._http.request(content=body, **arguments)
        except httpx.RequestError as exc:
            raise call.transport_error(exc) from exc
        return ops.read_response(call, response)

    # Sending ------------------------------------------------------------------------------------
    def _call(self, operation: Operation[ModelT], arguments: Mapping[str, Any]) -> ModelT:
        return self._send(ops.request(operation, arguments))

    def _call_exact(self, operation: Operation[ModelT], given: Mapping[str, Any]) -> ModelT:
        return self._send(ops.any_operation(operation, **given))

    def _send(self, call: ops.Call[ModelT]) -> ModelT:
        plan = Plan(call, self._retry)
        step = plan.step()
        while step is not None:
            step = plan.step(self._do(step))
        return plan.result()

    def _do(self, step: Step) -> Outcome:
        if isinstance(step, float):
            time.sleep(step)
            return None
        try:
            return self._http.request(
                step.method, step.path, content=step.content, headers=step.headers, params=step.params
            )
        except httpx.RequestError as exc:
            return exc
