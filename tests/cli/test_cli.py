"""The `powercontext` command against a real server: in-process through `main(argv)`, and as a process.

Each test starts its own server (`start_server`) so ids such as `project:demo` and `entry-1` are
predictable, as a user would see them after `make run` on a fresh data directory.
"""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from powercontext_client import PowerContextClient
from powercontext_client.cli import main

from ..conftest import LiveServer

COMMAND = Path(sys.executable).parent / "powercontext"
EXPERIENCE = [
    "--situation",
    "The HTTP API contract changed.",
    "--action",
    "Ran make api-generate and make contract-test.",
    "--outcome",
    "Generated models matched; tests passed.",
    "--lesson",
    "Regenerate, then validate, after every contract change.",
]
MEMORY_TEXT = "After changing OpenAPI, run make api-generate and make contract-test."
QUERY = "What do we run after an API change, and where do releases come from?"


@dataclass
class Result:
    code: int
    out: bytes
    err: str

    @property
    def text(self) -> str:
        return self.out.decode("utf-8")

    @property
    def json(self) -> Any:
        return json.loads(self.out)


Run = Callable[..., Result]


@pytest.fixture
def server(start_server: Callable[..., LiveServer]) -> LiveServer:
    return start_server()


def unused_url() -> str:
    """A URL nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def runner(url: str, capsysbinary: pytest.CaptureFixture[bytes]) -> Run:
    """Runs `powercontext --url URL ARGS...` in-process; `stdin=` feeds standard input."""

    def run(*args: str, stdin: str | None = None) -> Result:
        old_stdin = sys.stdin
        if stdin is not None:
            sys.stdin = io.StringIO(stdin)
        try:
            code = main(["--url", url, *args])
        finally:
            sys.stdin = old_stdin
        captured = capsysbinary.readouterr()
        return Result(code, captured.out, captured.err.decode("utf-8"))

    return run


@pytest.fixture
def cli(server: LiveServer, capsysbinary: pytest.CaptureFixture[bytes]) -> Run:
    """The command against this test's own server."""
    return runner(server.base_url, capsysbinary)


@pytest.fixture
def offline_cli(capsysbinary: pytest.CaptureFixture[bytes]) -> Run:
    """The command pointed at a port nothing listens on: any request it made would exit 1."""
    return runner(unused_url(), capsysbinary)


def session(cli: Run) -> None:
    """The README's session: a Scope with a reference, Memory, an approved Experience."""
    assert cli("create-scope", "team:platform", "--title", "Platform").code == 0
    assert cli("create-scope", "project:demo", "--title", "Demo", "--ref", "team:platform").code == 0
    assert cli("remember", "project:demo", MEMORY_TEXT).code == 0
    assert (
        cli("remember", "team:platform", 'Release builds come from "main" only.', "--kind", "decision").code
        == 0
    )
    assert cli("propose-experience", "project:demo", *EXPERIENCE).code == 0
    assert cli("approve-candidate", "project:demo", "candidate-1", "--expected-version", "1").code == 0


# prepare ------------------------------------------------------------------------------------------


def test_prepare_with_family_flags_prints_exactly_the_content_bytes(cli: Run, server: LiveServer) -> None:
    session(cli)
    result = cli(
        "prepare",
        "project:demo",
        QUERY,
        "--family",
        "memory:6",
        "--family",
        "experience:2",
        "--show",
        "recall_rank",
    )
    assembly = {
        "sections": [{"family": "memory", "limit": 6}, {"family": "experience", "limit": 2}],
        "show": ["recall_rank"],
    }
    with PowerContextClient(server.base_url) as pc:
        expected = pc.prepare_context("project:demo", QUERY, assembly=assembly).content
    assert expected is not None
    assert (result.code, result.err) == (0, "")
    assert result.out == expected.encode("utf-8")
    assert not result.out.endswith(b"\n")
    assert result.text.count("Recall rank: 1") == 2
    assert "## Memory\n" in result.text and "## Experience\n" in result.text
    assert MEMORY_TEXT in result.text and "Release builds" in result.text  # through the reference


def test_prepare_without_assembly_options_is_the_legacy_request(cli: Run, server: LiveServer) -> None:
    session(cli)
    result = cli("prepare", "project:demo", QUERY, "--max-bytes", "2000")
    with httpx.Client(base_url=server.base_url) as http:
        answer = http.post(
            "/v1/context/prepare", json={"scope_id": "project:demo", "query": QUERY, "max_bytes": 2000}
        ).json()
    assert result.code == 0
    assert result.out == answer["content"].encode("utf-8")
    assert "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1" in result.text


