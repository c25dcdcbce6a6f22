"""Running the real Codex CLI headless in the host tests, and `powercontext setup|doctor codex`.

`CODEX` is the CLI `make host-clis` installs into the virtualenv (hosts/clis/package-lock.json).
`CodexHome` is a throwaway HOME and CODEX_HOME whose config.toml points Codex at a fake Responses
API model on loopback; `run_exec` runs one `codex exec` session in it, the helpers below read what
the model server received, and `powercontext` runs the command line as a user would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.hosts.conftest import REPO
from tests.hosts.fakes import MODEL_ANSWER, Received, RecordingServer

CODEX = Path(
    os.environ.get("CODEX_TEST_BIN") or Path(sys.prefix) / "host-clis" / "node_modules" / ".bin" / "codex"
)
INSTALL_HINT = f"no Codex CLI at {CODEX}: run `make host-clis` (npm ci of hosts/clis/package-lock.json)"
RESPONSES = "/v1/responses"
MODEL_KEY_ENV = "FAKE_MODEL_KEY"
EXEC_TIMEOUT = 120
# The user's own settings that setup must leave as they are.
USER_CONFIG = """\
# my Codex settings
model = "fake-model"
model_provider = "fake"

[model_providers.fake]
name = "Fake model"   # the test's loopback model
base_url = "{base_url}/v1"
env_key = "{key_env}"
wire_api = "responses"

[model_providers.spare]
name = "Spare"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
query_params = {{ "api-version" = "2025-01-01" }}
"""


@dataclass(frozen=True)
class CodexHome:
    """A HOME with CODEX_HOME under it, configured for the fake model at `model_url`."""

    home: Path
    workspace: Path

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    @property
    def config(self) -> Path:
        return self.codex_home / "config.toml"

    @property
    def hooks(self) -> Path:
        return self.codex_home / "hooks.json"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of `codex` and of the hooks it starts: a minimal one, the worktree's
        host core importable as `powercontext_host`, and `extra`."""
        base = {key: os.environ[key] for key in ("LANG", "LC_ALL", "TMPDIR") if key in os.environ}
        base.update(
            PATH=os.pathsep.join([str(CODEX.parent), str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
            HOME=str(self.home),
            CODEX_HOME=str(self.codex_home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            PYTHONPATH=str(REPO / "hosts" / "core"),
            **{MODEL_KEY_ENV: "fake-model-key"},
        )
        base.update(extra)
        return base


def make_codex_home(root: Path, model: RecordingServer) -> CodexHome:
    home = CodexHome(root / "home", root / "workspace")
    home.codex_home.mkdir(parents=True)
    home.workspace.mkdir()
    home.config.write_text(
        USER_CONFIG.format(base_url=model.base_url, key_env=MODEL_KEY_ENV), encoding="utf-8"
    )
    return home


def run_exec(
    home: CodexHome, prompt: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """One plain `codex exec` session (no trust bypass) in the workspace; it must complete."""
    result = subprocess.run(
        [str(CODEX), "exec", "--skip-git-repo-check", prompt],
        cwd=home.workspace,
        env=env or home.env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=EXEC_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert MODEL_ANSWER in result.stdout
    return result


def model_requests(model: RecordingServer) -> list[dict[str, Any]]:
    calls: list[Received] = model.requests_to(RESPONSES)
    assert calls, "Codex never called the model"
    return [call.json() for call in calls]


def request_for(model: RecordingServer, prompt: str) -> dict[str, Any]:
    """The (first) model request whose input carries the user message `prompt`."""
    for body in model_requests(model):
        if prompt in (text for role, text in input_texts(body) if role == "user"):
            return body
    raise AssertionError(f"no model request carries the prompt {prompt!r}")


def input_texts(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of every text part of every message in a Responses request's `input`."""
    texts = []
    for item in body.get("input", []):
        if item.get("type") != "message":
            continue
        for part in item.get("content", []):
            if isinstance(part.get("text"), str):
                texts.append((item["role"], part["text"]))
    return texts


def occurrences(body: dict[str, Any], text: str) -> int:
    """How many times `text` occurs in the request's message texts and instructions."""
    found = sum(part.count(text) for _, part in input_texts(body))
    return found + str(body.get("instructions") or "").count(text)


SETUP_TIMEOUT = 120


def powercontext(
    home: CodexHome, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`powercontext ARGS` (the client's command line) in the workspace, with `home`'s environment
    plus this test run's import roots, so the hooks it writes run this checkout's host core."""
    run_env = env or home.env()
    roots = [run_env["PYTHONPATH"], os.environ.get("PYTHONPATH", "")]
    run_env = {**run_env, "PYTHONPATH": os.pathsep.join(root for root in roots if root)}
    return subprocess.run(
        [sys.executable, "-m", "powercontext_client", *args],
        cwd=home.workspace,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=SETUP_TIMEOUT,
    )


def setup_codex(home: CodexHome, url: str, *flags: str, env: dict[str, str] | None = None) -> str:
    """`powercontext setup codex --url URL FLAGS`; it must succeed. Returns what it printed."""
    result = powercontext(home, "setup", "codex", "--url", url, *flags, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout
