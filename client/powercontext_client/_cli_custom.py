"""The client commands that do more than send one request: `health` (two), `remember-batch` (a file in
batches) and `prepare` (its text byte for byte, `--family`, `--show` and `--explain`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import typing
from collections.abc import Iterable, Iterator
from typing import IO, Any

from pydantic import MISSING, BaseModel

from powercontext_api.client import UNSET, FamilyArg, Unset
from powercontext_api.models import Assembly, PrepareContextRequest, RememberBatchRequest, RememberBatchResult

from ._cli_output import UsageError, fail, print_result, write_exact
from ._client import PowerContextClient
from ._errors import PowerContextError
from ._receipt import receipt_table
from ._validate import validate_prepared_context

FAMILIES: tuple[str, ...] = typing.get_args(FamilyArg)
MAX_BATCH = RememberBatchRequest.model_json_schema()["properties"]["entries"]["maxItems"]
MAX_BYTES = PrepareContextRequest.model_json_schema()["properties"]["max_bytes"]
# The largest `max_bytes` the contract allows: the cap a prepare answer is checked against by default.
CONTRACT_MAX_BYTES = MAX_BYTES["maximum"]
SHOW_FIELDS = Assembly.model_json_schema()["properties"]["show"]["items"]["enum"]


def add_custom_commands(commands: Any, shared: argparse.ArgumentParser) -> None:
    def command(name: str, help: str, description: str | None = None) -> Any:
        return commands.add_parser(name, help=help, description=description or help, parents=[shared])

    command("health", "Check that the server is live and ready (exit 1 when it is not).").set_defaults(
        run=_health
    )
    sub = command(
        "remember-batch",
        "Add many Memory entries from a JSON Lines file; prints every citation, in order.",
        'Add the entries of FILE (JSON Lines: each line an object {"text": ..., "kind": ..., '
        '"expires_at": ...} or a JSON string; - reads standard input) in requests of --batch-size '
        "entries. Each request is one transaction: an invalid entry stores nothing of its batch, "
        "and the error says how many entries earlier batches stored. An entry whose text an active "
        "entry (or an earlier line) already holds stores nothing and is cited as that one, unless "
        '--keep-duplicates. Prints {"citations": [...], "duplicate": [...]} for all.',
    )
    _positionals(sub, file="JSON Lines of entries; - reads standard input.")
    sub.add_argument("--kind", help="The kind of entries given as plain strings (server default fact).")
    sub.add_argument(
        "--keep-duplicates",
        action="store_true",
        help="Store every line, even one whose text an active entry already holds.",
    )
    sub.add_argument(
        "--batch-size",
        type=int,
        default=500,
        metavar="N",
        help=f"Entries per request, 1 to {MAX_BATCH} (500).",
    )
    sub.set_defaults(run=_remember_batch)
    _add_prepare(command)


def _add_prepare(command: Any) -> None:
    sub = command(
        "prepare",
        "Print the prepared context for a query, byte for byte.",
        "Ask for the prepared context and write its content to standard output exactly as the "
        "server sent it (no line feed added). An empty answer prints nothing. Without --assembly, "
        "--family or --show the request has no assembly and the server answers in the legacy "
        "format. The answer is checked (four keys, schema, status/content, UTF-8 length, "
        "--max-bytes) before anything is printed.",
    )
    _positionals(sub, query="What the next turn is about.")
    sub.add_argument(
        "--max-bytes",
        type=int,
        metavar="N",
        help=f"Upper bound on the UTF-8 length of the content, {MAX_BYTES['minimum']} to "
        f"{CONTRACT_MAX_BYTES} (server default {MAX_BYTES['default']}).",
    )
    sub.add_argument(
        "--assembly",
        metavar="JSON",
        help="The assembly object, sent as given: '{}' for the standard text with its defaults, "
        "'{\"sections\": []}' for nothing. Not with --family or --show.",
    )
    sub.add_argument(
        "--family",
        action="append",
        type=_family_section,
        metavar="FAMILY:LIMIT",
        help="A section of the standard text, such as memory:6 or experience:2; repeat it, in output "
        f"order. Families: {', '.join(FAMILIES)}.",
    )
    sub.add_argument(
        "--show",
        action="append",
        choices=SHOW_FIELDS,
        help="An optional metadata line in each item of the standard text; repeat for both.",
    )
    sub.add_argument(
        "--explain",
        action="store_true",
        help="Print the receipt instead of the text: a table of every recalled candidate, whether "
        "the text includes it and, if not, why (with --json, the whole explanation).",
    )
    sub.set_defaults(run=_prepare)


def _positionals(sub: argparse.ArgumentParser, **helps: str) -> None:
    """`SCOPE_ID`, then one positional argument per keyword, named by it, with its help."""
    for name, help in {"scope_id": "The Scope, such as project:demo.", **helps}.items():
        sub.add_argument(name, metavar=name.upper(), help=help)


def _family_section(value: str) -> dict[str, Any]:
    family, sep, limit = value.partition(":")
    if not sep or not family:
        raise argparse.ArgumentTypeError(f"{value!r} is not FAMILY:LIMIT, such as memory:6")
    try:
        return {"family": family, "limit": int(limit)}
    except ValueError:
        raise argparse.ArgumentTypeError(f"the limit in {value!r} is not a whole number") from None


def _health(pc: PowerContextClient, args: argparse.Namespace) -> dict[str, Any]:
    return {"live": pc.health_live().status, "ready": pc.health_ready().status}


def _remember_batch(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    if not 1 <= args.batch_size <= MAX_BATCH:
        raise UsageError(f"--batch-size must be between 1 and {MAX_BATCH}")
    citations: list[Any] = []
    duplicate: list[bool] = []
    deduplicate = False if args.keep_duplicates else None
    with _open_text(args.file) as lines:
        for batch in _batches(_entry_lines(lines), args.batch_size):
            try:
                result = pc.remember_batch(
                    args.scope_id, [entry for _, entry in batch], kind=args.kind, deduplicate=deduplicate
                )
            except PowerContextError:
                # Entry indexes in the error count from this batch's first line.
                print(
                    f"powercontext: the failed batch starts at line {batch[0][0]} of FILE; "
                    f"{len(citations)} entries were stored by earlier batches",
                    file=sys.stderr,
                )
                raise
            citations += result.citations
            # A server from before the duplicate check stores every entry.
            duplicate += [False] * len(result.citations) if result.duplicate is MISSING else result.duplicate
    return RememberBatchResult(citations=citations, duplicate=duplicate)


def _entry_lines(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    """(line number, entry) for each non-blank line."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            raise UsageError(f"line {number} of FILE is not JSON") from None
        if not isinstance(entry, (str, dict)):
            raise UsageError(f"line {number} of FILE must be a JSON object or string")
        yield number, entry


