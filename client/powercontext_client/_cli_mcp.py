"""`powercontext mcp`: its options, and serving the API as MCP tools (`_mcp_server`, imported only
when asked for: the MCP SDK is an optional extra)."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from pydantic import ValidationError

from powercontext_api.models import GetScopeParameters, PrepareContextRequest
from powercontext_api.operations import HOST_DEFAULT_ASSEMBLY

from ._cli_output import fail
from ._messages import validation_summary

MCP_INSTALL = "pip install './client[mcp]' (in a PowerContext checkout)"
EXIT_API_ERROR = 1
EXIT_USAGE = 2


def add_mcp_command(commands: Any, shared: argparse.ArgumentParser) -> None:
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

    sub.set_defaults(run=None)


def run_mcp(args: argparse.Namespace) -> int:
    if args.scope is not None:
        try:
            GetScopeParameters.model_validate({"scope_id": args.scope})
        except ValidationError as exc:
            fail(f"invalid --scope: {validation_summary(exc)}")
            return EXIT_USAGE
    try:
        # The MCP SDK is an optional extra: imported here only, so the rest of the CLI works without it.
        from . import _mcp_server
        from ._mcp_sessions import SessionLimits
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("powercontext"):
            raise
        fail(
            "`powercontext mcp` needs the MCP SDK (the mcp package), which is not installed here "
            f"(missing module {exc.name!r}); install it with: {MCP_INSTALL}"
        )
        return EXIT_API_ERROR
    sessions = SessionLimits(
        max_sessions=args.http_max_sessions,
        per_client=min(args.http_client_sessions, args.http_max_sessions),
        idle_timeout_s=args.http_idle_minutes * 60,
    )
    given = {name: getattr(args, name) for name in ("url", "token", "timeout", "scope", "assembly", "http")}
    settings = _mcp_server.McpSettings(**given, sessions=sessions)
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