def test_prepare_assembly_json_is_sent_as_given(cli: Run) -> None:
    session(cli)
    defaults = cli("prepare", "project:demo", QUERY, "--assembly", "{}")
    flags = cli("prepare", "project:demo", QUERY, "--family", "memory:6", "--family", "experience:2")
    assert defaults.code == flags.code == 0
    assert defaults.out == flags.out  # {} means 6 Memory then 2 Experience
    assert "BEGIN_POWERCONTEXT_PREPARED_TEXT_V1" in defaults.text


def test_prepare_json_prints_the_four_keys(cli: Run) -> None:
    session(cli)
    result = cli("prepare", "project:demo", QUERY, "--family", "memory:2", "--json")
    assert result.code == 0
    assert result.out.endswith(b"}\n") and result.out.count(b"\n") == 1
    answer = result.json
    assert list(answer) == ["schema", "status", "content", "content_bytes"]
    assert answer["status"] == "ready"
    assert answer["content_bytes"] == len(answer["content"].encode("utf-8"))


def test_prepare_empty_answer_prints_nothing_on_stdout(cli: Run) -> None:
    session(cli)
    result = cli("prepare", "project:demo", QUERY, "--assembly", '{"sections": []}')
    assert (result.code, result.out) == (0, b"")
    assert result.err == "powercontext: nothing to prepare: the answer is empty\n"
    assert cli("prepare", "project:demo", QUERY, "--assembly", '{"sections": []}', "--json").json == {
        "schema": "powercontext.prepared-context.v1",
        "status": "empty",
        "content": None,
        "content_bytes": 0,
    }


# Errors -------------------------------------------------------------------------------------------


def test_api_error_is_one_line_with_status_code_and_message_and_exit_1(cli: Run) -> None:
    result = cli("get-scope", "project:missing")
    assert (result.code, result.out) == (1, b"")
    assert result.err.startswith(
        "powercontext: HTTP 404 scope_not_found: The requested Scope was not found. (request id "
    )
    assert result.err.count("\n") == 1


def test_invalid_request_names_the_field_the_server_rejected(cli: Run) -> None:
    session(cli)
    result = cli("prepare", "project:demo", QUERY, "--family", "memory:9")
    assert result.code == 1
    assert result.err.startswith(
        "powercontext: HTTP 422 invalid_request: The request violates the API contract. "
        "[body.assembly.sections.0.limit] Input should be less than or equal to 8"
    )
    null = cli("prepare", "project:demo", QUERY, "--assembly", "null")
    assert null.code == 1
    assert "HTTP 422 invalid_request" in null.err


def test_conflict_is_an_api_error(cli: Run) -> None:
    session(cli)
    result = cli("approve-candidate", "project:demo", "candidate-1", "--expected-version", "1")
    assert result.code == 1
    assert result.err.startswith("powercontext: HTTP 409 ")


def test_unreachable_server_says_so_with_the_url(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    url = unused_url()
    result = runner(url, capsysbinary)("health")
    assert (result.code, result.out) == (1, b"")
    assert result.err.startswith(f"powercontext: the server is not reachable at {url} (")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["prepare", "project:demo"], "the following arguments are required: QUERY"),
        (["prepare", "project:demo", "q", "--family", "memory"], "is not FAMILY:LIMIT"),
        (["prepare", "project:demo", "q", "--family", "memory:x"], "is not a whole number"),
        (["prepare", "project:demo", "q", "--assembly", "{}", "--family", "memory:1"], "cannot be combined"),
        (["prepare", "project:demo", "q", "--assembly", "{"], "--assembly is not valid JSON"),
        (["prepare", "project:demo", "q", "--assembly", "[]"], "--assembly must be a JSON object"),
        (["prepare", "project:demo", " "], "invalid argument: query: must not be blank"),
        (["prepare", "project:demo", "q", "--max-bytes", "100"], "invalid argument: max_bytes:"),
        (["get-scope", "a/b"], "invalid argument: scope_id: must not be blank or hold /"),
        (["remember", "project:demo", "x", "--kind", "Bad"], "invalid argument: kind: must match"),
        (["retire-memory-entry", "project:demo", "entry-1"], "CITATION must be JSON"),
        (["approve-candidate", "project:demo", "candidate-1"], "--expected-version"),
        (["no-such-command"], "invalid choice"),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_usage_errors_exit_2_before_any_request(offline_cli: Run, args: list[str], message: str) -> None:
    result = offline_cli(*args)
    assert (result.code, result.out) == (2, b"")
    assert message in result.err


# Every family through the command line ------------------------------------------------------------


