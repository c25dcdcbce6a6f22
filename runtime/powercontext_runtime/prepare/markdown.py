"""The standard Markdown text format of the RFC: layout and escaping, and nothing else.

Trusted formatting (headings, metadata) is separated from untrusted bodies: metadata values are
single-line JSON string literals with every non-ASCII character escaped, and every body line sits
behind `>     ` (an indented code block inside a block quote), so a body cannot forge a heading,
a fence or the end marker outside its quote. Pure functions: the builder asks for the strings and
their byte sizes, and the document is the concatenation of exactly those strings.
"""

from __future__ import annotations

import functools
import json
import re
import sys
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from ..recall.pools import Origin
from .budget import BodyCost, Cut, Piece, longest_prefix
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


# What `_scanned_controls` finds in Unicode 14.0.0, Python 3.11's database, as ranges of code
# points: scanning all 1.1M code points took a quarter of a second of every process's start.
_CONTROLS_14 = (
    (0x0000, 0x0009), (0x000B, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD), (0x0600, 0x0605),
    (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2),
    (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F),
    (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x13438),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)  # fmt: skip


def _scanned_controls() -> frozenset[str]:
    """Every Unicode Cc/Cf character except LF, as this Python's Unicode database defines them."""
    return frozenset(
        chr(cp)
        for cp in range(sys.maxunicode + 1)
        if cp != 0x0A and unicodedata.category(chr(cp)) in ("Cc", "Cf")
    )


def _unicode_controls() -> frozenset[str]:
    """`_scanned_controls()`, from the table when this Python's database is the one it was read from."""
    if unicodedata.unidata_version != "14.0.0":
        return _scanned_controls()
    return frozenset(chr(cp) for first, last in _CONTROLS_14 for cp in range(first, last + 1))


def _class_of(chars: frozenset[str]) -> str:
    """A regex character class of `chars` written as ranges of consecutive code points.

    Listing ~230 characters one by one made `re` test the non-BMP ones in a linear scan on every
    character of every body (about 0.3 ms per 2000-byte body); 24 ranges cost a tenth of that.
    """
    ranges: list[list[int]] = []
    for cp in sorted(ord(c) for c in chars):
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return (
        "["
        + "".join(
            re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges
        )
        + "]"
    )


# Built once at import so no request pays for it.
_CONTROLS = _unicode_controls()
_CONTROL_PATTERN = re.compile(_class_of(_CONTROLS))


def _visible(ch: str) -> str:
    cp = ord(ch)
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


@functools.lru_cache(maxsize=4096)
def _literal(value: str) -> str:
    # Scope ids, families, artifact and entry ids recur across entries and requests.
    return json.dumps(value, ensure_ascii=True)


@dataclass(frozen=True, slots=True)
class QuotedBody:
    """A body ready for fitting: its full quoted form, its costs, and its pieces for cutting."""

    normalised: str  # line breaks normalised to LF, not yet escaped
    quoted: str  # escaped, every line after the first prefixed with the quote
    cost: BodyCost  # capped: escaped bytes (the 2000-byte rule); rendered: bytes after the first quote
    plain: bool = False  # no character needed escaping, so a piece is a code point or a line break

    def cut(self, cap_limit: int, room_limit: int) -> Cut | None:
        """For a plain body, the longest prefix within both limits (`longest_prefix`); None for
        a body with escapes: those are cut by walking `pieces`."""
        if not self.plain:
            return None
        text = self.normalised
        length, capped, rendered = longest_prefix(text, _plain_costs, cap_limit, room_limit)
        return text[:length].replace("\n", "\n" + QUOTE), capped, rendered

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


def _plain_costs(prefix: str) -> tuple[int, int]:
    capped = len(prefix.encode("utf-8"))
    return capped, capped + QUOTE_BYTES * prefix.count("\n")


def _escape_controls(text: str) -> str:
    # Cc and Cf characters are never printable, so a printable text (LF aside) has none to escape:
    # str.isprintable is one C loop, several times faster than the regex that finds none.
    if text.replace("\n", "").isprintable():
        return text
    return _CONTROL_PATTERN.sub(lambda m: _visible(m.group()), text)


def quote_body(body: str) -> QuotedBody:
    # The regex only when a line break other than LF is there at all (rare): `in` is a C scan.
    normalised = (
        _LINE_BREAKS.sub("\n", body) if "\r" in body or "\u2028" in body or "\u2029" in body else body
    )
    escaped = _escape_controls(normalised)
    capped = len(escaped.encode("utf-8"))
    lines = escaped.count("\n")
    return QuotedBody(
        normalised,
        escaped.replace("\n", "\n" + QUOTE),
        BodyCost(capped, capped + QUOTE_BYTES * lines),
        plain=escaped is normalised,
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
