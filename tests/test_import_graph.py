"""The house's import rules, read from the source of every file: each `import` and `from … import`,
at module level, inside functions and under `TYPE_CHECKING` alike (docs/architecture.md).

1. The top-level parts depend on each other only along the arrows of `MAY_IMPORT`.
2. Outside the Runtime and the server, only their front doors are named: `powercontext_runtime`
   and `powercontext_server`, never a module inside them.
3. Inside the Runtime, a package or module imports only from its own layer or a lower one
   (`RUNTIME_LAYERS`), so no two of its packages import each other.
"""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Where each part's code lives, by the name it is imported under.
PARTS: dict[str, str] = {
    "powercontext_api": "generated/powercontext_api",
    "powercontext_runtime": "runtime/powercontext_runtime",
    "powercontext_server": "server/powercontext_server",
    "powercontext_client": "client/powercontext_client",
    "powercontext_host": "hosts/core/powercontext_host",
    "hosts": "hosts",  # the Hermes plugin and its installer, standard library only
    "devtools": "devtools",
    "bench": "bench",
    "eval": "eval",
}

# Which other parts each part may import. Tests may import anything.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "powercontext_api": frozenset(),
    "powercontext_host": frozenset(),
    "hosts": frozenset(),
    "powercontext_runtime": frozenset({"powercontext_api"}),
    "powercontext_server": frozenset({"powercontext_api", "powercontext_runtime"}),
    # `powercontext setup|doctor|bind` run the host core, which needs nothing else.
    "powercontext_client": frozenset({"powercontext_api", "powercontext_host"}),
    "devtools": frozenset(),
    "bench": frozenset(
        {"powercontext_api", "powercontext_runtime", "powercontext_server", "powercontext_client", "devtools"}
    ),
    "eval": frozenset(
        {"powercontext_api", "powercontext_runtime", "powercontext_client", "bench", "devtools"}
    ),
}

# Parts whose inside is private to them: everyone else names only the package itself.
FRONT_DOORS = frozenset({"powercontext_runtime", "powercontext_server"})
# Benchmarks of the Runtime's and the server's insides, which (as tests do) time and count what no
# public call isolates: pruned against exhaustive ranking on a bare mirror, the statements each
# store write sends, the server's embedding leg with its back-off set to none, a bare mirror's
# replay of one write. Nothing imports them.
INSIDE_BENCHES = frozenset(
    {
        Path("bench/ranking.py"),
        Path("bench/round_trips.py"),
        Path("bench/embedding_backoff.py"),
        Path("bench/scale_writes.py"),
    }
)

# The Runtime's layers, lowest first: a module imports from its own layer or one below it.
RUNTIME_LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "models", "config", "cursors", "nudged_thread"}),
    frozenset({"access", "operation"}),
    frozenset({"search"}),
    frozenset({"vectors"}),
    frozenset({"store"}),
    frozenset({"recall"}),
    frozenset({"prepare"}),
    frozenset(
        {"responses", "request_rules", "context_request", "application", "offline", "bootstrap", "__init__"}
    ),
)


@dataclass(frozen=True)
class Import:
    source: Path  # relative to ROOT
    line: int
    module: str  # absolute dotted name imported from

    def __str__(self) -> str:
        return f"{self.source}:{self.line} imports {self.module}"


def tracked_python_files() -> list[Path]:
    names = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split()
    return [Path(name) for name in names]


def module_name(path: Path) -> str:
    """The dotted name a file is imported under (its part's directory sits on the path)."""
    for part, directory in PARTS.items():
        prefix = Path(directory)
        if path.is_relative_to(prefix):
            rest = path.relative_to(prefix).with_suffix("").parts
            name = ".".join((part, *rest))
            return name.removesuffix(".__init__")
    return ".".join(path.with_suffix("").parts).removesuffix(".__init__")


