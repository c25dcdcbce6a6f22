"""Every example marked for testing in docs/*.md is replayed against a real server, in page order.

Marking convention (an HTML comment right before a fenced block; Markdown renders neither marker):

- `<!-- docs-test: curl -->` before a ```` ```console ```` block: each `$ curl ...` command in it is
  sent as written (`$PC` is the server, `-H "$JSON"` the JSON content type, `-d` the body, `-X` the
  method). The lines after a command, up to the next `$ `, are its expected body, byte for byte
  (one final line feed of the body is the end of the console line); a command shown without
  output must succeed (2xx).
- `<!-- docs-test: request METHOD PATH -->` before a ```` ```json ```` block: the block is the body,
  sent byte for byte. It must be followed by `<!-- docs-test: response STATUS -->` and a block
  holding the exact answer body (again up to one final line feed), and may be followed by
  `<!-- docs-test: content -->` and a ```` ```text ```` block holding the answer's `content`
  exactly (no line feed after its last line); `content_bytes` must be its UTF-8 length.
- `<!-- docs-test: python -->` before a ```` ```python ```` block: the code runs at that point of the
  page, with `http://127.0.0.1:8000` pointing at the test server. A `prepared` answer it leaves
  behind must carry one of the `content` texts the page documents.

Each page runs on its own private server (`start_server`), so a page can use ids like
`project:demo` literally and its setup steps alone produce the answers it shows.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
STANDARD_TEXT_PAGE = DOCS / "prepare-standard-context-text.md"

_MARKED_BLOCK = re.compile(
    r"^<!-- docs-test: (?P<marker>[^\n]*?) -->\n```(?P<lang>[a-z]*)\n(?P<body>.*?)\n?```$",
    re.MULTILINE | re.DOTALL,
)


@dataclass(frozen=True)
class Block:
    marker: str
    lang: str
    body: str  # the text between the fences, without the line feed before the closing fence
    line: int

    @property
    def where(self) -> str:
        return f"line {self.line}"


@dataclass(frozen=True)
class Exchange:
    """One documented request and what the server must answer."""

    where: str
    method: str
    path: str
    body: bytes | None
    status: int | None  # None: not checked when an answer is shown, else any 2xx
    expected: bytes | None  # None: not shown, not compared
    content: str | None = None  # the answer's `content`, when the page shows it as text


@dataclass(frozen=True)
class PythonExample:
    where: str
    code: str


Step = Exchange | PythonExample
DOCUMENTED_BASE_URL = "http://127.0.0.1:8000"


def marked_blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    blocks = [
        Block(m["marker"].strip(), m["lang"], m["body"], text.count("\n", 0, m.start()) + 1)
        for m in _MARKED_BLOCK.finditer(text)
    ]
    # A marker that is not directly followed by a fenced block would otherwise be skipped silently.
    assert len(blocks) == text.count("<!-- docs-test:"), f"{page.name}: a docs-test marker has no block"
    return blocks


def marked_pages() -> list[Path]:
    return sorted(p for p in DOCS.glob("*.md") if "<!-- docs-test:" in p.read_text(encoding="utf-8"))


def _curl_commands(block: Block) -> Iterator[tuple[str, str | None]]:
    """(command, expected output or None) for each `$ curl` of a console block."""
    lines = block.body.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            raise AssertionError(f"{block.where}: expected a `$ ` command, got {line!r}")
        command = line[2:]
        i += 1
        # Continuation lines: a trailing backslash or a still-open single-quoted string.
        while command.endswith("\\") or command.count("'") % 2 == 1:
            command = (command[:-1] if command.endswith("\\") else command + "\n") + lines[i]
            i += 1
        output: list[str] = []
        while i < len(lines) and not lines[i].startswith("$ "):
            output.append(lines[i])
            i += 1
        if command.startswith("curl "):
            yield command, "\n".join(output) if output else None
        elif not command.startswith(("PC=", "JSON=")):
            raise AssertionError(f"{block.where}: not a curl command: {command!r}")


def _parse_curl(command: str, where: str, expected: str | None) -> Exchange:
    args = shlex.split(command)
    assert args[0] == "curl", where
    method: str | None = None
    url: str | None = None
    data: str | None = None
    i = 1
    while i < len(args):
        arg = args[i]
        if arg == "-s":
            i += 1
        elif arg == "-X":
            method = args[i + 1]
            i += 2
        elif arg == "-H":
            assert args[i + 1] == "$JSON", f"{where}: unexpected header {args[i + 1]!r}"
            i += 2
        elif arg == "-d":
            data = args[i + 1]
            i += 2
        elif arg.startswith("$PC/"):
            url = arg[len("$PC") :]
            i += 1
        else:
            raise AssertionError(f"{where}: unsupported curl argument {arg!r}")
    assert url is not None, f"{where}: no $PC URL"
    return Exchange(
        where=where,
        method=method or ("POST" if data is not None else "GET"),
        path=url,
        body=None if data is None else data.encode("utf-8"),
        status=None,
        expected=None if expected is None else expected.encode("utf-8"),
    )


def exchanges(page: Path) -> list[Exchange]:
    """The page's documented requests, in page order."""
    return [step for step in steps(page) if isinstance(step, Exchange)]


