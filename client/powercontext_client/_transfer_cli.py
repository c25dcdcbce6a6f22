"""`powercontext export` and `powercontext import` over the API, when given `--url` (or
POWERCONTEXT_URL) rather than `--data-dir`/`--database-url`: the same file format and exit
statuses as the commands that open the database (which the server package provides), through
`export_scope`/`import_scope` of the client, so a remote user can move or back up their own Scope.

Exit status: 0 done, 1 an API or connection error (status, code and message on one line), 2 a
usage error or a refusal (no such Scope, an id in use, a file that is no valid export).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ._client import PowerContextClient
from ._errors import InvalidArgumentError, PowerContextError, PowerContextHTTPError, TransportError
from ._messages import http_message, transport_message

TRANSFER_COMMANDS = ("export", "import")
DATABASE_OPTIONS = ("--data-dir", "--database-url")
# Answers that say the server refused what was asked, not that the call failed: exit 2, as offline.
REFUSALS = frozenset({"scope_not_found", "scope_exists", "invalid_export"})


def over_api(args: Sequence[str], env: Mapping[str, str], url_env: str) -> bool:
    """Whether this export or import goes through the API: `--url` given, or the URL variable set,
    and no database option (which names the database to open directly)."""
    named = {arg.split("=", 1)[0] for arg in args}
    if named & set(DATABASE_OPTIONS):
        return False
    return "--url" in named or bool(env.get(url_env))


def parser(url: str | None, token: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="powercontext", description="Move a Scope over the API.")
    parser.add_argument("--url", default=url, help="The server's base URL (POWERCONTEXT_URL).")
    parser.add_argument("--token", default=token, help="Bearer token (POWERCONTEXT_TOKEN).")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS")
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser("export", help="Write a Scope's export (needs scope.export).")
    export.add_argument("scope_id", metavar="SCOPE_ID")
    export.add_argument("--output", "-o", required=True, metavar="FILE", help="File to write; - for stdout.")
    import_ = commands.add_parser("import", help="Recreate a Scope from an export (needs server.admin).")
    import_.add_argument("file", metavar="FILE", help="A file an export wrote; - for stdin.")
    import_.add_argument("--scope-id", metavar="SCOPE_ID", help="Import under this id (default: the file's).")
    for sub in (export, import_):
        sub.add_argument("--url", default=argparse.SUPPRESS)
        sub.add_argument("--token", default=argparse.SUPPRESS)
        sub.add_argument("--timeout", type=float, default=argparse.SUPPRESS, metavar="SECONDS")
    return parser


def main(argv: Sequence[str], url: str | None, token: str | None) -> int:
    try:
        args = parser(url, token).parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        with PowerContextClient(args.url, args.token, timeout=args.timeout) as pc:
            if args.command == "export":
                return _export(pc, args.scope_id, args.output)
            return _import(pc, args.file, args.scope_id)
    except InvalidArgumentError as exc:
        return _fail(f"invalid argument: {exc}", 2)
    except TransportError as exc:
        return _fail(transport_message(exc, args.url, args.timeout), 1)
    except PowerContextHTTPError as exc:
        return _fail(http_message(exc), 2 if exc.code in REFUSALS else 1)
    except PowerContextError as exc:
        return _fail(str(exc), 1)
    except OSError as exc:
        return _fail(f"{exc.filename or 'the file'}: {exc.strerror or exc}", 1)


def _export(pc: PowerContextClient, scope_id: str, output: str) -> int:
    started = time.perf_counter()
    if output == "-":
        counted = _Counted(sys.stdout.buffer)
        written = pc.export_scope(scope_id, counted)
        sys.stdout.buffer.flush()
    else:
        with _replaced(Path(output)) as file:
            counted = _Counted(file)
            written = pc.export_scope(scope_id, counted)
    where = "standard output" if output == "-" else output
    print(
        # As the database command counts: the header aside.
        f"exported Scope {scope_id}: {max(counted.lines - 1, 0)} rows ({written} bytes) to {where} "
        f"in {time.perf_counter() - started:.1f} s",
        file=sys.stderr if output == "-" else sys.stdout,
        flush=True,
    )
    return 0


def _import(pc: PowerContextClient, source: str, scope_id: str | None) -> int:
    started = time.perf_counter()
    if source == "-":
        report = pc.import_scope(sys.stdin.buffer, scope_id=scope_id)
    else:
        with open(source, "rb") as file:
            report = pc.import_scope(file, scope_id=scope_id)
    print(
        f"imported Scope {report.scope_id}: {sum(report.rows.values())} rows, "
        f"{report.indexed} documents indexed in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    return 0


class _Counted:
    """Writes each chunk to `file`, counting the lines."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.lines = 0

    def __call__(self, chunk: bytes) -> None:
        self.lines += chunk.count(b"\n")
        self.file.write(chunk)


@contextmanager
def _replaced(path: Path) -> Iterator[BinaryIO]:
    """A file that takes `path`'s place once the export is complete, readable by its owner only
    (an export holds everything the Scope remembers); nothing is left when the export fails."""
    fd, partial = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as file:
            yield file
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise


def _fail(message: str, status: int) -> int:
    print("powercontext: " + " ".join(message.splitlines()), file=sys.stderr)
    return status