def imports_of(path: Path, text: str | None = None) -> Iterator[Import]:
    """Every import of the file (or of `text` placed there), relative ones made absolute."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    source = (ROOT / path).read_text(encoding="utf-8") if text is None else text
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (Import(path, node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:  # `from X import a`: the module X.a when a is one, else X
                named = f"{base}.{alias.name}"
                yield Import(path, node.lineno, named if _is_module(named) else base)


@cache
def all_imports() -> tuple[Import, ...]:
    return tuple(found for path in tracked_python_files() for found in imports_of(path))


def part_of(module: str) -> str | None:
    top = module.split(".")[0]
    return top if top in PARTS else None


def ours(found: Import) -> bool:
    """An import of a module this repository holds (not a library, not the standard library)."""
    return _is_module(found.module)


@cache
def _is_module(module: str) -> bool:
    """Whether `module` is a package or module of the tree."""
    part, _, rest = module.partition(".")
    if part not in PARTS:
        return False
    base = ROOT / PARTS[part] / Path(*rest.split(".")) if rest else ROOT / PARTS[part]
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def test_the_rules_see_the_whole_tree() -> None:
    """A new top-level directory of code gets a rule; a file the rules do not place fails here."""
    unplaced = {
        str(path)
        for path in tracked_python_files()
        if part_of(module_name(path)) is None and path.parts[0] not in ("tests", "docs")
    }
    assert unplaced == set()
    assert len(all_imports()) > 1000  # the reader sees the tree, not an empty list


def runtime_layer(module: str) -> int:
    """The layer of a module of the Runtime, by its first name below `powercontext_runtime`."""
    parts = module.split(".")
    first = parts[1] if len(parts) > 1 else "__init__"
    for index, layer in enumerate(RUNTIME_LAYERS):
        if first in layer:
            return index
    raise AssertionError(f"{module} is in no layer of RUNTIME_LAYERS")


def broken_rule(found: Import) -> str | None:
    """The rule an import breaks, or None. Imports of libraries and in tests break none."""
    importer = part_of(module_name(found.source))
    imported = part_of(found.module)
    if importer is None or not ours(found):
        return None
    if imported != importer:
        if imported not in MAY_IMPORT[importer]:
            return f"{importer} may not import {imported}"
        if imported in FRONT_DOORS and "." in found.module and found.source not in INSIDE_BENCHES:
            return f"only {imported} itself may be named outside it"
        return None
    if importer == "powercontext_runtime":
        own, theirs = runtime_layer(module_name(found.source)), runtime_layer(found.module)
        if theirs > own:
            return f"Runtime layer {own} may not import layer {theirs}"
    return None


def test_the_tree_breaks_no_rule() -> None:
    broken = [f"{found}: {rule}" for found in all_imports() if (rule := broken_rule(found))]
    assert broken == []


def test_every_runtime_module_has_a_layer() -> None:
    for path in tracked_python_files():
        if part_of(module_name(path)) == "powercontext_runtime":
            runtime_layer(module_name(path))


def test_no_two_runtime_packages_import_each_other() -> None:
    edges = {
        (module_name(found.source).split(".")[1], found.module.split(".")[1])
        for found in all_imports()
        if part_of(module_name(found.source)) == "powercontext_runtime"
        and part_of(found.module) == "powercontext_runtime"
        and ours(found)
        and "." in found.module
        and "." in module_name(found.source)
    }
    circles = sorted((a, b) for a, b in edges if a < b and (b, a) in edges)
    assert circles == []


@pytest.mark.parametrize(
    ("source", "text", "rule"),
    [
        ("bench/x.py", "from powercontext_runtime.store import Store", "only powercontext_runtime itself"),
        ("bench/x.py", "from powercontext_runtime import Store", None),
        (
            "server/powercontext_server/x.py",
            "def f():\n    from powercontext_runtime.store import copy",
            "only",
        ),
        (
            "runtime/powercontext_runtime/store/x.py",
            "from ..recall import pools",
            "layer 4 may not import layer 5",
        ),
        (
            "runtime/powercontext_runtime/store/x.py",
            "if TYPE_CHECKING:\n    from ..prepare import builder",
            "layer 4 may not import layer 6",
        ),
        ("runtime/powercontext_runtime/recall/x.py", "from ..store import base", None),
        (
            "client/powercontext_client/x.py",
            "import powercontext_runtime",
            "may not import powercontext_runtime",
        ),
        ("runtime/powercontext_runtime/x.py", "from powercontext_server import app", "may not import"),
        ("hosts/core/powercontext_host/x.py", "from powercontext_api import models", "may not import"),
    ],
)
def test_one_added_arrow_is_caught(source: str, text: str, rule: str | None) -> None:
    """The judge itself: one import of each kind, placed in a file, breaks the rule it should."""
    rules = [broken_rule(found) for found in imports_of(Path(source), text)]
    if rule is None:
        assert rules and all(found is None for found in rules)
    else:
        assert any(found is not None and rule in found for found in rules), rules
