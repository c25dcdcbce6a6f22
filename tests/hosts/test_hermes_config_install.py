"""Provider settings (environment and JSON file) and the installer that puts the plugin into a Hermes home."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from hosts.hermes import install
from hosts.hermes.powercontext_memory.config import (
    DEFAULT_BASE_URL,
    DEFAULT_MAX_BYTES,
    DEFAULT_SCOPE,
    MAX_TIMEOUT,
    SOURCES,
    ConfigError,
    Settings,
    load_settings,
)
from powercontext_host._contract import HOST_DEFAULT_ASSEMBLY
from tests.hosts.conftest import REPO

CWD = Path("/work/zebra-gateway")
GUIDE = REPO / "docs" / "hermes.md"
ASSEMBLY_PAGES = [GUIDE, REPO / "docs" / "prepare-standard-context-text.md"]


def settings_from(**env: str) -> Settings:
    return load_settings({f"POWERCONTEXT_HERMES_{key.upper()}": value for key, value in env.items()}, cwd=CWD)


def test_defaults_are_the_hosts_assembly_sent_to_the_local_server() -> None:
    settings = load_settings({}, cwd=CWD)
    assert settings.base_url == "http://127.0.0.1:8000"
    assert settings.token is None
    assert settings.scope_id == "project:zebra-gateway"
    assert (settings.max_bytes, settings.timeout) == (8000, 2.0)
    # Memory only, eight entries: the contract's host default, which carries the most evidence
    # in `make eval`; the Claude Code and Codex hooks send the same.
    assert json.loads(settings.assembly_json or "") == {"sections": [{"family": "memory", "limit": 8}]}
    assert settings.assembly_json == HOST_DEFAULT_ASSEMBLY and settings.mode == "assembly"


def test_explicit_settings_are_kept() -> None:
    settings = load_settings(
        {
            "POWERCONTEXT_HERMES_BASE_URL": "https://pc.example.test/",
            "POWERCONTEXT_HERMES_TOKEN": "t0k3n",
            "POWERCONTEXT_HERMES_SCOPE": "team:{cwd_name}:api",
            "POWERCONTEXT_HERMES_MAX_BYTES": "512",
            "POWERCONTEXT_HERMES_TIMEOUT": "0.25",
            "POWERCONTEXT_HERMES_CONTEXT_ASSEMBLY": '{ "show": ["confidence"],\n "sections": [] }',
        },
        cwd=CWD,
    )
    assert settings.base_url == "https://pc.example.test"
    assert settings.token == "t0k3n"
    assert settings.scope_id == "team:zebra-gateway:api"
    assert (settings.max_bytes, settings.timeout) == (512, 0.25)
    assert settings.assembly_json == '{"show":["confidence"],"sections":[]}'  # key order kept
    assert settings.mode == "assembly"


@pytest.mark.parametrize("value", ["3", "30", "1e9"])
def test_the_timeout_is_capped_at_two_seconds(value: str) -> None:
    assert load_settings({"POWERCONTEXT_HERMES_TIMEOUT": value}, cwd=CWD).timeout == 2.0


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("max_bytes", "511"),
        ("max_bytes", "32769"),
        ("max_bytes", "8e3"),
        ("max_bytes", "true"),
        ("max_bytes", " "),
        ("timeout", "0"),
        ("timeout", "-1"),
        ("timeout", "nan"),
        ("timeout", "soon"),
        ("context_assembly", "null"),
        ("context_assembly", "[]"),
        ("context_assembly", '"memory"'),
        ("context_assembly", "{sections: []}"),
        ("context_assembly", "Legacy"),
        ("base_url", "127.0.0.1:8000"),
        ("scope", "   "),
        ("scope", "x" * 257),
        ("token", "two\nlines"),
        ("capture", "maybe"),
        ("capture", "0"),
    ],
)
def test_invalid_settings_are_rejected_without_echoing_them(name: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from(**{name: value})
    assert name.upper() in str(caught.value)
    assert value.strip() == "" or value not in str(caught.value)


def test_an_empty_assembly_variable_means_the_default() -> None:
    assert settings_from(context_assembly="").assembly_json == HOST_DEFAULT_ASSEMBLY


@pytest.mark.parametrize("value", ["legacy", " legacy\n"])
def test_legacy_is_asked_for_by_name_in_the_environment_or_the_file(tmp_path: Path, value: str) -> None:
    settings = settings_from(context_assembly=value)
    assert settings.assembly_json is None and settings.mode == "legacy"
    path = tmp_path / "powercontext.json"
    path.write_text(json.dumps({"context_assembly": value}), encoding="utf-8")
    assert load_settings({"POWERCONTEXT_HERMES_CONFIG": str(path)}, cwd=CWD).mode == "legacy"


@pytest.mark.parametrize(
    ("value", "capture"), [("", True), ("on", True), (" ON ", True), ("off", False), ("Off", False)]
)
def test_capture_is_on_unless_turned_off(value: str, capture: bool) -> None:
    assert settings_from(capture=value).capture is capture
    assert load_settings({}, cwd=CWD).capture is True


@pytest.mark.parametrize(("value", "capture"), [(False, False), (True, True), ("off", False)])
def test_the_config_file_can_turn_capture_off_and_the_environment_wins(
    tmp_path: Path, value: object, capture: bool
) -> None:
    path = tmp_path / "powercontext.json"
    path.write_text(json.dumps({"capture": value}), encoding="utf-8")
    assert load_settings({"POWERCONTEXT_HERMES_CONFIG": str(path)}, cwd=CWD).capture is capture
    env = {"POWERCONTEXT_HERMES_CONFIG": str(path), "POWERCONTEXT_HERMES_CAPTURE": "on"}
    assert load_settings(env, cwd=CWD).capture is True


def test_a_json_config_file_is_read_and_the_environment_wins(tmp_path: Path) -> None:
    path = tmp_path / "powercontext.json"
    path.write_text(
        json.dumps(
            {
                "scope": "project:from-file",
                "max_bytes": 4096,
                "token": "file-token",
                "context_assembly": {"sections": [{"family": "memory", "limit": 3}]},
            }
        ),
        encoding="utf-8",
    )
    settings = load_settings(
        {"POWERCONTEXT_HERMES_CONFIG": str(path), "POWERCONTEXT_HERMES_MAX_BYTES": "2048"}, cwd=CWD
    )
    assert (settings.scope_id, settings.max_bytes, settings.token) == (
        "project:from-file",
        2048,
        "file-token",
    )
    assert settings.assembly_json == '{"sections":[{"family":"memory","limit":3}]}'


@pytest.mark.parametrize(
    "content", ['{"scope": "a", "max_byte": 1}', "[]", "{", '{"max_bytes": true}', '{"max_bytes": 1.5}']
)
def test_a_bad_config_file_is_rejected(tmp_path: Path, content: str) -> None:
    path = tmp_path / "powercontext.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError):
        load_settings({"POWERCONTEXT_HERMES_CONFIG": str(path)}, cwd=CWD)


def test_a_missing_config_file_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_settings({"POWERCONTEXT_HERMES_CONFIG": str(tmp_path / "absent.json")}, cwd=CWD)


# The documented configuration (docs/hermes.md)


def fenced(page: Path, lang: str) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return re.findall(rf"^```{lang}\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def test_the_documented_config_file_loads_as_described(tmp_path: Path) -> None:
    [example] = fenced(GUIDE, "json")
    path = tmp_path / "powercontext.json"
    path.write_text(example, encoding="utf-8")
    assembly = {
        "sections": [{"family": "experience", "limit": 2}, {"family": "memory", "limit": 5}],
        "show": ["recall_rank"],
    }
    assert load_settings({"POWERCONTEXT_HERMES_CONFIG": str(path)}, cwd=CWD) == Settings(
        base_url="http://127.0.0.1:8000",
        token="pc_example_token",
        scope_id="project:zebra-gateway",
        max_bytes=6000,
        timeout=1.5,
        assembly_json=json.dumps(assembly, separators=(",", ":")),
        capture=True,
    )


@pytest.mark.parametrize("page", ASSEMBLY_PAGES, ids=lambda page: page.name)
def test_every_documented_assembly_export_is_a_valid_setting(page: Path) -> None:
    exports = [
        shlex.split(line)[1]
        for block in fenced(page, "bash")
        for line in block.splitlines()
        if line.startswith("export POWERCONTEXT_HERMES_CONTEXT_ASSEMBLY=")
    ]
    assert exports
    for export in exports:
        name, value = export.split("=", 1)
        assert load_settings({name: value}, cwd=CWD).mode == "assembly"


def test_the_settings_table_names_every_setting_its_file_key_and_default() -> None:
    rows = {
        cells[0]: cells[1:]
        for line in GUIDE.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `POWERCONTEXT_HERMES_")
        for cells in [[cell.strip() for cell in line.strip("|").split("|")]]
    }
    defaults = {
        "base_url": f"`{DEFAULT_BASE_URL}`",
        "token": "none",
        "scope": f"`{DEFAULT_SCOPE}`",
        "max_bytes": f"`{DEFAULT_MAX_BYTES}`",
        "timeout": f"`{MAX_TIMEOUT}`",
        "assembly": f"`{HOST_DEFAULT_ASSEMBLY}`",
        "capture": "`on`",
    }
    assert set(rows) == {f"`{env_name}`" for env_name, _ in SOURCES.values()}
    for name, (env_name, file_key) in SOURCES.items():
        file_column, default_column = rows[f"`{env_name}`"][:2]
        assert (file_column, default_column) == (f"`{file_key}`", defaults[name])


# Installer

ENABLE_CASES = {
    "no-file": ("", "memory:\n  provider: powercontext\n"),
    "no-memory-section": (
        "model:\n  provider: custom\n",
        "model:\n  provider: custom\nmemory:\n  provider: powercontext\n",
    ),
    "no-trailing-newline": ("a: 1", "a: 1\nmemory:\n  provider: powercontext\n"),
    "replaces-provider": (
        "memory:\n  memory_enabled: true\n  provider: ''\nother: 1\n",
        "memory:\n  memory_enabled: true\n  provider: powercontext\nother: 1\n",
    ),
    "keeps-indent-and-nested": (
        "memory:  # mine\n    nested:\n      provider: x\n# note\nb: 2\n",
        "memory:  # mine\n    provider: powercontext\n    nested:\n      provider: x\n# note\nb: 2\n",
    ),
    "empty-flow-mapping": ("memory: {}\nx: 1\n", "memory:\n  provider: powercontext\nx: 1\n"),
    "already-enabled": ("memory:\n  provider: powercontext\n", "memory:\n  provider: powercontext\n"),
}


@pytest.mark.parametrize(("before", "after"), ENABLE_CASES.values(), ids=ENABLE_CASES.keys())
def test_enable_sets_only_memory_provider(before: str, after: str) -> None:
    assert install.enable_provider(before) == after


def test_enable_refuses_an_inline_memory_mapping() -> None:
    with pytest.raises(install.InstallError):
        install.enable_provider("memory: {provider: other, memory_enabled: true}\n")


def test_the_installer_copies_the_plugin_and_enables_it(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    stale = home / "plugins" / "powercontext" / "stale.py"
    stale.parent.mkdir(parents=True)
    stale.write_text("old = True\n", encoding="utf-8")
    (home / "config.yaml").write_text("model:\n  default: fake\n", encoding="utf-8")

    for _ in range(2):  # idempotent
        assert install.main(["--hermes-home", str(home), "--enable"]) == 0

    plugin = home / "plugins" / "powercontext"
    expected = sorted([*(p.name for p in install.PLUGIN_SOURCE.glob("*.py")), "_core"])
    assert sorted(p.name for p in plugin.iterdir()) == expected
    # The host core is copied in as real files: a Hermes home holds no link into a checkout.
    core = plugin / "_core"
    assert core.is_dir() and not core.is_symlink()
    shared = REPO / "hosts" / "core" / "powercontext_host"
    assert {p.name: p.read_bytes() for p in core.iterdir()} == {
        p.name: p.read_bytes() for p in shared.glob("*.py")
    }
    assert "register_memory_provider" in (plugin / "__init__.py").read_text(encoding="utf-8")
    config = (home / "config.yaml").read_text(encoding="utf-8")
    assert config == "model:\n  default: fake\nmemory:\n  provider: powercontext\n"


def test_the_installer_uses_hermes_home_and_leaves_config_alone_without_enable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    assert install.main([]) == 0
    assert (tmp_path / "plugins" / "powercontext" / "__init__.py").is_file()
    assert not (tmp_path / "config.yaml").exists()
