"""The cross-check for eval/evidence.py: which Memory entries a prepared text carries whole, read
from the text itself (the legacy envelope's JSON, or the Markdown format's citation lines), as a
reader without the receipt would have to."""

from __future__ import annotations

import json
import re

LEGACY_BEGIN = "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\n"
LEGACY_END = "\nEND_POWERCONTEXT_PREPARED_CONTEXT_V1"
# A Memory entry's metadata in the Markdown format: its citation, then (after optional lines such
# as the recall rank) whether its body was cut.
_MARKDOWN_ENTRY = re.compile(
    r'^    Artifact: family="memory".*\n    Entry: id="(?P<entry>[^"]+)", version="[^"]+"\n'
    r"(?:    (?!Truncated: ).*\n)*    Truncated: (?P<truncated>yes|no)$",
    re.MULTILINE,
)


def whole_entries_in_text(content: str | None) -> set[str]:
    """Entry ids of the Memory entries whose whole text is in `content` (a cut one does not count)."""
    if not content:
        return set()
    start = content.find(LEGACY_BEGIN)
    if start >= 0:
        end = content.rindex(LEGACY_END)
        envelope = json.loads(content[start + len(LEGACY_BEGIN) : end])
        return {
            item["citation"]["entry_id"]
            for item in envelope["items"]
            if "entry_id" in item.get("citation", {}) and not item["truncated"]
        }
    return {m["entry"] for m in _MARKDOWN_ENTRY.finditer(content) if m["truncated"] == "no"}