def steps(page: Path) -> list[Step]:
    """The page's marked examples, in page order."""
    blocks = marked_blocks(page)
    found: list[Step] = []
    i = 0
    while i < len(blocks):
        block = blocks[i]
        kind, _, rest = block.marker.partition(" ")
        if kind == "curl":
            assert block.lang == "console", f"{block.where}: a curl block must be a console block"
            for command, output in _curl_commands(block):
                found.append(_parse_curl(command, block.where, output))
            i += 1
        elif kind == "python":
            assert block.lang == "python", f"{block.where}: a python marker needs a python block"
            assert DOCUMENTED_BASE_URL in block.body, f"{block.where}: no {DOCUMENTED_BASE_URL} to redirect"
            found.append(PythonExample(block.where, block.body))
            i += 1
        elif kind == "request":
            method, path = rest.split()
            assert block.lang == "json", f"{block.where}: a request block must be a json block"
            response = blocks[i + 1] if i + 1 < len(blocks) else None
            assert response is not None and response.marker.startswith("response "), (
                f"{block.where}: a request must be followed by its `docs-test: response STATUS`"
            )
            content: str | None = None
            i += 2
            if i < len(blocks) and blocks[i].marker == "content":
                content = blocks[i].body
                i += 1
            found.append(
                Exchange(
                    where=block.where,
                    method=method,
                    path=path,
                    body=block.body.encode("utf-8"),
                    status=int(response.marker.split()[1]),
                    expected=response.body.encode("utf-8"),
                    content=content,
                )
            )
        else:
            raise AssertionError(f"{page.name} {block.where}: unknown or misplaced marker {block.marker!r}")
    return found


def replay(client: httpx.Client, exchange: Exchange) -> list[str]:
    """Send one example; the list of every way the answer differs from the page."""
    headers = {"Content-Type": "application/json"} if exchange.body is not None else {}
    response = client.request(exchange.method, exchange.path, content=exchange.body, headers=headers)
    problems: list[str] = []
    label = f"{exchange.where}: {exchange.method} {exchange.path}"
    if exchange.status is None:
        if exchange.expected is None and not response.is_success:
            problems.append(f"{label}: HTTP {response.status_code} {response.text}")
    elif response.status_code != exchange.status:
        problems.append(
            f"{label}: HTTP {response.status_code}, documented {exchange.status}: {response.text}"
        )
    # A JSON answer may end with one line feed: in a console that is the end of the output line.
    body = response.content[:-1] if response.content.endswith(b"\n") else response.content
    if exchange.expected is not None and body != exchange.expected:
        problems.append(
            f"{label}: answer differs\n  documented: {exchange.expected.decode()}\n"
            f"  server:     {response.content.decode(errors='replace')}"
        )
    if exchange.content is not None:
        answer: dict[str, Any] = response.json()
        content = answer.get("content")
        if content != exchange.content:
            problems.append(
                f"{label}: content differs\n--- documented\n{exchange.content}\n--- server\n{content}"
            )
        documented_bytes = len(exchange.content.encode("utf-8"))
        if answer.get("content_bytes") != documented_bytes:
            problems.append(
                f"{label}: content_bytes {answer.get('content_bytes')}, documented {documented_bytes}"
            )
    return problems


# The pages parse ----------------------------------------------------------------------------------


def _prepare_bodies(page: Path) -> list[tuple[Exchange, dict[str, Any]]]:
    return [
        (e, json.loads(e.body))
        for e in exchanges(page)
        if e.path == "/v1/context/prepare" and e.body is not None
    ]


def test_the_standard_text_page_marks_every_kind_of_example() -> None:
    prepares = _prepare_bodies(STANDARD_TEXT_PAGE)
    assemblies = [body.get("assembly", "omitted") for _, body in prepares]
    assert {} in assemblies
    assert {"sections": []} in assemblies
    assert {"sections": [{"family": "memory", "limit": 8}]} in assemblies
    assert sum(e.content is not None for e, _ in prepares) >= 3
    assert any(e.status == 422 for e, _ in prepares)


def test_the_rfc_guide_example_is_documented_exactly() -> None:
    guide = [
        e
        for e, body in _prepare_bodies(STANDARD_TEXT_PAGE)
        if body.get("max_bytes") == 8000
        and isinstance(body.get("assembly"), dict)
        and body["assembly"].get("show") == ["confidence", "recall_rank"]
    ]
    assert len(guide) == 1
    content = guide[0].content
    assert content is not None
    encoded = content.encode("utf-8")
    assert len(encoded) == 1102
    assert hashlib.sha256(encoded).hexdigest() == (
        "39fdbd0eb2eed519f5dff3d34b1d52efa888398caf553b606988eca3e27f01e7"
    )


def test_documented_contents_follow_the_text_format_rules() -> None:
    for exchange in exchanges(STANDARD_TEXT_PAGE):
        if exchange.content is None:
            continue
        text = exchange.content
        assert "\r" not in text and not text.endswith("\n"), exchange.where
        assert text.startswith("# PowerContext historical context\n\n"), exchange.where
        assert text.endswith("\n\nEND_POWERCONTEXT_PREPARED_TEXT_V1"), exchange.where
        assert json.loads(exchange.expected or b"{}")["content"] == text, exchange.where


# The pages hold against a real server -------------------------------------------------------------


@pytest.mark.parametrize("page", marked_pages(), ids=lambda p: p.name)
def test_marked_examples_answer_as_documented(page: Path, start_server: Callable[..., Any]) -> None:
    server = start_server()
    found = steps(page)
    assert found, f"{page.name} has docs-test markers but no examples"
    documented_contents = {e.content for e in exchanges(page) if e.content is not None}
    problems: list[str] = []
    with httpx.Client(base_url=server.base_url, timeout=30.0) as client:
        for step in found:
            if isinstance(step, Exchange):
                problems.extend(replay(client, step))
                continue
            namespace: dict[str, Any] = {}
            code = step.code.replace(DOCUMENTED_BASE_URL, server.base_url)
            exec(compile(code, f"{page.name} {step.where}", "exec"), namespace)
            prepared = namespace.get("prepared")
            if prepared is not None and prepared.content not in documented_contents:
                problems.append(f"{step.where}: the Python example prepared text the page does not show")
    assert not problems, f"{page.name}:\n" + "\n".join(problems)
