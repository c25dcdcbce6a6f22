"""The `powercontext` command: one subcommand per client method, plus `serve`, `token` and `copy-store`.

Each client subcommand is the `PowerContextClient` method of the same name with `-` for `_`
(`create-scope` is `create_scope`), built from the operation table (`_cli_commands`); `health`,
`remember-batch` and `prepare` (`prepare_context`) are written out (`_cli_custom`). `serve`, `token` and
`copy-store` belong to the server package, which registers them in the `powercontext.commands`
entry-point group; the client loads one only when asked for it and never imports the server, so a
client-only install runs every other command. `mcp` serves the API as MCP tools (`_mcp_server`,
which needs the `mcp` extra and is imported only then). `docs/cli.md` documents every command and
option; `powercontext COMMAND --help` prints the same.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from ._cli_commands import add_commands
from ._cli_custom import add_custom_commands
from ._cli_mcp import add_mcp_command, run_mcp
from ._cli_output import UsageError, fail, print_result
from ._client import PowerContextClient
from ._errors import (
    InvalidArgumentError,
    PowerContextError,
    PowerContextHTTPError,
    TransportError,
)
from ._messages import http_message, transport_message
from ._transfer_cli import TRANSFER_COMMANDS, over_api
from ._transfer_cli import main as transfer_main
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
SERVER_INSTALL = "pip install . (in a PowerContext checkout)"

EXIT_OK = 0
EXIT_API_ERROR = 1
EXIT_USAGE = 2


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
        return run_mcp(args)
    command: Callable[[PowerContextClient, argparse.Namespace], Any] = args.run
    try:
        with PowerContextClient(args.url, args.token, timeout=args.timeout) as pc:
            result = command(pc, args)
        if result is not None:
            print_result(result, args.json)
    except UsageError as exc:
        fail(f"{exc}")
        return EXIT_USAGE
    except InvalidArgumentError as exc:
        fail(f"invalid argument: {exc}")
        return EXIT_USAGE
    except TransportError as exc:
        fail(transport_message(exc, args.url, args.timeout))
        return EXIT_API_ERROR
    except PowerContextHTTPError as exc:
        fail(http_message(exc))
        return EXIT_API_ERROR
    except PowerContextError as exc:
        fail(str(exc))
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
        fail(
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
    # Handled before parsing (they belong to the server); listed here for --help.
    for name, help in SERVER_COMMAND_HELP.items():
        commands.add_parser(name, help=help)
    add_mcp_command(commands, shared)
    add_custom_commands(commands, shared)
    add_commands(commands, shared)
    return parser


SERVER_COMMAND_HELP = {
    "serve": "Run the HTTP server (needs the server package; `serve --help` for its flags).",
    "token": "Print a new bearer token and its SHA-256 (needs the server package).",
    "copy-store": "Copy a whole database into an empty one, e.g. SQLite to OceanBase (needs the server package).",
    "export": (
        "Write one Scope with all it holds to a JSON Lines file: over the API with --url, else "
        "from the database (--data-dir/--database-url, needs the server package)."
    ),
    "import": (
        "Recreate a Scope from an export file: over the API with --url, else into the database "
        "(--data-dir/--database-url, needs the server package)."
    ),
}


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


if __name__ == "__main__":
    sys.exit(main())
