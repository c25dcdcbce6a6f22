"""Search sits below the store: `search` imports none of store, recall, prepare or application, and
the store none of recall or prepare, counting imports inside functions and under TYPE_CHECKING
(docs/search-index.md). Outside the runtime, bench and eval reach search only through its public
names, never a private module."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "runtime" / "powercontext_runtime"
PACKAGE = "powercontext_runtime"


def imported_modules(path: Path) -> Iterator[str]:
    """Every module `path` imports, absolute, wherever the import statement stands."""
    package = [PACKAGE, *path.relative_to(RUNTIME).parent.parts]  # what `from .` names
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)


def runtime_parts_imported(package: str) -> set[str]:
    """The runtime's top-level parts (`store`, `recall`, …) that `package`'s modules import."""
    found = set()
    for path in (RUNTIME / package).rglob("*.py"):
        for module in imported_modules(path):
            names = module.split(".")
            if names[0] == PACKAGE and len(names) > 1 and names[1] != package:
                found.add(names[1])
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("search", {"store", "recall", "prepare", "application", "bootstrap", "access"}),
        ("store", {"recall", "prepare", "application", "bootstrap"}),
    ],
)
def test_search_and_the_store_import_nothing_above_them(package: str, forbidden: set[str]) -> None:
    assert runtime_parts_imported(package) & forbidden == set()


def test_bench_and_eval_use_only_the_search_package_public_names() -> None:
    private = [
        (str(path.relative_to(ROOT)), module)
        for folder in ("bench", "eval")
        for path in (ROOT / folder).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module
        for module in [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        if module.startswith(f"{PACKAGE}.search._")
        or module.startswith((f"{PACKAGE}.recall.bm25", f"{PACKAGE}.recall.tokens"))
    ]
    assert private == []