def test_memory_commands_chain_through_json_citations(cli: Run) -> None:
    session(cli)
    first = cli("remember", "project:demo", "Tests run with make test.", "--json").json
    assert first["citation"]["entry_id"] == "entry-2"
    revised = cli(
        "revise-memory-entry",
        "project:demo",
        json.dumps(first),
        "-",
        "--json",
        stdin="Tests run with make unit-test.",
    ).json
    assert revised["text"] == "Tests run with make unit-test."
    old = cli("get-memory-entry", "project:demo", json.dumps(first["citation"]), "--json").json
    assert old["text"] == "Tests run with make test."
    retired = cli("retire-memory-entry", "project:demo", "-", "--json", stdin=json.dumps(revised)).json
    assert retired["state"] == "retired"
    listed = cli("list-memory-entries", "project:demo", "--json").json
    assert [e["text"] for e in listed["entries"]] == [MEMORY_TEXT]
    hits = cli("search-memory", "project:demo", "OpenAPI", "--limit", "1").text
    assert hits.startswith('citation: {"memory_ref":{"family":"memory","artifact_id":"memory","revision":')
    assert f"text: {MEMORY_TEXT}\n" in hits
    assert cli("search-memory", "project:demo", "nothing-matches-this").text == "(no hits)\n"


def test_duplicate_and_expiry_flags(cli: Run, tmp_path: Path) -> None:
    assert cli("create-scope", "project:demo").code == 0
    first = cli(
        "remember", "project:demo", "Ends soon.", "--expires-at", "2099-01-01T00:00:00Z", "--json"
    ).json
    assert (first["expires_at"], first["duplicate"]) == ("2099-01-01T00:00:00.000000+00:00", False)
    again = cli("remember", "project:demo", "ends   SOON.").text
    assert again.endswith("expires_at: 2099-01-01T00:00:00.000000+00:00\nduplicate: true\n")
    kept = cli("remember", "project:demo", "ends soon.", "--no-deduplicate", "--json").json
    assert (kept["citation"]["entry_id"], kept["duplicate"]) == ("entry-2", False)
    # revise keeps the expiry unless told; --no-expires-at clears it.
    same = cli("revise-memory-entry", "project:demo", json.dumps(first), "Ends later.", "--json").json
    assert same["expires_at"] == first["expires_at"]
    cleared = cli("revise-memory-entry", "project:demo", json.dumps(same), "Never ends.", "--no-expires-at")
    assert "expires_at: null\n" in cleared.text
    cli("remember", "project:demo", "Long gone.", "--expires-at", "2001-01-01T00:00:00Z")
    listed = cli("list-memory-entries", "project:demo", "--json").json["entries"]
    everything = cli("list-memory-entries", "project:demo", "--include-expired", "--json").json["entries"]
    assert [e["text"] for e in listed] == ["Never ends.", "ends soon."]
    assert [e["text"] for e in everything] == ["Never ends.", "ends soon.", "Long gone."]
    path = tmp_path / "entries.jsonl"
    path.write_text('"Never ends."\n"fresh"\n"FRESH"\n', encoding="utf-8")
    batch = cli("remember-batch", "project:demo", str(path), "--json").json
    assert batch["duplicate"] == [True, False, True]
    kept_all = cli("remember-batch", "project:demo", str(path), "--keep-duplicates", "--json").json
    assert kept_all["duplicate"] == [False, False, False]


def test_remember_batch_reads_json_lines_in_batches_and_prints_every_citation(
    cli: Run, tmp_path: Path
) -> None:
    assert cli("create-scope", "project:demo").code == 0
    lines = [json.dumps(f"note {i} about otters") for i in range(5)]
    lines.insert(2, "")  # blank lines are skipped
    lines.append(json.dumps({"text": "a decision", "kind": "decision"}))
    path = tmp_path / "entries.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = cli("remember-batch", "project:demo", str(path), "--batch-size", "4", "--kind", "note", "--json")
    assert done.code == 0, done.err
    citations = done.json["citations"]
    assert [c["entry_id"] for c in citations] == [f"entry-{i}" for i in range(1, 7)]
    listed = cli("list-memory-entries", "project:demo", "--json").json["entries"]
    assert [(e["text"], e["kind"]) for e in listed] == [
        *[(f"note {i} about otters", "note") for i in range(5)],
        ("a decision", "decision"),
    ]
    from_stdin = cli("remember-batch", "project:demo", "-", "--json", stdin='"from stdin"\n')
    assert from_stdin.json["citations"][0]["entry_id"] == "entry-7"


