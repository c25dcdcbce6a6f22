"""The ASGI app of one worker process when `POWERCONTEXT_SERVER_WORKERS` is above 1.

uvicorn's supervisor starts each worker by import string, so a worker reads its settings from the
environment (the parent pinned the database URL) and closes its store when the process exits.
Workers share nothing but the database; each keeps its own search mirror, which catches up with
the others' writes through the index log.
"""

from __future__ import annotations

import atexit
import warnings

from starlette.types import ASGIApp

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
    return create_app(application, http)
