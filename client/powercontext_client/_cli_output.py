"""How `powercontext` prints: an answer as `field: value` lines or one line of JSON, errors as one
line on standard error, and a prepared text byte for byte."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import IO, Any

from pydantic import BaseModel

# Printed as one line of JSON, to paste into the next command, rather than as `parent.field` lines.
_REF_KEYS = frozenset({"citation", "artifact", "committed"})
# The list of a list answer; each item prints as its own block.
_LIST_KEYS = frozenset({"scopes", "entries", "hits", "candidates"})


class UsageError(Exception):
    """A command line the CLI cannot turn into a request (exit status 2)."""


def print_result(result: BaseModel | Mapping[str, Any], as_json: bool) -> None:
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


def write_exact(content: str) -> None:
    stdout = sys.stdout
    buffer: IO[bytes] | None = getattr(stdout, "buffer", None)
    if buffer is None:
        stdout.write(content)
        stdout.flush()
        return
    stdout.flush()
    buffer.write(content.encode("utf-8"))
    buffer.flush()


def fail(message: str) -> None:
    # Always one line, whatever the server's message holds.
    print("powercontext: " + " ".join(message.splitlines()), file=sys.stderr)
