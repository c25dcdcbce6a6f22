"""The standard Markdown text format of the RFC: layout and escaping, and nothing else.

Trusted formatting (headings, metadata) is separated from untrusted bodies: metadata values are
single-line JSON string literals with every non-ASCII character escaped, and every body line sits
behind `>     ` (an indented code block inside a block quote), so a body cannot forge a heading,
a fence or the end marker outside its quote. Pure functions: the builder asks for the strings and
their byte sizes, and the document is the concatenation of exactly those strings.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from .budget import BodyCost, Piece
from .candidates import Origin
from .notice import TRUST_NOTICE

BEGIN_MARKER = "BEGIN_POWERCONTEXT_PREPARED_TEXT_V1"
END_MARKER = "END_POWERCONTEXT_PREPARED_TEXT_V1"
DOCUMENT_HEAD = f"# PowerContext historical context\n\n{TRUST_NOTICE}\n\n{BEGIN_MARKER}"
DOCUMENT_TAIL = f"\n\n{END_MARKER}"
QUOTE = ">     "
QUOTE_BYTES = len(QUOTE)
CONFIDENCE_LINE = "Confidence: unknown (not assessed)"

FAMILY_TITLES = {
    "memory": "Memory",
    "experience": "Experience",
    "profile": "Profile",
    "topic-memory": "Topic Memory",
}

_LINE_BREAKS = re.compile("\r\n|[\r\u2028\u2029]")


def _unicode_controls() -> frozenset[str]:
    """Every Unicode Cc/Cf character except LF, as this Python's Unicode database defines them."""
    return frozenset(
        chr(cp)
        for cp in range(sys.maxunicode + 1)
        if cp != 0x0A and unicodedata.category(chr(cp)) in ("Cc", "Cf")
    )


# Built once at import (about 0.2 s) so no request pays for it.
_CONTROLS = _unicode_controls()
_CONTROL_PATTERN = re.compile("[" + "".join(re.escape(c) for c in sorted(_CONTROLS)) + "]")


def _visible(ch: str) -> str:
    cp = ord(ch)
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def _literal(value: str) -> str:
    return json.dumps(value, ensure_ascii=True)


@dataclass(frozen=True, slots=True)
class QuotedBody:
    """A body ready for fitting: its full quoted form, its costs, and its pieces for cutting."""

    normalised: str  # line breaks normalised to LF, not yet escaped
    quoted: str  # escaped, every line after the first prefixed with the quote
    cost: BodyCost  # capped: escaped bytes (the 2000-byte rule); rendered: bytes after the first quote

    def pieces(self) -> Iterator[Piece]:
        controls = _CONTROLS
        for ch in self.normalised:
            if ch == "\n":
                yield "\n" + QUOTE, 1, 1 + QUOTE_BYTES
            elif ch in controls:
                visible = _visible(ch)
                yield visible, len(visible), len(visible)
            else:
                size = len(ch.encode("utf-8"))
                yield ch, size, size


def quote_body(body: str) -> QuotedBody:
    normalised = _LINE_BREAKS.sub("\n", body)
    escaped = _CONTROL_PATTERN.sub(lambda m: _visible(m.group()), normalised)
    capped = len(escaped.encode("utf-8"))
    lines = escaped.count("\n")
    return QuotedBody(
        normalised,
        escaped.replace("\n", "\n" + QUOTE),
        BodyCost(capped, capped + QUOTE_BYTES * lines),
    )


def metadata_block(
    origin: Origin, *, recall_rank: int, show_confidence: bool, show_recall_rank: bool, truncated: bool
) -> str:
    """The entry's indented metadata lines; citations and truncation state are never optional."""
    lines = [
        f"Scope: {_literal(origin.scope_id)}",
        f"Artifact: family={_literal(origin.family)}, id={_literal(origin.artifact_id)}, revision={origin.revision}",
    ]
    if origin.entry_id is not None and origin.entry_version_id is not None:
        lines.append(f"Entry: id={_literal(origin.entry_id)}, version={_literal(origin.entry_version_id)}")
    if show_confidence:
        lines.append(CONFIDENCE_LINE)
    if show_recall_rank:
        lines.append(f"Recall rank: {recall_rank}")
    lines.append(f"Truncated: {'yes' if truncated else 'no'}")
    return "\n".join("    " + line for line in lines)


def section_heading(family: str) -> str:
    return f"\n\n## {FAMILY_TITLES[family]}"


def entry_text(family: str, number: int, metadata: str, quoted_body: str) -> str:
    """One entry, led by its separator; `quoted_body` is what follows the first line's quote."""
    return f"\n\n### {FAMILY_TITLES[family]} {number}\n\n{metadata}\n\n{QUOTE}{quoted_body}"


def document(parts: list[str]) -> str:
    """The whole text: head, the section and entry parts in order, tail. LF only, no final newline."""
    return DOCUMENT_HEAD + "".join(parts) + DOCUMENT_TAIL


FRAME_BYTES = len(DOCUMENT_HEAD.encode("utf-8")) + len(DOCUMENT_TAIL.encode("utf-8"))
