"""The client installs alone: client/pyproject.toml builds a wheel that needs only httpx and pydantic.

The wheel is built from the working tree, installed with its dependencies from the package index
into a fresh virtual environment, and run there against the real server of `live_server`.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"


def run(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120, check=check)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    if UV.exists():
        run(
            UV,
            "build",
            "--wheel",
            "--no-build-isolation",
            "--python",
            sys.executable,
            "--out-dir",
            out,
            ROOT / "client",
        )
    else:
        run(
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            out,
            ROOT / "client",
        )
    (built,) = out.glob("powercontext_client-*.whl")
    return built


@pytest.fixture(scope="module")
def client_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("client-only") / "venv"
    if UV.exists():
        run(sys.executable, "-m", "venv", "--without-pip", venv)
        run(UV, "pip", "install", "--quiet", "--python", venv / "bin" / "python", wheel)
    else:
        run(sys.executable, "-m", "venv", venv)
        run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", wheel)
    return venv


def test_wheel_holds_the_client_the_generated_models_and_the_command(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    generated = {f"powercontext_api/{p.name}" for p in (ROOT / "generated" / "powercontext_api").glob("*.py")}
    client = {
        f"powercontext_client/{p.name}"
        for p in (ROOT / "client" / "powercontext_client").iterdir()
        if p.is_file()
    }
    assert generated | client <= names
    assert not any(
        n.startswith(("powercontext_server/", "powercontext_runtime/")) or "__pycache__" in n for n in names
    )
    metadata = (
        zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    )
    requires = sorted(
        line.split(": ", 1)[1] for line in metadata.splitlines() if line.startswith("Requires-Dist:")
    )
    assert requires == ["httpx==0.28.1", "mcp<3,>=2.3; extra == 'mcp'", "pydantic==2.14.3"]
    assert "Provides-Extra: mcp" in metadata.splitlines()
    entry_points = (
        zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    )
    assert "powercontext = powercontext_client.cli:main" in entry_points


def test_root_and_client_pins_of_httpx_and_pydantic_agree() -> None:
    import tomllib

    root = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    client = tomllib.loads((ROOT / "client" / "pyproject.toml").read_text())["project"]
    assert set(client["dependencies"]) <= set(root["dependencies"])
    assert client["scripts"] == root["scripts"] == {"powercontext": "powercontext_client.cli:main"}


def test_client_only_install_imports_the_client_without_the_server_dependencies(client_venv: Path) -> None:
    probe = (
        "import importlib.util, powercontext_client, powercontext_api.models;"
        "from powercontext_client import AsyncPowerContextClient, PowerContextClient, validate_prepared_context;"
        "print(sorted(m for m in ('connexion', 'starlette', 'uvicorn', 'powercontext_server',"
        " 'powercontext_runtime') if importlib.util.find_spec(m) is not None))"
    )
    result = run(client_venv / "bin" / "python", "-c", probe)
    assert result.stdout.strip() == "[]"


def test_client_only_command_talks_to_a_server_and_says_serve_needs_the_server(
    client_venv: Path, live_server: str
) -> None:
    command = client_venv / "bin" / "powercontext"
    health = run(command, "--url", live_server, "health")
    assert health.stdout == "live: ok\nready: ok\n"
    for server_command in ("serve", "token"):
        refused = run(command, server_command, check=False)
        assert refused.returncode == 1
        assert refused.stdout == ""
        assert "needs the PowerContext server, which is not installed here" in refused.stderr


def test_client_only_mcp_command_says_how_to_install_the_sdk(client_venv: Path) -> None:
    command = client_venv / "bin" / "powercontext"
    assert run(command, "mcp", "--help").returncode == 0  # the SDK is imported only to serve
    refused = run(command, "mcp", check=False)
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert refused.stderr == (
        "powercontext: `powercontext mcp` needs the MCP SDK (the mcp package), which is not installed here "
        "(missing module 'mcp_types'); install it with: pip install 'powercontext-client[mcp]'\n"
    )
