"""`powercontext mcp`: an MCP server, on the official MCP Python SDK, in front of a PowerContext server.

Every tool call becomes one HTTP request through `AsyncPowerContextClient`, so the MCP server holds
no state of its own and acts with the `--token` it was given. It speaks stdio (one host, the host
starts it) or streamable HTTP (`--http`, on loopback unless told otherwise). This module imports
the SDK (the `mcp` extra); `cli` imports it only when `powercontext mcp` runs.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import mcp_types as types
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from powercontext_api.models import PrepareContextRequest, PreparedContext
from powercontext_api.operations import API_VERSION, HOST_DEFAULT_ASSEMBLY

from ._async_client import AsyncPowerContextClient
from ._errors import PowerContextError, PowerContextHTTPError, TransportError
from ._mcp_sessions import LOOPBACK_HOSTS, SessionLimits, streamable_http_app
from ._mcp_tools import ToolSpec, build_tools
from ._messages import http_message, transport_message, validation_summary
from ._serialize import dump
from ._validate import validate_prepared_context

SERVER_NAME: Final = "powercontext"
HTTP_PATH: Final = "/mcp"
# The contract's largest `max_bytes`: the cap a prepare answer is checked against when the call sets
# none (the server's default may be configured), as `powercontext prepare` does.
CONTRACT_MAX_BYTES: Final = 32768

INSTRUCTIONS: Final = (
    "PowerContext holds this project's Memory, Experience, Profile and topics. Before answering, "
    "call prepare_context with the request as `query` and use the text it returns as context: it "
    "cites where each part comes from, and it is empty when nothing relevant is stored. Call "
    "remember to keep a durable fact or decision. The search and get tools read single items."
)


@dataclass(frozen=True)
class McpSettings:
    """What `powercontext mcp` was asked for: the PowerContext server and how to serve MCP."""

    url: str
    token: str | None
    timeout: float
    scope: str | None = None
    # prepare_context's `assembly` when a call sets none, as JSON text; None: such a call is legacy.
    assembly: str | None = HOST_DEFAULT_ASSEMBLY
    http: tuple[str, int] | None = None  # (host, port); None serves stdio
    sessions: SessionLimits = field(default_factory=SessionLimits)  # of streamable HTTP


def run(settings: McpSettings) -> int:
    """Serve until the host closes stdio, or until interrupted on HTTP; returns the exit status."""
    sock = None
    if settings.http is not None:
        host, port = settings.http
        # Bound here rather than by uvicorn: a port in use is one line and exit 1, and port 0 works.
        try:
            sock = socket.create_server(
                (host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET
            )
        except OSError as exc:
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            print(f"powercontext: cannot listen on {host}:{port}: {reason}", file=sys.stderr)
            return 1
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C on a terminal: a normal way to stop
        anyio.run(_serve, settings, sock)
    return 0


async def _serve(settings: McpSettings, sock: socket.socket | None) -> None:
    async with AsyncPowerContextClient(settings.url, settings.token, timeout=settings.timeout) as client:
        assembly = None if settings.assembly is None else json.loads(settings.assembly)
        server = build_server(client, build_tools(settings.scope, assembly), settings)
        if sock is None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
        else:
            with sock:
                await _serve_http(server, sock, settings.sessions)


async def _serve_http(server: Server[Any], sock: socket.socket, limits: SessionLimits) -> None:
    host, bound_port = sock.getsockname()[:2]
    shown = f"[{host}]" if sock.family == socket.AF_INET6 else host
    print(f"powercontext mcp: streamable HTTP on http://{shown}:{bound_port}{HTTP_PATH}", file=sys.stderr)
    if host not in LOOPBACK_HOSTS:
        print(
            "powercontext mcp: listening beyond loopback; whoever reaches this port acts with this "
            "server's PowerContext token",
            file=sys.stderr,
        )
    sys.stderr.flush()
    app = streamable_http_app(server, HTTP_PATH, host, limits)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


def build_server(
    client: AsyncPowerContextClient, tools: Sequence[ToolSpec], settings: McpSettings
) -> Server[Any]:
    """The low-level SDK server: `tools/list` lists `tools`, `tools/call` runs one through `client`."""
    by_name = {tool.name: tool for tool in tools}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[mcp_tool(tool) for tool in tools])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            # Naming a tool that is not listed is the caller's protocol error, not a tool failure.
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        return await call(client, tool, params.arguments or {}, settings)

    def tool_input_schema(name: str) -> dict[str, Any] | None:
        tool = by_name.get(name)
        return None if tool is None else copy.deepcopy(dict(tool.input_schema))

    instructions = INSTRUCTIONS
    if settings.scope is not None:
        instructions += f" Tools use the Scope {settings.scope!r} when `scope_id` is left out."
    return Server(
        SERVER_NAME,
        version=API_VERSION,
        title="PowerContext",
        instructions=instructions,
        get_tool_input_schema=tool_input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def mcp_tool(tool: ToolSpec) -> types.Tool:
    """The SDK's `Tool` for a spec; schemas are copied so no listing can change the next one."""
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=copy.deepcopy(dict(tool.input_schema)),
        output_schema=None if tool.output_schema is None else copy.deepcopy(dict(tool.output_schema)),
        annotations=types.ToolAnnotations(
            read_only_hint=tool.read_only,
            destructive_hint=tool.destructive,  # erasure; the other writes only add revisions
            idempotent_hint=tool.read_only,
            open_world_hint=False,
        ),
    )


async def call(
    client: AsyncPowerContextClient, tool: ToolSpec, arguments: dict[str, Any], settings: McpSettings
) -> types.CallToolResult:
    """One tool call: arguments checked by the request model, one request, the answer or a tool error."""
    try:
        request = tool.request(arguments)
    except ValidationError as exc:
        return tool_error(f"invalid arguments for {tool.name}: {validation_summary(exc)}")
    try:
        answer = await client.call(tool.operation, request.body, path=request.path, query=request.query)
        if isinstance(answer, PreparedContext) and isinstance(request.body, PrepareContextRequest):
            return _prepared_text(answer, request.body)
    except PowerContextHTTPError as exc:
        return tool_error(http_message(exc))
    except TransportError as exc:
        return tool_error(transport_message(exc, settings.url, settings.timeout))
    except PowerContextError as exc:
        return tool_error(str(exc))
    data = dump(answer)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
    )


def _prepared_text(prepared: PreparedContext, request: PrepareContextRequest) -> types.CallToolResult:
    """The prepared `content`, unchanged, as one text item; an `empty` answer is one empty text item.

    The answer is checked as a host must before injecting it (`validate_prepared_context`, capped at
    the call's `max_bytes`, else the contract's largest). Empty text rather than a sentence, so that
    a host injecting the result injects exactly what HTTP prepare returned: nothing.
    """
    cap = request.max_bytes if "max_bytes" in request.model_fields_set else CONTRACT_MAX_BYTES
    context = validate_prepared_context(prepared, max_bytes=cap)
    text = "" if context is None else context.content
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def tool_error(message: str) -> types.CallToolResult:
    """A failed call as MCP reports it to the model: `isError` with one line of text."""
    line = " ".join(message.splitlines())  # a server's message may hold line feeds
    return types.CallToolResult(content=[types.TextContent(type="text", text=line)], is_error=True)
