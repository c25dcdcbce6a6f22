"""The whole repository is Apache-2.0: the license text at the root, every distribution's metadata
naming it as an SPDX expression, and the docs footer saying it."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_the_root_carries_the_apache_license_text() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_every_python_distribution_declares_apache_2() -> None:
    projects = sorted(ROOT.glob("**/pyproject.toml"))
    projects = [p for p in projects if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)]
    assert {p.relative_to(ROOT).as_posix() for p in projects} >= {"pyproject.toml", "client/pyproject.toml"}
    for path in projects:
        project = tomllib.loads(path.read_text())["project"]
        assert project["license"] == "Apache-2.0", path
        assert project["license-files"] == ["LICENSE"], path
        assert (path.parent / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes(), path
        assert "urls" not in project, f"{path}: no project URLs until there is a public address"


def test_the_docs_footer_names_the_license() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert "Apache License, Version 2.0" in config["copyright"]


def test_the_typescript_package_declares_apache_2_and_ships_the_text() -> None:
    package = json.loads((ROOT / "client-ts" / "package.json").read_text())
    assert package["license"] == "Apache-2.0"
    # npm puts a LICENSE beside package.json into every tarball it packs.
    assert (ROOT / "client-ts" / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
