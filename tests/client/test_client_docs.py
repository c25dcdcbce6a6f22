"""The Python examples in docs/client.md run as written."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from powercontext_client import PowerContextClient

from .client_recorder import READY, Recorder, reply

CLIENT_DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", CLIENT_DOC.read_text(encoding="utf-8"), re.S)


def block_containing(text: str) -> str:
    (block,) = [b for b in python_blocks() if text in b]
    return block


def test_documented_mock_transport_example_runs_and_its_assertion_holds() -> None:
    exec(compile(block_containing("httpx.MockTransport(handler)"), str(CLIENT_DOC), "exec"), {})


def test_documented_host_function_injects_ready_content_and_fails_open() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(block_containing("def context_for_turn"), str(CLIENT_DOC), "exec"), namespace)
    context_for_turn = namespace["context_for_turn"]

    with Recorder(reply(200, READY)).client() as pc:
        assert context_for_turn(pc, "project:demo", "hello") == READY["content"]

    wrong_length = {**READY, "content_bytes": 6}
    with Recorder(reply(200, wrong_length)).client() as pc:
        assert context_for_turn(pc, "project:demo", "hello") is None

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with PowerContextClient("http://h.test", transport=httpx.MockTransport(refuse)) as pc:
        assert context_for_turn(pc, "project:demo", "hello") is None


def test_documented_experience_and_assembly_examples_run_against_a_server(
    start_server: Callable[..., Any],
) -> None:
    server = start_server()
    with PowerContextClient(server.base_url) as pc:
        pc.create_scope("project:demo")
        namespace: dict[str, Any] = {"pc": pc}
        exec(compile(block_containing("pc.propose_experience("), str(CLIENT_DOC), "exec"), namespace)
        assert namespace["lesson"] == "Regenerate after a contract change, then validate."
        assert namespace["same"].lesson == namespace["lesson"]
        exec(compile(block_containing("assembly=Assembly()"), str(CLIENT_DOC), "exec"), namespace)


def test_documented_async_example_runs_against_a_server(
    start_server: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    server = start_server()
    with PowerContextClient(server.base_url) as pc:
        pc.create_scope("project:demo")
        candidate = pc.propose_experience(
            "project:demo",
            situation="The contract changed.",
            action="Regenerated.",
            outcome="Tests passed.",
            lesson="Regenerate after a contract change.",
        )
        pc.approve_candidate("project:demo", candidate.candidate_id, expected_version=candidate.version)
    block = block_containing("async def lesson_for").replace("http://127.0.0.1:8000", server.base_url)
    exec(compile(block, str(CLIENT_DOC), "exec"), {})
    assert capsys.readouterr().out == "Regenerate after a contract change.\n"


def test_documented_compatibility_table_names_the_test_that_pins_it() -> None:
    text = CLIENT_DOC.read_text(encoding="utf-8")
    assert "## Client and server versions" in text
    assert (CLIENT_DOC.parents[1] / "tests" / "client" / "test_client_compat.py").exists()
