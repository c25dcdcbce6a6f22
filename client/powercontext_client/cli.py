"""The `powercontext` command: one subcommand per client method, plus `serve`, `token` and `copy-store`.

Each client subcommand is the `PowerContextClient` method of the same name with `-` for `_`
(`create-scope` is `create_scope`), and `prepare` is `prepare_context`. `serve`, `token` and
`copy-store` belong to the server package, which registers them in the `powercontext.commands`
entry-point group; the client loads one only when asked for it and never imports the server, so a
client-only install runs every other command. `mcp` serves the API as MCP tools (`_mcp_server`,
which needs the `mcp` extra and is imported only then). `docs/cli.md` documents every command and
option; `powercontext COMMAND --help` prints the same.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import IO, Any

from pydantic import BaseModel, ValidationError

from powercontext_api.client import UNSET, Unset
from powercontext_api.models import GetScopeParameters, PrepareContextRequest, RememberBatchResult
from powercontext_api.operations import HOST_DEFAULT_ASSEMBLY

from ._client import PowerContextClient
from ._errors import (
    InvalidArgumentError,
    PowerContextError,
    PowerContextHTTPError,
    TransportError,
)
from ._messages import http_message, transport_message, validation_summary
from ._receipt import receipt_table
from ._transfer_cli import TRANSFER_COMMANDS, over_api
from ._transfer_cli import main as transfer_main
from ._validate import validate_prepared_context
from ._version import VERSION

DEFAULT_URL = "http://127.0.0.1:8000"
URL_ENV = "POWERCONTEXT_URL"
TOKEN_ENV = "POWERCONTEXT_TOKEN"
# Commands another installed package provides (the server: serve, token, copy-store, export,
# import), found by entry point so that the client never imports it; each is `main(argv) -> exit status`.
COMMAND_GROUP = "powercontext.commands"
SERVER_COMMANDS = ("serve", "token", "copy-store", "export", "import")
# Install hints name the repository, not an index: PowerContext is not published yet, and
# `powercontext` on PyPI is another project.
HOST_COMMANDS = ("setup", "doctor", "bind")  # run by powercontext_host.cli
MCP_INSTALL = "pip install './client[mcp]' (in a PowerContext checkout)"
SERVER_INSTALL = "pip install . (in a PowerContext checkout)"
CONTRACT_MAX_BYTES = 32768  # the largest `max_bytes` the contract allows, the cap when none is given

EXIT_OK = 0
EXIT_API_ERROR = 1
EXIT_USAGE = 2

_FAMILIES = ("memory", "experience", "profile", "topic-memory")
# Printed as one line of JSON, to paste into the next command, rather than as `parent.field` lines.
_REF_KEYS = frozenset({"citation", "artifact", "committed"})
# The list of a list answer; each item prints as its own block.
_LIST_KEYS = frozenset({"scopes", "entries", "hits", "candidates"})


class UsageError(Exception):
    """A command line the CLI cannot turn into a request (exit status 2)."""


# Entry point ---------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (0 ok, 1 API or connection error, 2 usage error)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    plugins = {ep.name: ep for ep in entry_points(group=COMMAND_GROUP)}
    server_command = _server_command(args_list, {*SERVER_COMMANDS, *plugins})
    if server_command is not None:
        if args_list[server_command] in TRANSFER_COMMANDS and over_api(args_list, os.environ, URL_ENV):
            url = os.environ.get(URL_ENV) or DEFAULT_URL
            return transfer_main(args_list, url, os.environ.get(TOKEN_ENV) or None)
        return _run_server_command(args_list[server_command:], plugins)
    host_command = _server_command(args_list, set(HOST_COMMANDS))
    if host_command is not None:
        return _run_host_command(args_list, host_command)
    parser = build_parser(os.environ)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # --help (0) or an argparse usage error (2)
        return _exit_status(exc)
    if args.command == "mcp":  # a long-running server with its own (async) client
        return _mcp(args)
    command: Callable[[PowerContextClient, argparse.Namespace], Any] = args.run
    try:
        with PowerContextClient(args.url, args.token, timeout=args.timeout) as pc:
            result = command(pc, args)
        if result is not None:
            _print_result(result, args.json)
    except UsageError as exc:
        _fail(f"{exc}")
        return EXIT_USAGE
    except InvalidArgumentError as exc:
        _fail(f"invalid argument: {exc}")
        return EXIT_USAGE
    except TransportError as exc:
        _fail(transport_message(exc, args.url, args.timeout))
        return EXIT_API_ERROR
    except PowerContextHTTPError as exc:
        _fail(http_message(exc))
        return EXIT_API_ERROR
    except PowerContextError as exc:
        _fail(str(exc))
        return EXIT_API_ERROR
    except BrokenPipeError:  # `powercontext prepare ... | head`: the reader left; not an error to report
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_API_ERROR
    return EXIT_OK


def _server_command(args: list[str], names: set[str]) -> int | None:
    """Index of a server command (one of `names`) when it is the command word (after any global options)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("--url", "--token", "--timeout"):
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return i if arg in names else None
    return None