def test_remember_batch_reports_what_earlier_batches_stored(cli: Run, tmp_path: Path) -> None:
    assert cli("create-scope", "project:demo").code == 0
    path = tmp_path / "entries.jsonl"
    path.write_text('"one"\n"two"\n\n{"text": "three", "kind": "Bad Kind"}\n', encoding="utf-8")
    failed = cli("remember-batch", "project:demo", str(path), "--batch-size", "2")
    assert failed.code == 2  # the client refuses the batch before sending it
    assert "the failed batch starts at line 4 of FILE; 2 entries were stored by earlier batches" in failed.err
    assert "entries.0.kind" in failed.err
    not_json = tmp_path / "bad.jsonl"
    not_json.write_text("plain words\n", encoding="utf-8")
    refused = cli("remember-batch", "project:demo", str(not_json))
    assert (refused.code, refused.err.strip()) == (2, "powercontext: line 1 of FILE is not JSON")


def test_erase_and_delete_commands(cli: Run) -> None:
    assert cli("create-scope", "project:demo").code == 0
    entry = cli("remember", "project:demo", "A passing thought.", "--json").json
    erased = cli("erase-memory-entry", "project:demo", "entry-1", "--json").json
    assert erased == {"scope_id": "project:demo", "entry_id": "entry-1", "versions": 1, "memory_revision": 2}
    gone = cli("get-memory-entry", "project:demo", json.dumps(entry))
    assert gone.code == 1 and "HTTP 410 entry_erased" in gone.err
    unconfirmed = cli("delete-scope", "project:demo")
    assert (unconfirmed.code, unconfirmed.err.strip()) == (
        2,
        "powercontext: delete-scope erases the Scope for good: add --yes to confirm",
    )
    assert cli("delete-scope", "project:demo", "--yes", "--json").json == {"scope_id": "project:demo"}
    assert "HTTP 404 scope_not_found" in cli("get-scope", "project:demo").err


def test_scope_commands(cli: Run) -> None:
    session(cli)
    shown = cli("get-scope", "project:demo").text
    assert shown == (
        "scope_id: project:demo\ntitle: Demo\nsummary:\ncontext_references: team:platform\nversion: 1\n"
    )
    updated = cli(
        "update-scope",
        "project:demo",
        "--expected-version",
        "1",
        "--summary",
        "The demo.",
        "--no-references",
        "--json",
    ).json
    assert (updated["summary"], updated["context_references"], updated["version"]) == ("The demo.", [], 2)
    page = cli("list-scopes", "--limit", "1").text
    assert page.startswith("scope_id: project:demo\n")
    assert page.endswith("\nnext_cursor: " + page.rsplit("next_cursor: ", 1)[1])
    following = cli("list-scopes", "--cursor", page.rsplit("next_cursor: ", 1)[1].strip(), "--json").json
    assert [s["scope_id"] for s in following["scopes"]] == ["team:platform"]


def test_experience_profile_candidate_and_topic_commands(cli: Run) -> None:
    session(cli)
    hits = cli("search-experience", "project:demo", "contract", "--json").json["hits"]
    assert [h["artifact"]["artifact_id"] for h in hits] == ["experience-1"]
    lesson = cli("get-experience", "project:demo", "experience-1", "1").text
    assert "lesson: Regenerate, then validate, after every contract change.\n" in lesson
    profile = cli("propose-profile", "project:demo", "-", "--json", stdin="# Demo\n\nPython 3.11.\n").json
    assert (profile["candidate_id"], profile["state"]) == ("candidate-2", "pending")
    pending = cli("list-candidates", "project:demo", "--state", "pending", "--json").json["candidates"]
    assert [c["candidate_id"] for c in pending] == ["candidate-2"]
    rejected = cli(
        "reject-candidate", "project:demo", "candidate-2", "--expected-version", "1", "--json"
    ).json
    assert rejected["state"] == "rejected"
    assert cli("get-candidate", "project:demo", "candidate-2", "--json").json == rejected
    topic = cli(
        "put-topic",
        "project:demo",
        "--title",
        "Releases",
        "--summary",
        "How releases are cut.",
        "--detail",
        "From main.",
    ).text
    assert topic.startswith('artifact: {"family":"topic-memory","artifact_id":"topic-1","revision":1}\n')
    assert "detail: From main.\n" in topic
    assert cli("search-topics", "project:demo", "releases", "--json").json["hits"][0]["title"] == "Releases"
    assert cli("get-topic", "project:demo", "topic-1", "1", "--json").json["detail"] == "From main."
    exact = cli("get-artifact-revision", "project:demo", "experience", "experience-1", "1", "--json").json
    assert set(exact) == {"scope_id", "artifact", "experience"}
    assert cli("capabilities").text.startswith("api_version: ")
    assert cli("health").text == "live: ok\nready: ok\n"


