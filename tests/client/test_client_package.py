"""The client installs alone: client/pyproject.toml builds a wheel that needs only httpx and pydantic.

The wheel is built from the working tree, installed with its dependencies from the package index
into a fresh virtual environment, and run there against the real server of `live_server`; a second
environment holds the oldest httpx and pydantic the client's ranges allow.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"
CLIENT_PROJECT = tomllib.loads((ROOT / "client" / "pyproject.toml").read_text())["project"]
ROOT_PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


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


def install(venv: Path, *requirements: str | Path) -> Path:
    """A new virtual environment at `venv` holding `requirements` and their dependencies."""
    if UV.exists():
        run(sys.executable, "-m", "venv", "--without-pip", venv)
        run(UV, "pip", "install", "--quiet", "--python", venv / "bin" / "python", *requirements)
    else:
        run(sys.executable, "-m", "venv", venv)
        run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", *requirements)
    return venv


def floors() -> list[str]:
    """Each dependency of the client pinned at the lower bound of its range (`name==X` for `>=X`)."""
    pins = []
    for line in CLIENT_PROJECT["dependencies"]:
        requirement = Requirement(line)
        (lower,) = [s.version for s in requirement.specifier if s.operator == ">="]
        pins.append(f"{requirement.name}=={lower}")
    return pins


@pytest.fixture(scope="module")
def client_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("client-only") / "venv", wheel)


@pytest.fixture(scope="module")
def oldest_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("client-oldest") / "venv", wheel, *floors())


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
    assert requires == ["httpx<1,>=0.27", "mcp<3,>=2.3; extra == 'mcp'", "pydantic<3,>=2.14"]
    assert "Provides-Extra: mcp" in metadata.splitlines()
    # The project is Apache-2.0 as a whole: the client says so and carries the text.
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    license_file = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
    assert zipfile.ZipFile(wheel).read(license_file) == (ROOT / "LICENSE").read_bytes()
    entry_points = (
        zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    )
    assert "powercontext = powercontext_client.cli:main" in entry_points


def test_client_ranges_hold_the_root_pins_of_httpx_and_pydantic() -> None:
    # The client declares compatible ranges, the server distribution pins one version in each:
    # the suite runs the client at the pinned versions, the `oldest_venv` tests at the floors.
    pinned = {Requirement(line).name: Requirement(line).specifier for line in ROOT_PROJECT["dependencies"]}
    ranges = {Requirement(line).name: Requirement(line).specifier for line in CLIENT_PROJECT["dependencies"]}
    assert sorted(ranges) == ["httpx", "pydantic"]
    for name, allowed in ranges.items():
        (pin,) = [s.version for s in pinned[name] if s.operator == "=="]
        assert pin in allowed, f"{name}: the root pins {pin}, outside the client's {allowed}"
        assert any(s.operator == "<" for s in allowed), f"{name}: no upper bound"
    assert floors() == ["httpx==0.27", "pydantic==2.14"]
    assert (
        CLIENT_PROJECT["scripts"]
        == ROOT_PROJECT["scripts"]
        == {"powercontext": "powercontext_client.cli:main"}
    )


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
        assert refused.stderr.endswith(
            "install the server with: pip install . (in a PowerContext checkout)\n"
        )


def test_client_only_mcp_command_says_how_to_install_the_sdk(client_venv: Path) -> None:
    command = client_venv / "bin" / "powercontext"
    assert run(command, "mcp", "--help").returncode == 0  # the SDK is imported only to serve
    refused = run(command, "mcp", check=False)
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert refused.stderr == (
        "powercontext: `powercontext mcp` needs the MCP SDK (the mcp package), which is not installed here "
        "(missing module 'mcp_types'); install it with: pip install './client[mcp]' (in a PowerContext checkout)\n"
    )


def test_client_only_install_reports_its_version_everywhere(client_venv: Path) -> None:
    version = CLIENT_PROJECT["version"]
    python = client_venv / "bin" / "python"
    assert run(client_venv / "bin" / "powercontext", "--version").stdout == f"powercontext {version}\n"
    assert run(python, "-m", "powercontext_client", "--version").stdout == f"powercontext {version}\n"
    probe = "import powercontext_client; print(powercontext_client.__version__)"
    assert run(python, "-c", probe).stdout == f"{version}\n"


def test_python_m_runs_the_command(client_venv: Path, live_server: str) -> None:
    health = run(client_venv / "bin" / "python", "-m", "powercontext_client", "--url", live_server, "health")
    assert health.stdout == "live: ok\nready: ok\n"


def test_client_runs_on_the_oldest_httpx_and_pydantic_its_ranges_allow(
    oldest_venv: Path, live_server: str
) -> None:
    python = oldest_venv / "bin" / "python"
    versions = run(python, "-c", "import httpx, pydantic; print(httpx.__version__, pydantic.VERSION)")
    installed = [Version(v) for v in versions.stdout.split()]
    assert installed == [Version(pin.split("==")[1]) for pin in floors()]
    # A round trip through the sync and the async client, search scores and the command included.
    probe = (
        "import asyncio, sys, uuid\n"
        "from powercontext_client import AsyncPowerContextClient, PowerContextClient\n"
        "scope = 'project:' + uuid.uuid4().hex[:12]\n"
        "with PowerContextClient(sys.argv[1]) as pc:\n"
        "    pc.create_scope(scope)\n"
        "    pc.create_scope(scope, exist_ok=True)\n"
        "    pc.remember(scope, 'Run make contract-test after changing the API.')\n"
        "    (hit,) = pc.search_memory(scope, 'contract').hits\n"
        "    assert hit.score > 0, hit\n"
        "async def main():\n"
        "    async with AsyncPowerContextClient(sys.argv[1]) as pc:\n"
        "        prepared = await pc.prepare_context(scope, 'what do I run after an API change?')\n"
        "        assert prepared.status == 'ready', prepared\n"
        "asyncio.run(main())\n"
        "print(scope)\n"
    )
    scope = run(python, "-c", probe, live_server).stdout.strip()
    found = run(
        oldest_venv / "bin" / "powercontext", "--url", live_server, "search-memory", scope, "contract"
    )
    assert "text: Run make contract-test after changing the API.\n" in found.stdout
