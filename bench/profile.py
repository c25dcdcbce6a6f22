"""`make bench-profile`: pyinstrument profiles of the prepare path, as text, into bench/profiles/.

Two views of the same request (SQLite, 10k entries per Scope, `assembly: {}` unless told):
- `inprocess-<mode>.txt`: the Runtime called in process (what prepare itself costs);
- `http-<mode>.txt`: the same request through the whole ASGI app in process (what the HTTP
  stack adds: middleware, validation, handler, JSON). Library frames are collapsed.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pyinstrument import Profiler

from powercontext_api.models import PrepareContextRequest
from powercontext_server.allocator import keep_freed_memory

from .datagen import queries
from .run import open_app, prepare_database
from .scenarios import ASSEMBLY_MAX_ENTRIES, MODES

PROFILES = Path(__file__).resolve().parent / "profiles"


def profile_in_process(url: str, mode_key: str, seconds: float) -> str:
    mode = next(m for m in MODES if m.key == mode_key)
    app, _ = open_app(url)
    bodies = [mode.body(q) for q in queries()]
    try:
        for body in bodies:  # warm
            app.prepare_context(PrepareContextRequest.model_validate(body))
        profiler = Profiler(interval=0.0005)
        count = 0
        profiler.start()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            app.prepare_context(PrepareContextRequest.model_validate(bodies[count % len(bodies)]))
            count += 1
        profiler.stop()
    finally:
        app.close()
    header = f"# in-process prepare, mode {mode_key}: {count} requests in {seconds:.0f} s\n"
    return header + profiler.output_text(unicode=True, color=False, show_all=False)


def profile_http_stack(url: str, mode_key: str, seconds: float) -> str:
    """The whole HTTP request path in one thread: the ASGI app (every middleware, validation,
    handler, Runtime, Store) called in process with synthetic requests, no socket.

    Connexion runs sync handlers in a worker thread, which a sampling profiler of one thread does
    not see; here that hop is made inline, so one profile covers the request end to end. uvicorn's
    HTTP parsing and the socket are not in it: the wall-clock and CPU figures of `make bench` are.
    """
    import anyio.to_thread

    from powercontext_runtime import Settings, open_application
    from powercontext_server.app import create_app

    mode = next(m for m in MODES if m.key == mode_key)
    settings = Settings(database_url=url, assembly_max_entries=ASSEMBLY_MAX_ENTRIES)
    application = open_application(settings)
    app = create_app(application)
    bodies = [mode.wire(q) for q in queries()]

    async def inline(func: Callable[[], Any], *args: Any, **kwargs: Any) -> Any:
        return func(*args)

    async def call(body: bytes) -> int:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/v1/context/prepare",
            "raw_path": b"/v1/context/prepare",
            "query_string": b"",
            "root_path": "",
            "headers": [
                (b"host", b"127.0.0.1"),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return {"type": "http.disconnect"}

        status = 0

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]

        await app(scope, receive, send)
        return status

    async def drive() -> tuple[Profiler, int]:
        for body in bodies:  # warm
            assert await call(body) == 200
        profiler = Profiler(interval=0.0005, async_mode="disabled")
        count = 0
        profiler.start()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            assert await call(bodies[count % len(bodies)]) == 200
            count += 1
        profiler.stop()
        return profiler, count

    original = anyio.to_thread.run_sync
    anyio.to_thread.run_sync = inline  # type: ignore[assignment]
    logging.getLogger("powercontext.server.access").disabled = True
    try:
        profiler, count = asyncio.run(drive())
    finally:
        anyio.to_thread.run_sync = original
        application.close()
    header = (
        f"# HTTP stack in process (ASGI app, worker-thread hop inlined), mode {mode_key}: "
        f"{count} prepares in {seconds:.0f} s\n"
    )
    return header + profiler.output_text(unicode=True, color=False, show_all=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile")
    parser.add_argument("--entries", default="1000,10000", help="comma-separated corpus sizes")
    parser.add_argument("--modes", default="assembly,legacy,four")
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args(argv)
    PROFILES.mkdir(exist_ok=True)
    from .run import Database

    keep_freed_memory()  # profile the process as the server runs it
    with tempfile.TemporaryDirectory(prefix="pc-profile-") as tmp:
        work = Path(tmp)
        for entries in (int(n) for n in args.entries.split(",")):
            url, _ = prepare_database(Database("sqlite", ""), entries, work)
            size = f"{entries // 1000}k" if entries % 1000 == 0 else str(entries)
            for old in PROFILES.glob(f"*-{size}.txt"):  # this size's set is written afresh
                old.unlink()
            for mode in args.modes.split(","):
                for name, text in (
                    (f"inprocess-{mode}-{size}.txt", profile_in_process(url, mode, args.seconds)),
                    (f"http-{mode}-{size}.txt", profile_http_stack(url, mode, args.seconds)),
                ):
                    (PROFILES / name).write_text(text)
                    print(f"wrote bench/profiles/{name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