def test_options_work_before_and_after_the_command(cli: Run, server: LiveServer) -> None:
    before = main(["--json", "--url", server.base_url, "health"])
    after = main(["health", "--url", server.base_url, "--json"])
    assert before == after == 0


# Connection settings ------------------------------------------------------------------------------


def test_url_and_token_come_from_the_environment_and_flags_override(
    start_server: Callable[..., LiveServer],
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    server = start_server(POWERCONTEXT_SERVER_AUTH_TOKEN="pc_secret")
    monkeypatch.setenv("POWERCONTEXT_URL", server.base_url)
    monkeypatch.delenv("POWERCONTEXT_TOKEN", raising=False)
    assert main(["list-scopes"]) == 1
    assert capsysbinary.readouterr().err.decode().startswith("powercontext: HTTP 401 unauthorized: ")
    assert main(["list-scopes", "--token", "pc_secret", "--json"]) == 0
    assert json.loads(capsysbinary.readouterr().out) == {"scopes": [], "next_cursor": None}
    monkeypatch.setenv("POWERCONTEXT_TOKEN", "pc_secret")
    assert main(["create-scope", "project:demo"]) == 0
    assert main(["list-scopes", "--token", "pc_wrong"]) == 1
    assert "HTTP 401" in capsysbinary.readouterr().err.decode()


# Help ---------------------------------------------------------------------------------------------


def test_help_exits_0_and_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in (
        "serve",
        "token",
        "create-scope",
        "remember",
        "propose-experience",
        "prepare",
        "search-topics",
    ):
        assert f"    {command}" in out
    assert "POWERCONTEXT_URL" in out and "POWERCONTEXT_TOKEN" in out


def test_every_option_of_every_command_has_help_text() -> None:
    from .test_cli_docs import subcommands

    for name, sub in subcommands().items():
        for action in sub._actions:
            if name not in ("serve", "token"):
                assert action.help, f"{name} {action.option_strings or action.dest}"


def test_serve_help_and_token_come_from_the_server(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--help"]) == 0
    assert "--data-dir" in capsys.readouterr().out
    assert main(["token"]) == 0
    token, digest = capsys.readouterr().out.splitlines()
    assert token.startswith("token:        pc_")
    assert digest.startswith("token_sha256: ")


# As a process -------------------------------------------------------------------------------------


def test_installed_command_writes_the_content_bytes_to_stdout(cli: Run, server: LiveServer) -> None:
    session(cli)
    with PowerContextClient(server.base_url) as pc:
        expected = pc.prepare_context("project:demo", QUERY, assembly={"show": ["recall_rank"]}).content
    assert expected is not None
    process = subprocess.run(
        [COMMAND, "prepare", "project:demo", QUERY, "--show", "recall_rank", "--url", server.base_url],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (process.returncode, process.stderr) == (0, b"")
    assert process.stdout == expected.encode("utf-8")


def test_installed_command_reports_an_api_error_and_exits_1(server: LiveServer) -> None:
    process = subprocess.run(
        [COMMAND, "--url", server.base_url, "get-scope", "project:missing"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert process.returncode == 1
    assert process.stdout == ""
    assert process.stderr.startswith("powercontext: HTTP 404 scope_not_found: ")


def test_prepare_explain_prints_the_receipt_as_a_table(cli: Run, server: LiveServer) -> None:
    session(cli)
    result = cli("prepare", "project:demo", QUERY, "--family", "memory:1", "--explain")
    assert (result.code, result.err) == (0, "")
    with PowerContextClient(server.base_url) as pc:
        explained = pc.explain_prepare_context(
            "project:demo", QUERY, assembly={"sections": [{"family": "memory", "limit": 1}]}
        )
    lines = result.text.splitlines()
    assert lines[0] == f"status: ready, content_bytes: {explained.content_bytes}"
    assert lines[1].split() == [
        "family",
        "rank",
        "scope",
        "artifact",
        "revision",
        "entry",
        "bytes",
        "body",
        "result",
    ]
    rows = lines[2:]
    assert len(rows) == len(explained.items) >= 2
    assert rows[0].split()[:3] == ["memory", "1", "project:demo"] and rows[0].endswith("included")
    assert rows[1].endswith("left out: limit")
    as_json = cli("prepare", "project:demo", QUERY, "--family", "memory:1", "--explain", "--json").json
    assert as_json == explained.model_dump(mode="json", by_alias=True)