def _batches(entries: Iterable[tuple[int, Any]], size: int) -> Iterator[list[tuple[int, Any]]]:
    batch: list[tuple[int, Any]] = []
    for entry in entries:
        batch.append(entry)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


@contextlib.contextmanager
def _open_text(path: str) -> Iterator[IO[str]]:
    if path == "-":
        yield sys.stdin
        return
    try:
        with open(path, encoding="utf-8") as file:
            yield file
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def _prepare(pc: PowerContextClient, args: argparse.Namespace) -> None:
    assembly = _assembly_arg(args)
    if args.explain:
        explained = pc.explain_prepare_context(
            args.scope_id, args.query, max_bytes=args.max_bytes, assembly=assembly
        )
        if args.json:
            print_result(explained, True)
        else:
            print(receipt_table(explained), end="")
        return
    prepared = pc.prepare_context(args.scope_id, args.query, max_bytes=args.max_bytes, assembly=assembly)
    cap = CONTRACT_MAX_BYTES if args.max_bytes is None else args.max_bytes
    context = validate_prepared_context(prepared, max_bytes=cap)
    if args.json:
        print_result(prepared, True)
    elif context is None:
        fail("nothing to prepare: the answer is empty")
    else:
        write_exact(context.content)


def _assembly_arg(args: argparse.Namespace) -> dict[str, Any] | Unset | None:
    if args.assembly is not None:
        if args.family or args.show:
            raise UsageError("--assembly cannot be combined with --family or --show")
        try:
            assembly = json.loads(args.assembly)
        except ValueError as exc:
            raise UsageError(f"--assembly is not valid JSON: {exc}") from None
        if assembly is not None and not isinstance(assembly, dict):
            raise UsageError("--assembly must be a JSON object")
        return assembly
    if not args.family and not args.show:
        return UNSET
    assembly = {}
    if args.family:
        assembly["sections"] = args.family
    if args.show:
        assembly["show"] = args.show
    return assembly