def _run_host_command(args: list[str], at: int) -> int:
    """`setup`, `doctor` and `bind` belong to the agent hosts' core (standard library only, like the
    hooks they install); a `--url` given before the command word applies to `setup`."""
    from powercontext_host.cli import main as host_main

    command = args[at:]
    url = next((args[i + 1] for i in range(at - 1) if args[i] == "--url"), None)
    if url is not None and command[0] == "setup":
        command = [*command, "--url", url]
    return host_main(command)


def _run_server_command(args: list[str], plugins: Mapping[str, EntryPoint]) -> int:
    entry = plugins.get(args[0])
    try:
        if entry is None:
            raise ModuleNotFoundError(name="powercontext_server")
        server_main: Callable[[list[str]], int] = entry.load()
    except ModuleNotFoundError as exc:
        _fail(
            f"`powercontext {args[0]}` needs the PowerContext server, which is not installed here "
            f"(missing module {exc.name!r}); install the server with: {SERVER_INSTALL}"
        )
        return EXIT_API_ERROR
    try:
        return server_main(args)
    except SystemExit as exc:  # --help or a usage error of the server's own parser
        return _exit_status(exc)


def _exit_status(exc: SystemExit) -> int:
    if exc.code is None:
        return EXIT_OK
    return exc.code if isinstance(exc.code, int) else EXIT_USAGE


