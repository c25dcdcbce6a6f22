"""How long store work (copy-store, export, import) reports its rows: the caller decides whether
anyone sees it (the CLI draws a bar on a terminal only)."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Where the rows go by: a stage (its name, how many rows it will count), then its advances."""

    def stage(self, name: str, total: int) -> None: ...

    def advance(self, rows: int) -> None: ...
