"""When PowerContext cannot give context, the Codex session goes on without it: the server is
stopped or never answers, the token is refused, or the answer fails the strict check. No context reaches the model,
and the hook's diagnostic names the outcome (Codex shows no hook output in `codex exec`, so it is
read from the hook log). `doctor` fails with a line saying the server is down."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import LiveServer
from tests.hosts.codex.session import (
    CodexHome,
    input_texts,
    powercontext,
    request_for,
    run_exec,
    setup_codex,
)
from tests.hosts.fakes import (
    HangingServer,
    RecordingServer,
    error_reply,
    fixed_reply,
    json_reply,
    scripted_paths,
    unused_port_url,
)

PROMPT = "Which checks run before a release?"
TOKEN = "codex-right-token"
WRONG = "codex-wrong-token"
# Passes a glance, fails the strict check: content_bytes is not the UTF-8 length of content.
BAD_ANSWER = {
    "schema": "powercontext.prepared-context.v1",
    "status": "ready",
    "content": "Recall: x",
    "content_bytes": 99,
}


def hook_log(home: CodexHome) -> str:
    path = home.home / ".local" / "state" / "powercontext" / "codex.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def assert_no_context(model: RecordingServer) -> None:
    texts = input_texts(request_for(model, PROMPT))
    assert texts[-1] == ("user", PROMPT)  # nothing after the prompt: no context was added


def test_with_the_server_stopped_the_session_goes_on_without_context(
    home: CodexHome, model: RecordingServer
) -> None:
    setup_codex(home, unused_port_url())

    result = run_exec(home, PROMPT, home.env(POWERCONTEXT_SCOPE="project:release", POWERCONTEXT_TOKEN=TOKEN))

    assert_no_context(model)
    assert "prompt: context skipped: server-unreachable" in hook_log(home)
    assert TOKEN not in hook_log(home) + result.stdout + result.stderr and PROMPT not in hook_log(home)


def test_with_a_server_that_never_answers_the_prompt_waits_only_for_the_deadline(
    home: CodexHome, model: RecordingServer
) -> None:
    with HangingServer() as hanging:
        setup_codex(home, hanging.base_url, "--timeout", "1", "--no-capture")
        run_exec(home, PROMPT, home.env(POWERCONTEXT_SCOPE="project:release"))
        assert hanging.accepted == 1

    assert_no_context(model)
    assert "prompt: context skipped: timeout" in hook_log(home)


def test_with_a_refused_token_the_session_goes_on_without_context(
    start_server: Callable[..., LiveServer], home: CodexHome, model: RecordingServer
) -> None:
    server = start_server(POWERCONTEXT_SERVER_AUTH_TOKEN=TOKEN)
    setup_codex(home, server.base_url)

    result = run_exec(home, PROMPT, home.env(POWERCONTEXT_SCOPE="project:release", POWERCONTEXT_TOKEN=WRONG))

    assert_no_context(model)
    assert "prompt: context skipped: http-401" in hook_log(home)
    assert WRONG not in hook_log(home) + result.stdout + result.stderr


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        (json_reply(200, BAD_ANSWER), "invalid-answer"),
        (json_reply(200, {**BAD_ANSWER, "content": "x" * 9000, "content_bytes": 9000}), "oversized-answer"),
        (error_reply(422, "invalid_request"), "http-422"),
        (error_reply(500, "internal"), "http-5xx"),
    ],
)
def test_an_answer_failing_validation_adds_no_context_and_names_the_outcome(
    answer: object, outcome: str, home: CodexHome, model: RecordingServer
) -> None:
    with RecordingServer(scripted_paths({"/v1/context/prepare": [fixed_reply(answer)]})) as server:  # type: ignore[arg-type]
        setup_codex(home, server.base_url, "--no-capture")
        run_exec(home, PROMPT, home.env(POWERCONTEXT_SCOPE="project:release"))
        assert len(server.requests_to("/v1/context/prepare")) == 1

    assert_no_context(model)
    assert f"prompt: context skipped: {outcome}" in hook_log(home)


def test_doctor_fails_with_a_clear_line_when_the_server_is_down(home: CodexHome) -> None:
    down = unused_port_url()
    setup_codex(home, down)

    result = powercontext(home, "doctor", "codex", env=home.env(POWERCONTEXT_SCOPE="project:release"))

    assert result.returncode != 0
    lines = result.stdout.splitlines()
    assert any(line.startswith("FAIL") and "server" in line and down in line for line in lines), result.stdout
    assert any(line.startswith("ok") and "trusted" in line for line in lines), result.stdout