# Parser --------------------------------------------------------------------------------------------
def build_parser(env: Mapping[str, str]) -> argparse.ArgumentParser:
    """The whole command line; `env` supplies the defaults of `--url` and `--token`."""
    parser = argparse.ArgumentParser(
        prog="powercontext",
        description=(
            "PowerContext from the terminal: run the server (serve, token, copy-store) or call one API operation. "
            "Each client command mirrors the Python client method of the same name."
        ),
        epilog=(
            "Exit status: 0 success, 1 API or connection error (one line on stderr: status, code, "
            "message), 2 usage error. `powercontext COMMAND --help` documents each command."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {VERSION}")
    _add_connection_options(parser, env, top_level=True)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    shared = argparse.ArgumentParser(add_help=False)
    _add_connection_options(shared, env, top_level=False)

    def command(name: str, help: str, run: Callable[..., Any], description: str | None = None) -> Any:
        sub = commands.add_parser(name, help=help, description=description or help, parents=[shared])
        sub.set_defaults(run=run)
        return sub

    # Server (handled before parsing; listed here for --help) ----------------------------------
    commands.add_parser(
        "serve", help="Run the HTTP server (needs the server package; `serve --help` for its flags)."
    )
    commands.add_parser("token", help="Print a new bearer token and its SHA-256 (needs the server package).")
    commands.add_parser(
        "copy-store",
        help="Copy a whole database into an empty one, e.g. SQLite to OceanBase (needs the server package).",
    )
    commands.add_parser(
        "export",
        help=(
            "Write one Scope with all it holds to a JSON Lines file: over the API with --url, else "
            "from the database (--data-dir/--database-url, needs the server package)."
        ),
    )
    commands.add_parser(
        "import",
        help=(
            "Recreate a Scope from an export file: over the API with --url, else into the database "
            "(--data-dir/--database-url, needs the server package)."
        ),
    )

    # MCP ----------------------------------------------------------------------------------------
    sub = commands.add_parser(
        "mcp",
        help="Serve the API as MCP tools, on stdio or streamable HTTP (needs the mcp extra).",
        description=(
            "An MCP server for agent hosts: each tool is one API operation, called on the server of "
            "--url with --token. It speaks stdio unless --http is given. Needs the MCP SDK: "
            f"{MCP_INSTALL}."
        ),
        parents=[shared],
    )
    sub.add_argument(
        "--scope",
        metavar="SCOPE_ID",
        help="The Scope tools use when a call leaves scope_id out; scope_id is then optional in every tool.",
    )
    sub.add_argument(
        "--assembly",
        type=_assembly_option,
        default=HOST_DEFAULT_ASSEMBLY,
        metavar="JSON",
        help=(
            "The assembly object prepare_context sends when a call sets none, or `legacy` for none "
            f"(default {HOST_DEFAULT_ASSEMBLY}: the most evidence in the project's evaluation)."
        ),
    )
    sub.add_argument(
        "--http",
        type=_http_address,
        metavar="[HOST:]PORT",
        help=(
            "Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio; HOST defaults to "
            "127.0.0.1 and port 0 picks a free one (the address is printed on stderr)."
        ),
    )
    sub.add_argument(
        "--http-max-sessions",
        type=_positive_int,
        default=128,
        metavar="N",
        help="Open HTTP sessions at most, all clients together; beyond, the least recently used ends (default 128).",
    )
    sub.add_argument(
        "--http-client-sessions",
        type=_positive_int,
        default=32,
        metavar="N",
        help="Open HTTP sessions at most per client address; beyond, its least recently used ends (default 32).",
    )
    sub.add_argument(
        "--http-idle-minutes",
        type=_positive_float,
        default=10.0,
        metavar="MINUTES",
        help="An HTTP session with no request in flight this long ends (default 10).",
    )

    # Service ------------------------------------------------------------------------------------
    command("health", "Check that the server is live and ready (exit 1 when it is not).", _health)
    command("capabilities", "Show the API version, stored families and prepare limits.", _capabilities)

    # Scopes -------------------------------------------------------------------------------------
    sub = command(
        "create-scope", "Create a Scope, optionally reading other Scopes through references.", _create_scope
    )
    sub.add_argument("scope_id", metavar="SCOPE_ID", help="The new Scope's id, such as project:demo.")
    sub.add_argument("--title", help="Title (default empty).")
    sub.add_argument("--summary", help="Summary (default empty).")
    _add_reference_option(sub)
    sub.add_argument(
        "--exist-ok",
        action="store_true",
        help="When the id is taken, print the existing Scope (unchanged) instead of failing with 409.",
    )
    sub = command("get-scope", "Show one Scope.", _get_scope)
    _add_scope_argument(sub)
    sub = command(
        "delete-scope",
        "Erase a Scope with everything it holds; asks for --yes.",
        _delete_scope,
        description=(
            "Erase the Scope and every entry, revision, candidate and index row it holds, for good "
            "(needs scope.erase). Refused while another Scope references it."
        ),
    )
    _add_scope_argument(sub)
    sub.add_argument("--yes", action="store_true", help="Confirm the erasure (required).")
    sub = command("list-scopes", "List the Scopes you may read, in id order, one page.", _list_scopes)
    _add_page_options(sub, limit_help="Scopes per page (server default 50, at most 200).")
    sub = command(
        "update-scope",
        "Change a Scope's title, summary or references; options left out keep their value.",
        _update_scope,
    )
    _add_scope_argument(sub)
    _add_expected_version(sub, "The Scope's current version (get-scope shows it); a stale one is a 409.")
    sub.add_argument("--title", help="New title.")
    sub.add_argument("--summary", help="New summary.")
    refs = sub.add_mutually_exclusive_group()
    _add_reference_option(refs, replace=True)
    refs.add_argument(
        "--no-references", action="store_true", help="Remove every Context Reference of the Scope."
    )

    # Memory -------------------------------------------------------------------------------------
    sub = command("remember", "Add a Memory entry; prints it with its exact citation.", _remember)
    _add_scope_argument(sub)
    sub.add_argument("text", metavar="TEXT", help="The entry's text; - reads it from standard input.")
    sub.add_argument("--kind", help="A label such as fact or decision (server default fact).")
    sub.add_argument(
        "--expected-revision",
        type=int,
        metavar="N",
        help="The Memory revision this write is based on (0 before the first write); stale is a 409.",
    )
    sub = command(
        "remember-batch",
        "Add many Memory entries from a JSON Lines file; prints every citation, in order.",
        _remember_batch,
        description=(
            'Add the entries of FILE (JSON Lines: each line an object {"text": ..., "kind": ...} '
            "or a JSON string; - reads standard input) in requests of --batch-size entries. Each "
            "request is one transaction: an invalid entry stores nothing of its batch, and the error "
            'says how many entries earlier batches stored. Prints {"citations": [...]} for all.'
        ),
    )
    _add_scope_argument(sub)
    sub.add_argument("file", metavar="FILE", help="JSON Lines of entries; - reads standard input.")
    sub.add_argument("--kind", help="The kind of entries given as plain strings (server default fact).")
    sub.add_argument(
        "--batch-size", type=int, default=500, metavar="N", help="Entries per request, 1 to 1000 (500)."
    )
    sub = command(
        "revise-memory-entry", "Replace the text of the entry a head citation names.", _revise_memory_entry
    )
    _add_scope_argument(sub)
    _add_citation_argument(sub)
    sub.add_argument("text", metavar="TEXT", help="The new text; - reads it from standard input.")
    sub = command(
        "erase-memory-entry",
        "Erase every version of an entry for good (needs scope.erase).",
        _erase_memory_entry,
    )
    _add_scope_argument(sub)
    sub.add_argument("entry_id", metavar="ENTRY_ID", help="The entry, such as entry-3.")
    sub = command("retire-memory-entry", "Retire the entry a head citation names.", _retire_memory_entry)
    _add_scope_argument(sub)
    _add_citation_argument(sub)
    sub = command(
        "get-memory-entry", "Exact read of a cited entry version, old ones included.", _get_memory_entry
    )
    _add_scope_argument(sub)
    _add_citation_argument(sub)
    sub = command(
        "list-memory-entries", "List the active Memory entries in creation order, one page.", _list_entries
    )
    _add_scope_argument(sub)
    _add_page_options(sub, limit_help="Entries per page (server default 50, at most 200).")
    sub = command("search-memory", "Full-text search of the Scope's Memory, best hit first.", _search_memory)
    _add_search_arguments(sub)

    # Exact reads --------------------------------------------------------------------------------
    sub = command(
        "get-artifact-revision", "Exact read of any family's committed revision.", _get_artifact_revision
    )
    _add_scope_argument(sub)
    sub.add_argument("family", metavar="FAMILY", choices=_FAMILIES, help=f"One of {', '.join(_FAMILIES)}.")
    sub.add_argument("artifact_id", metavar="ARTIFACT_ID", help="Such as experience-1, profile or memory.")
    sub.add_argument("revision", metavar="REVISION", type=int, help="The revision number, from 1.")

    # Experience ---------------------------------------------------------------------------------
    sub = command(
        "propose-experience",
        "Propose an Experience (or the next revision of one) as a pending Candidate.",
        _propose_experience,
    )
    _add_scope_argument(sub)
    for field, text in (
        ("situation", "What was going on."),
        ("action", "What was done."),
        ("outcome", "What happened."),
        ("lesson", "What to do next time."),
    ):
        sub.add_argument(f"--{field}", required=True, help=f"{text} Required.")
    sub.add_argument(
        "--artifact-id", help="Propose the next revision of this Experience instead of a new one."
    )
    sub = command(
        "search-experience", "Search approved Experience, in the order prepare uses.", _search_experience
    )
    _add_search_arguments(sub)
    sub = command("get-experience", "Exact read of one Experience revision.", _get_experience)
    _add_scope_argument(sub)
    _add_ref_arguments(sub, "experience-1")

    # Profile ------------------------------------------------------------------------------------
    sub = command(
        "propose-profile", "Propose the next Profile snapshot as a pending Candidate.", _propose_profile
    )
    _add_scope_argument(sub)
    sub.add_argument(
        "content", metavar="CONTENT", help="The Profile Markdown; - reads it from standard input."
    )

    # Candidates ---------------------------------------------------------------------------------
    for name, verb, run in (
        ("approve-candidate", "Approve a pending Candidate, committing its revision.", _approve),
        ("reject-candidate", "Reject a pending Candidate; nothing is committed.", _reject),
    ):
        sub = command(name, verb, run)
        _add_scope_argument(sub)
        sub.add_argument("candidate_id", metavar="CANDIDATE_ID", help="Such as candidate-1.")
        _add_expected_version(
            sub, "The Candidate's current version (propose prints it); a stale one is a 409."
        )
    sub = command("list-candidates", "List Candidates in proposal order, one page.", _list_candidates)
    _add_scope_argument(sub)
    sub.add_argument(
        "--state", choices=("pending", "approved", "rejected"), help="Only Candidates in this state."
    )
    _add_page_options(sub, limit_help="Candidates per page (server default 50, at most 200).")
    sub = command("get-candidate", "Show one Candidate.", _get_candidate)
    _add_scope_argument(sub)
    sub.add_argument("candidate_id", metavar="CANDIDATE_ID", help="Such as candidate-1.")

    # Topic Memory -------------------------------------------------------------------------------
    sub = command("put-topic", "Create a topic, or commit the next revision of one.", _put_topic)
    _add_scope_argument(sub)
    sub.add_argument("--title", required=True, help="The topic's title. Required.")
    sub.add_argument("--summary", required=True, help="A short summary. Required.")
    sub.add_argument("--detail", help="Longer detail (default empty).")
    sub.add_argument("--artifact-id", help="Revise this topic, or create it under this id (default topic-N).")
    sub.add_argument(
        "--expected-revision",
        type=int,
        metavar="N",
        help="The topic's current revision (0 when it does not exist yet); stale is a 409.",
    )
    sub = command(
        "search-topics", "Search the Scope's topics, with snippets of their detail.", _search_topics
    )
    _add_search_arguments(sub)
    sub = command("get-topic", "Exact read of one topic revision with its full detail.", _get_topic)
    _add_scope_argument(sub)
    _add_ref_arguments(sub, "topic-1")

    # Context ------------------------------------------------------------------------------------
    sub = command(
        "prepare",
        "Print the prepared context for a query, byte for byte.",
        _prepare,
        description=(
            "Ask for the prepared context and write its content to standard output exactly as the "
            "server sent it (no line feed added). An empty answer prints nothing. Without --assembly, "
            "--family or --show the request has no assembly and the server answers in the legacy "
            "format. The answer is checked (four keys, schema, status/content, UTF-8 length, "
            "--max-bytes) before anything is printed."
        ),
    )
    _add_scope_argument(sub)
    sub.add_argument("query", metavar="QUERY", help="What the next turn is about.")
    sub.add_argument(
        "--max-bytes",
        type=int,
        metavar="N",
        help="Upper bound on the UTF-8 length of the content, 512 to 32768 (server default 8000).",
    )
    sub.add_argument(
        "--assembly",
        metavar="JSON",
        help=(
            "The assembly object, sent as given: '{}' for the standard text with its defaults, "
            "'{\"sections\": []}' for nothing. Not with --family or --show."
        ),
    )
    sub.add_argument(
        "--family",
        action="append",
        type=_family_section,
        metavar="FAMILY:LIMIT",
        help=(
            "A section of the standard text, such as memory:6 or experience:2; repeat it, in output "
            f"order. Families: {', '.join(_FAMILIES)}."
        ),
    )
    sub.add_argument(
        "--show",
        action="append",
        choices=("confidence", "recall_rank"),
        help="An optional metadata line in each item of the standard text; repeat for both.",
    )
    sub.add_argument(
        "--explain",
        action="store_true",
        help=(
            "Print the receipt instead of the text: a table of every recalled candidate, whether "
            "the text includes it and, if not, why (with --json, the whole explanation)."
        ),
    )
    return parser


def _add_connection_options(
    parser: argparse.ArgumentParser, env: Mapping[str, str], *, top_level: bool
) -> None:
    # On a subcommand the options default to SUPPRESS, so a value given before the command stays.
    def default(value: Any) -> Any:
        return value if top_level else argparse.SUPPRESS

    group = parser.add_argument_group("connection and output")
    url = env.get(URL_ENV) or DEFAULT_URL
    group.add_argument(
        "--url", default=default(url), help=f"The server's base URL ({URL_ENV}, default {DEFAULT_URL})."
    )
    group.add_argument(
        "--token",
        default=default(env.get(TOKEN_ENV) or None),
        help=f"Bearer token sent as Authorization ({TOKEN_ENV}; none by default).",
    )
    group.add_argument(
        "--timeout",
        type=float,
        default=default(10.0),
        metavar="SECONDS",
        help="Seconds allowed to connect and for each read (default 10).",
    )
    group.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="Print the answer as one line of JSON (the API's field names) instead of text.",
    )


def _add_scope_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scope_id", metavar="SCOPE_ID", help="The Scope, such as project:demo.")


def _add_reference_option(parser: Any, *, replace: bool = False) -> None:
    parser.add_argument(
        "--reference",
        "--ref",
        action="append",
        dest="references",
        metavar="SCOPE_ID",
        help=(
            "A Scope this Scope reads (a Context Reference); repeat it, in order."
            + (" Replaces all the current references." if replace else "")
        ),
    )


def _add_page_options(parser: argparse.ArgumentParser, *, limit_help: str) -> None:
    parser.add_argument("--limit", type=int, metavar="N", help=limit_help)
    parser.add_argument("--cursor", help="The next_cursor printed by the previous page.")


def _add_search_arguments(parser: argparse.ArgumentParser) -> None:
    _add_scope_argument(parser)
    parser.add_argument("query", metavar="QUERY", help="The search text.")
    parser.add_argument(
        "--limit", type=int, metavar="N", help="At most N hits (server default 10, at most 50)."
    )


def _add_citation_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "citation",
        metavar="CITATION",
        help=(
            "The entry's citation as JSON, or the JSON of an entry holding one (what remember --json "
            "prints); - reads it from standard input."
        ),
    )


def _add_ref_arguments(parser: argparse.ArgumentParser, example: str) -> None:
    parser.add_argument("artifact_id", metavar="ARTIFACT_ID", help=f"Such as {example}.")
    parser.add_argument("revision", metavar="REVISION", type=int, help="The revision number, from 1.")


def _add_expected_version(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--expected-version", type=int, required=True, metavar="N", help=f"{help} Required.")


def _family_section(value: str) -> dict[str, Any]:
    family, sep, limit = value.partition(":")
    if not sep or not family:
        raise argparse.ArgumentTypeError(f"{value!r} is not FAMILY:LIMIT, such as memory:6")
    try:
        return {"family": family, "limit": int(limit)}
    except ValueError:
        raise argparse.ArgumentTypeError(f"the limit in {value!r} is not a whole number") from None


# Commands ------------------------------------------------------------------------------------------
def _health(pc: PowerContextClient, args: argparse.Namespace) -> dict[str, Any]:
    return {"live": pc.health_live().status, "ready": pc.health_ready().status}


def _capabilities(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.capabilities()


def _create_scope(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.create_scope(
        args.scope_id,
        title=args.title,
        summary=args.summary,
        context_references=args.references,
        exist_ok=args.exist_ok,
    )


def _get_scope(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.get_scope(args.scope_id)


def _delete_scope(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    if not args.yes:
        raise UsageError("delete-scope erases the Scope for good: add --yes to confirm")
    return pc.delete_scope(args.scope_id)


def _erase_memory_entry(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.erase_memory_entry(args.scope_id, args.entry_id)


def _list_scopes(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.list_scopes(limit=args.limit, cursor=args.cursor)


def _update_scope(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    references = [] if args.no_references else args.references
    return pc.update_scope(
        args.scope_id,
        expected_version=args.expected_version,
        title=args.title,
        summary=args.summary,
        context_references=references,
    )


def _remember(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.remember(
        args.scope_id, _text_arg(args.text), kind=args.kind, expected_revision=args.expected_revision
    )


def _remember_batch(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    if not 1 <= args.batch_size <= 1000:
        raise UsageError("--batch-size must be between 1 and 1000")
    citations: list[Any] = []
    with _open_text(args.file) as lines:
        for batch in _batches(_entry_lines(lines), args.batch_size):
            try:
                result = pc.remember_batch(args.scope_id, [entry for _, entry in batch], kind=args.kind)
            except PowerContextError:
                # Entry indexes in the error count from this batch's first line.
                print(
                    f"powercontext: the failed batch starts at line {batch[0][0]} of FILE; "
                    f"{len(citations)} entries were stored by earlier batches",
                    file=sys.stderr,
                )
                raise
            citations += result.citations
    return RememberBatchResult(citations=citations)


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


def _revise_memory_entry(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    if args.citation == "-" and args.text == "-":
        raise UsageError("CITATION and TEXT cannot both be read from standard input")
    return pc.revise_memory_entry(args.scope_id, _citation_arg(args.citation), _text_arg(args.text))


def _retire_memory_entry(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.retire_memory_entry(args.scope_id, _citation_arg(args.citation))


def _get_memory_entry(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.get_memory_entry(args.scope_id, _citation_arg(args.citation))


def _list_entries(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.list_memory_entries(args.scope_id, limit=args.limit, cursor=args.cursor)


def _search_memory(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.search_memory(args.scope_id, args.query, limit=args.limit)


def _get_artifact_revision(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.get_artifact_revision(args.scope_id, args.family, args.artifact_id, args.revision)


def _propose_experience(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.propose_experience(
        args.scope_id,
        situation=args.situation,
        action=args.action,
        outcome=args.outcome,
        lesson=args.lesson,
        artifact_id=args.artifact_id,
    )


def _search_experience(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.search_experience(args.scope_id, args.query, limit=args.limit)


def _get_experience(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    ref = {"family": "experience", "artifact_id": args.artifact_id, "revision": args.revision}
    return pc.get_experience(args.scope_id, ref)


def _propose_profile(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.propose_profile(args.scope_id, _text_arg(args.content))


def _approve(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.approve_candidate(args.scope_id, args.candidate_id, expected_version=args.expected_version)


def _reject(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.reject_candidate(args.scope_id, args.candidate_id, expected_version=args.expected_version)


def _list_candidates(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.list_candidates(args.scope_id, state=args.state, limit=args.limit, cursor=args.cursor)


def _get_candidate(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.get_candidate(args.scope_id, args.candidate_id)


def _put_topic(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.put_topic(
        args.scope_id,
        title=args.title,
        summary=args.summary,
        artifact_id=args.artifact_id,
        detail=args.detail,
        expected_revision=args.expected_revision,
    )


def _search_topics(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    return pc.search_topics(args.scope_id, args.query, limit=args.limit)


def _get_topic(pc: PowerContextClient, args: argparse.Namespace) -> BaseModel:
    ref = {"family": "topic-memory", "artifact_id": args.artifact_id, "revision": args.revision}
    return pc.get_topic(args.scope_id, ref)


def _prepare(pc: PowerContextClient, args: argparse.Namespace) -> None:
    if args.explain:
        explained = pc.explain_prepare_context(
            args.scope_id, args.query, max_bytes=args.max_bytes, assembly=_assembly_arg(args)
        )
        if args.json:
            _print_result(explained, True)
        else:
            print(receipt_table(explained), end="")
        return
    prepared = pc.prepare_context(
        args.scope_id, args.query, max_bytes=args.max_bytes, assembly=_assembly_arg(args)
    )
    cap = CONTRACT_MAX_BYTES if args.max_bytes is None else args.max_bytes
    context = validate_prepared_context(prepared, max_bytes=cap)
    if args.json:
        _print_result(prepared, True)
    elif context is None:
        _fail("nothing to prepare: the answer is empty")
    else:
        _write_exact(context.content)


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


# MCP -----------------------------------------------------------------------------------------------
def _mcp(args: argparse.Namespace) -> int:
    if args.scope is not None:
        try:
            GetScopeParameters.model_validate({"scope_id": args.scope})
        except ValidationError as exc:
            _fail(f"invalid --scope: {validation_summary(exc)}")
            return EXIT_USAGE
    try:
        # The MCP SDK is an optional extra: imported here only, so the rest of the CLI works without it.
        from . import _mcp_server
        from ._mcp_sessions import SessionLimits
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("powercontext"):
            raise
        _fail(
            "`powercontext mcp` needs the MCP SDK (the mcp package), which is not installed here "
            f"(missing module {exc.name!r}); install it with: {MCP_INSTALL}"
        )
        return EXIT_API_ERROR
    sessions = SessionLimits(
        max_sessions=args.http_max_sessions,
        per_client=min(args.http_client_sessions, args.http_max_sessions),
        idle_timeout_s=args.http_idle_minutes * 60,
    )
    settings = _mcp_server.McpSettings(
        url=args.url,
        token=args.token,
        timeout=args.timeout,
        scope=args.scope,
        assembly=args.assembly,
        http=args.http,
        sessions=sessions,
    )
    return _mcp_server.run(settings)


def _assembly_option(value: str) -> str | None:
    """A JSON object the contract accepts as `assembly`, compacted, or None for `legacy`."""
    if value.strip() == "legacy":
        return None
    try:
        parsed = json.loads(value)
        PrepareContextRequest.model_validate({"scope_id": "s", "query": "q", "assembly": parsed})
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(
            f"not an assembly the contract accepts: {validation_summary(exc)}"
        ) from None
    except ValueError:
        raise argparse.ArgumentTypeError("not a JSON object or `legacy`") from None
    return json.dumps(parsed, separators=(",", ":"), ensure_ascii=False)


def _http_address(value: str) -> tuple[str, int]:
    """`PORT`, `HOST:PORT` or `[IPv6]:PORT`; the host defaults to loopback."""
    host, _, port = value.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    host = host[1:-1] if bracketed else host or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535 or (":" in host and not bracketed):
        raise argparse.ArgumentTypeError(f"{value!r} is not [HOST:]PORT with a port from 0 to 65535")
    return host, int(port)


def _positive_int(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number from 1")
    return int(value)


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise argparse.ArgumentTypeError(f"{value!r} is not a number above 0")
    return number


# Arguments from text -------------------------------------------------------------------------------
def _text_arg(value: str) -> str:
    return sys.stdin.read() if value == "-" else value


def _citation_arg(value: str) -> dict[str, Any]:
    text = sys.stdin.read() if value == "-" else value
    try:
        data = json.loads(text)
    except ValueError:
        raise UsageError(
            "CITATION must be JSON: the citation object, or an entry holding one (remember --json)"
        ) from None
    if isinstance(data, dict) and isinstance(data.get("citation"), dict):
        data = data["citation"]
    if not isinstance(data, dict):
        raise UsageError("CITATION must be a JSON object")
    return data


# Output --------------------------------------------------------------------------------------------
def _print_result(result: BaseModel | Mapping[str, Any], as_json: bool) -> None:
    data = result.model_dump(mode="json", by_alias=True) if isinstance(result, BaseModel) else dict(result)
    if as_json:
        print(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
        return
    lists = [key for key, value in data.items() if isinstance(value, list) and key in _LIST_KEYS]
    if lists:
        (key,) = lists
        items = data[key]
        blocks = ["\n".join(_lines(item)) for item in items] or [f"(no {key})"]
        print("\n\n".join(blocks))
        if data.get("next_cursor") is not None:
            print(f"\nnext_cursor: {data['next_cursor']}")
        return
    print("\n".join(_lines(data)))


def _lines(data: Mapping[str, Any], prefix: str = "") -> list[str]:
    lines: list[str] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and key not in _REF_KEYS:
            lines.extend(_lines(value, f"{name}."))
        elif isinstance(value, dict | list) and not _is_str_list(value):
            lines.append(f"{name}: {json.dumps(value, ensure_ascii=False, separators=(',', ':'))}")
        elif isinstance(value, list):
            lines.append(f"{name}: {', '.join(value)}" if value else f"{name}:")
        elif value is None or isinstance(value, bool):
            lines.append(f"{name}: {json.dumps(value)}")
        else:
            text = str(value).rstrip("\n").replace("\n", "\n  ")
            lines.append(f"{name}: {text}" if text else f"{name}:")
    return lines


def _is_str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _write_exact(content: str) -> None:
    stdout = sys.stdout
    data = content.encode("utf-8")
    buffer: IO[bytes] | None = getattr(stdout, "buffer", None)
    if buffer is None:
        stdout.write(content)
        stdout.flush()
        return
    stdout.flush()
    buffer.write(data)
    buffer.flush()


def _fail(message: str) -> None:
    # Always one line, whatever the server's message holds.
    print("powercontext: " + " ".join(message.splitlines()), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
