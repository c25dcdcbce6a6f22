"""The ASGI app of one worker process when `POWERCONTEXT_SERVER_WORKERS` is above 1.

uvicorn's supervisor starts each worker by import string, so a worker reads its settings from the
environment (the parent pinned the database URL). It closes its store at the ASGI lifespan's
shutdown, which uvicorn runs on SIGTERM (an `atexit` hook would not run: uvicorn raises the
SIGTERM again once it has shut down, which ends the process on the spot), or else at exit.
Workers share nothing but the database; each keeps its own search mirror, which catches up with
the others' writes through the index log.
"""

from __future__ import annotations

import atexit
import warnings
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from powercontext_runtime import Settings, open_application

from .allocator import keep_freed_memory
from .logs import configure_logging
from .settings import HttpSettings


def create_worker_app() -> ASGIApp:
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from .app import create_app

    keep_freed_memory()
    http = HttpSettings.from_env()
    configure_logging(http.log_level, http.log_format)  # a spawned worker starts with no handlers
    application = open_application(Settings.from_env())
    atexit.register(application.close)
    return closing_at_shutdown(create_app(application, http), application.close)


def closing_at_shutdown(app: ASGIApp, close: Callable[[], None]) -> ASGIApp:
    """`app`, calling `close` when the server's lifespan shutdown arrives (before `app` sees it)."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return

        async def receiving() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                close()
            return message

        await app(scope, receiving, send)

    return wrapped
