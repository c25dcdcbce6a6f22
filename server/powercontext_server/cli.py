"""`powercontext serve` (settings from the environment, flags override), `powercontext token`,
`powercontext copy-store`, and `powercontext export` / `powercontext import` of one Scope.

The `powercontext` console script is `powercontext_client.cli:main`, which hands these commands
to `main` here and imports this module only then, so a client-only install never needs the server.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import secrets
import signal
import sys
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import uvicorn
from tqdm import tqdm  # type: ignore[import-untyped]  # no stubs or py.typed

from powercontext_runtime import (
    ConfigurationError,
    CopyFailed,
    CopyRefused,
    Settings,
    TransferFailed,
    TransferRefused,
    copy_database,
    export_scope_to,
    import_scope_from,
    load_access_policy,
    open_application,
    token_digest,
)

from .allocator import keep_freed_memory
from .http_edge import raise_open_file_limit, uvicorn_options
from .logs import configure_logging
from .metrics import MULTIPROCESS_ENV
from .settings import HttpSettings

logger = logging.getLogger("powercontext.server")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="powercontext", description="PowerContext context runtime.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="Run the HTTP server.",
        description=(
            "Run the HTTP server. Settings come from POWERCONTEXT_SERVER_* environment variables; "
            "flags override them."
        ),
    )
    serve.add_argument("--host", help="Interface to bind (POWERCONTEXT_SERVER_HOST, default 127.0.0.1).")
    serve.add_argument("--port", type=int, help="TCP port to bind (POWERCONTEXT_SERVER_PORT, default 8000).")
    serve.add_argument(
        "--data-dir",
        help=(
            "Directory of the SQLite database (POWERCONTEXT_SERVER_DATA_DIR, default .powercontext); "
            "takes precedence over POWERCONTEXT_SERVER_DATABASE_URL."
        ),
    )
    commands.add_parser(
        "token",
        help="Print a new bearer token and the SHA-256 to put in the auth file.",
        description=(
            "Print a new random bearer token and its SHA-256. Give the token to the caller; put only "
            "the digest in the POWERCONTEXT_SERVER_AUTH_FILE entry (token_sha256)."
        ),
    )
    copy = commands.add_parser(
        "copy-store",
        help="Copy every row of one database into an empty one (e.g. SQLite to OceanBase).",
        description=(
            "Copy every row of the SOURCE database into the empty TARGET database, keys included, "
            "from one consistent snapshot of SOURCE. Both are first brought to this release's schema. "
            "Stop any server using TARGET first. A copy that fails leaves TARGET empty again."
        ),
    )
    copy.add_argument("source", metavar="SOURCE", help="Database URL: sqlite:///path or mysql+pymysql://...")
    copy.add_argument("target", metavar="TARGET", help="Database URL of an empty database.")
    export = commands.add_parser(
        "export",
        help="Write one Scope with everything it holds to a JSON Lines file.",
        description=(
            "Write the Scope SCOPE_ID with its Memory (every entry version and revision), Experience, "
            "Profile and Topic revisions, Candidates and counters to FILE, one JSON object per line, "
            "from one consistent snapshot; the database may stay in use. The database is chosen as "
            "`serve` chooses it."
        ),
    )
    export.add_argument("scope_id", metavar="SCOPE_ID", help="The Scope to export.")
    export.add_argument(
        "--output",
        "-o",
        required=True,
        metavar="FILE",
        help="File to write (replaced if it exists); - for stdout.",
    )
    _add_database_options(export)
    import_ = commands.add_parser(
        "import",
        help="Recreate a Scope from a file `powercontext export` wrote, on any backend.",
        description=(
            "Recreate the Scope in FILE, with every id, revision and version number it had, in one "
            "transaction, then index it for search. Refused when the Scope id is already in use or "
            "a Scope it references is missing; a refused or failed import changes nothing. The "
            "database is chosen as `serve` chooses it; its schema is created if needed."
        ),
    )
    import_.add_argument("file", metavar="FILE", help="A file `powercontext export` wrote; - for stdin.")
    import_.add_argument(
        "--scope-id", metavar="SCOPE_ID", help="Import the Scope under this id (default: the id in FILE)."
    )
    _add_database_options(import_)
    return parser


def _add_database_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        help=(
            "Directory of the SQLite database (POWERCONTEXT_SERVER_DATA_DIR, default .powercontext); "
            "takes precedence over POWERCONTEXT_SERVER_DATABASE_URL."
        ),
    )
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help="Database URL, sqlite:///path or mysql+pymysql://... (default: as `serve` chooses).",
    )


def database_url(args: argparse.Namespace, env: dict[str, str]) -> str:
    """The database `serve` would open with these flags: `--database-url`, else `--data-dir`, else
    POWERCONTEXT_SERVER_DATABASE_URL, else POWERCONTEXT_SERVER_DATA_DIR (default .powercontext)."""
    if args.database_url is not None:
        if args.data_dir is not None:
            raise ConfigurationError("Give --database-url or --data-dir, not both.")
        return str(args.database_url)
    if args.data_dir is not None:
        env = {k: v for k, v in env.items() if k != "POWERCONTEXT_SERVER_DATABASE_URL"}
        env["POWERCONTEXT_SERVER_DATA_DIR"] = args.data_dir
    return Settings.from_env(env).database_url


class _ProgressBar:
    """A tqdm bar per stage on stderr, shown only when stderr is a terminal."""

    def __init__(self) -> None:
        self._bar: Any = None  # a tqdm bar

    def stage(self, name: str, total: int) -> None:
        self.close()
        self._bar = tqdm(
            total=total,
            desc=name,
            unit=" rows",
            file=sys.stderr,
            disable=not sys.stderr.isatty(),
            leave=False,
        )

    def advance(self, rows: int) -> None:
        if self._bar is not None:
            self._bar.update(rows)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@contextmanager
def _progress() -> Iterator[_ProgressBar]:
    bar = _ProgressBar()
    try:
        yield bar
    finally:
        bar.close()


def export_command(url: str, scope_id: str, output: str) -> int:
    """`powercontext export`: exit 2 when refused (no such Scope or database), 1 on a database error.
    The file appears only when the export succeeded."""
    path = url.removeprefix("sqlite:///")
    if url.startswith("sqlite:///") and path != ":memory:" and not Path(path).is_file():
        raise ConfigurationError(f"There is no database at {path}.")  # and none is created
    where = "standard output" if output == "-" else output
    try:
        with _progress() as bar:
            if output == "-":
                report = export_scope_to(url, scope_id, sys.stdout.buffer.write, bar)
                sys.stdout.buffer.flush()
            else:
                with _replaced(Path(output)) as file:
                    report = export_scope_to(url, scope_id, file.write, bar)
    except TransferRefused as exc:
        return _fail(f"powercontext: {exc}", 2)
    except TransferFailed as exc:
        left = "" if output == "-" else f"; {output} was not written"
        return _fail(f"powercontext: the export failed ({exc}){left}.", 1)
    except OSError as exc:
        return _fail(f"powercontext: cannot write {where}: {exc.strerror or exc}", 1)
    print(
        f"exported Scope {report.scope_id}: {sum(report.rows.values())} rows to {where} in {report.seconds:.1f} s",
        file=sys.stderr if output == "-" else sys.stdout,
        flush=True,
    )
    return 0


@contextmanager
def _replaced(path: Path) -> Iterator[BinaryIO]:
    """A new file that takes `path`'s place only once it is complete (readable by its owner only:
    an export holds everything the Scope remembers)."""
    partial = path.with_name(f".{path.name}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            yield file
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def import_command(url: str, source: str, scope_id: str | None = None) -> int:
    """`powercontext import`: exit 2 when refused (not an export, unknown version, Scope id taken,
    referenced Scopes missing), 1 on a database error; either way the database is unchanged."""
    try:
        with _progress() as bar:
            if source == "-":
                report = import_scope_from(url, sys.stdin.buffer, bar, scope_id)
            else:
                with open(source, "rb") as file:
                    report = import_scope_from(url, file, bar, scope_id)
    except TransferRefused as exc:
        return _fail(f"powercontext: {exc}", 2)
    except TransferFailed as exc:
        return _fail(f"powercontext: the import failed ({exc}); the database is unchanged.", 1)
    except OSError as exc:
        return _fail(f"powercontext: cannot read {source}: {exc.strerror or exc}", 2)
    print(
        f"imported Scope {report.scope_id}: {sum(report.rows.values())} rows, "
        f"{report.indexed} documents indexed in {report.seconds:.1f} s",
        flush=True,
    )
    return 0


def copy_databases(source_url: str, target_url: str) -> int:
    """`powercontext copy-store`: a bar per table on a terminal, then one summary line; exit 2
    when the copy is refused."""
    if source_url == target_url:
        raise ConfigurationError("SOURCE and TARGET are the same database.")
    try:
        with _progress() as bar:
            report = copy_database(source_url, target_url, progress=bar)
    except CopyRefused as exc:
        return _fail(f"powercontext: {exc}", 2)
    except CopyFailed as exc:
        after = "TARGET is empty again" if exc.emptied else "TARGET may hold part of the copy; empty it"
        return _fail(f"powercontext: {exc} {after}.", 1)
    print(f"copied {sum(report.rows.values())} rows in {report.seconds:.1f} s", flush=True)
    return 0


def new_token() -> tuple[str, str]:
    token = "pc_" + secrets.token_urlsafe(32)
    return token, token_digest(token)


def settings_from(args: argparse.Namespace, env: dict[str, str]) -> tuple[Settings, HttpSettings]:
    """The Runtime's settings and the server's, from the environment, with the flags on top."""
    if args.data_dir is not None:
        env = {k: v for k, v in env.items() if k != "POWERCONTEXT_SERVER_DATABASE_URL"}
        env["POWERCONTEXT_SERVER_DATA_DIR"] = args.data_dir
    if args.port is not None and not 0 < args.port < 65536:
        raise ConfigurationError("--port must be between 1 and 65535.")
    http = HttpSettings.from_env(env)
    http = dataclasses.replace(
        http,
        host=http.host if args.host is None else args.host,
        port=http.port if args.port is None else args.port,
    )
    return Settings.from_env(env), http


@contextmanager
def _shared_metrics_directory() -> Iterator[None]:
    """Where every worker keeps its metric values, so `/metrics` adds all of them up: a fresh
    directory for this run (a left-over file would count an old run), unless the operator set one."""
    if os.environ.get(MULTIPROCESS_ENV):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="powercontext-metrics-") as directory:
        os.environ[MULTIPROCESS_ENV] = directory
        try:
            yield
        finally:
            del os.environ[MULTIPROCESS_ENV]


def serve(settings: Settings, http: HttpSettings) -> None:
    # connexion imports starlette's TestClient at import time, which warns about httpx; not ours to fix.
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from .app import create_app

    # Refuse a bad access configuration before opening the store.
    http.check_binding(load_access_policy(settings))
    keep_freed_memory()  # see allocator.py; workers do the same for themselves
    raise_open_file_limit()  # before the options: they size the connection cap by it; workers inherit it
    application = open_application(settings)  # also creates or upgrades the schema, once
    options = uvicorn_options(http)
    if http.workers > 1:
        application.close()
        # Each worker process builds its own application from the environment; pin the database
        # the flags chose, so every worker opens the one this process just prepared.
        os.environ["POWERCONTEXT_SERVER_DATABASE_URL"] = settings.database_url
        with _shared_metrics_directory():
            uvicorn.run(
                "powercontext_server.worker:create_worker_app", factory=True, workers=http.workers, **options
            )
        return
    try:
        with _exit_on_sigterm():
            uvicorn.run(create_app(application, http), **options)
    finally:
        application.close()


@contextmanager
def _exit_on_sigterm() -> Iterator[None]:
    """uvicorn raises the SIGTERM that stopped it again once it has shut down; by default that ends
    the process on the spot, before the application closes (so SQLite's write-ahead log was never
    truncated). Here it ends the process as an exit, through `finally`."""

    def exit_now(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, exit_now)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "token":
        token, digest = new_token()
        print(f"token:        {token}\ntoken_sha256: {digest}")
        return 0
    if args.command == "copy-store":
        try:
            return copy_databases(args.source, args.target)
        except ConfigurationError as exc:
            return _fail(f"powercontext: {exc}", 2)
    if args.command in ("export", "import"):
        try:
            url = database_url(args, dict(os.environ))
            if args.command == "export":
                return export_command(url, args.scope_id, args.output)
            return import_command(url, args.file, args.scope_id)
        except ConfigurationError as exc:
            return _fail(f"powercontext: {exc}", 2)
    try:
        settings, http = settings_from(args, dict(os.environ))
    except ConfigurationError as exc:
        return _fail(f"powercontext: {exc}", 2)
    configure_logging(http.log_level, http.log_format)
    if args.command == "serve":
        try:
            serve(settings, http)
        except ConfigurationError as exc:
            return _fail(f"powercontext: {exc}", 2)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def _fail(message: str, status: int) -> int:
    """Say why on standard error; the exit status to return."""
    print(message, file=sys.stderr)
    return status
