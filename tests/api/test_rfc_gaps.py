"""RFC rules the audit of issue #19 found untested, checked through the public HTTP API.

Each test quotes the RFC sentence (rfc-prepared-context-text-assembly.md) it proves. The blank-body
and exact-identity rules need candidates the store cannot produce: tests/runtime/test_rfc_gaps_units.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from powercontext_client.cli import main as command_main

from .helpers import (
    EMPTY,
    assembly,
    assert_invalid_request,
    experience,
    new_scope,
    prepare,
    profile,
    remember,
    search,
    text_document,
    text_entry,
    topic,
)

MAX_ENTRIES = "POWERCONTEXT_SERVER_RUNTIME_CONTEXT_ASSEMBLY_MAX_ENTRIES"


def size(text: str) -> int:
    return len(text.encode("utf-8"))


# 1(a) Recall rank gaps ----------------------------------------------------------------------------


def test_recall_rank_may_have_gaps_when_budgeting_skips_entries(http: httpx.Client) -> None:
    """R: "The optional Recall rank identifies a position in the family candidate list and may have
    gaps when budgeting skips entries." and "Headings number the entries actually included."

    The second candidate is too long for the room the first leaves (its cut would be under
    64 bytes), so it is skipped: the third is printed as Memory 2 with Recall rank 3.
    """
    scope_id = new_scope(http)
    first = remember(http, scope_id, "puffin puffin puffin")
    remember(http, scope_id, "puffin puffin " + "p" * 400)
    third = remember(http, scope_id, "puffin note")
    hits = search(http, "memory", scope_id, "puffin")
    assert [h["text"] for h in hits][::2] == [first["text"], third["text"]]  # the long one is second
    sections = [{"family": "memory", "limit": 3}]

    roomy = assembly(http, scope_id, "puffin", max_bytes=32768, sections=sections, show=["recall_rank"])
    ranks = [line for line in roomy["content"].split("\n") if line.startswith("    Recall rank:")]
    assert ranks == ["    Recall rank: 1", "    Recall rank: 2", "    Recall rank: 3"]

    def entry(number: int, hit: dict[str, Any], rank: int) -> str:
        citation = hit["citation"]
        return text_entry(
            "Memory",
            number,
            scope_id,
            "memory",
            "memory",
            citation["memory_ref"]["revision"],
            hit["text"],
            entry=(citation["entry_id"], citation["entry_version_id"]),
            rank=rank,
        )

    expected = text_document(("Memory", [entry(1, hits[0], 1), entry(2, hits[2], 3)]))
    tight = assembly(
        http, scope_id, "puffin", max_bytes=size(expected), sections=sections, show=["recall_rank"]
    )
    assert tight["content"] == expected


# 1(b) Pool caps -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolFamily:
    """How to fill one family's pool with long candidates ahead of one short one."""

    family: str
    title: str
    query: str
    pool: int
    add_long: Callable[[httpx.Client, str, int], None]
    add_short: Callable[[httpx.Client, str], None]


def _memory_long(http: httpx.Client, scope_id: str, i: int) -> None:
    remember(http, scope_id, "gull " * 30 + f"long{i}")


def _memory_short(http: httpx.Client, scope_id: str) -> None:
    remember(http, scope_id, "gull")


def _experience_long(http: httpx.Client, scope_id: str, i: int) -> None:
    experience(http, scope_id, "tern " * 30 + f"long{i}", "a", "o", "l")


def _experience_short(http: httpx.Client, scope_id: str) -> None:
    experience(http, scope_id, "tern", "a", "o", "l")


def _topic_long(http: httpx.Client, scope_id: str, i: int) -> None:
    topic(http, scope_id, "skua " * 30, "skua " * 30 + f"long{i}")


def _topic_short(http: httpx.Client, scope_id: str) -> None:
    topic(http, scope_id, "skua", "s")


MEMORY = PoolFamily("memory", "Memory", "gull", 16, _memory_long, _memory_short)
EXPERIENCE = PoolFamily("experience", "Experience", "tern", 8, _experience_long, _experience_short)
TOPIC = PoolFamily("topic-memory", "Topic Memory", "skua", 8, _topic_long, _topic_short)


def short_only_document(http: httpx.Client, family: PoolFamily, scope_id: str) -> str:
    """The text holding just the short candidate, with the citation search reports for it now."""
    hit = search(http, family.family, scope_id, family.query)[-1]
    if family.family == "memory":
        citation = hit["citation"]
        ref = citation["memory_ref"]
        entry: tuple[str, str] | None = (citation["entry_id"], citation["entry_version_id"])
        body = hit["text"]
    elif family.family == "experience":
        ref, entry = hit["artifact"], None
        body = f"Situation: {hit['situation']}\nAction: a\nOutcome: o\nLesson: l"
    else:
        ref, entry = hit["artifact"], None
        body = f"Title: {hit['title']}\n\nSummary: {hit['summary']}"
    return text_document(
        (
            family.title,
            [
                text_entry(
                    family.title,
                    1,
                    scope_id,
                    family.family,
                    ref["artifact_id"],
                    ref["revision"],
                    body,
                    entry=entry,
                )
            ],
        )
    )


def assert_only_the_short_one_fits(http: httpx.Client, family: PoolFamily, scope_id: str, used: bool) -> None:
    """At a budget of exactly the short candidate's document, the answer is that document when the
    candidate is in the pool (`used`), and empty when the pool bound cut it off."""
    expected = short_only_document(http, family, scope_id)
    assert size(expected) >= 512
    result = assembly(
        http,
        scope_id,
        family.query,
        max_bytes=size(expected),
        sections=[{"family": family.family, "limit": 2}],
    )
    assert result["content"] == expected if used else result == EMPTY


def assert_short_is_last(http: httpx.Client, family: PoolFamily, scope_id: str, count: int) -> None:
    hits = search(http, family.family, scope_id, family.query)
    assert len(hits) == count
    last = hits[-1]
    text = last.get("text") or last.get("situation") or last.get("title")
    assert text in ("gull", "tern", "skua"), "the short candidate must rank last in its Scope"


@pytest.mark.parametrize("family", [MEMORY, EXPERIENCE, TOPIC], ids=lambda f: f.family)
def test_candidates_past_the_pool_bound_of_a_scope_are_never_used(
    http: httpx.Client, family: PoolFamily
) -> None:
    """R step 3: "Each Scope retains the existing candidate search bounds: 16 Memory and eight
    Experience candidates. Topic Memory recalls up to eight candidates from the current Scope only.
    Output limits neither expand those pools nor trigger repeated searches to fill output."

    The 17th Memory (9th Experience or Topic) candidate is short and fits the budget exactly; every
    candidate ahead of it is too long to fit even cut. Beyond the bound it is never used (the
    result is empty); one place earlier, at the bound, it is the entry printed.
    """
    for ahead, at_bound in ((family.pool, False), (family.pool - 1, True)):
        scope_id = new_scope(http, prefix="pool-bound")
        family.add_short(http, scope_id)  # created first: the smallest id, so the cheapest citation
        for i in range(ahead):
            family.add_long(http, scope_id, i)
        assert_short_is_last(http, family, scope_id, ahead + 1)
        assert_only_the_short_one_fits(http, family, scope_id, at_bound)


@pytest.mark.parametrize("family", [MEMORY, EXPERIENCE], ids=lambda f: f.family)
def test_the_merged_pool_is_capped_at_16_memory_or_8_experience_candidates(
    http: httpx.Client, family: PoolFamily
) -> None:
    """R step 4: "Interleave by current Scope followed by Context References in their configured
    order, then cap the merged pool at 16 Memory or eight Experience candidates."

    The current Scope holds half the pool of long candidates and then the short one; a Context
    Reference holds the other half. Interleaved, the short one is the 17th (9th) candidate and is
    never used; with one long candidate fewer in the reference it is the 16th (8th) and is printed.
    """
    half = family.pool // 2
    for in_reference, at_bound in ((half, False), (half - 1, True)):
        reference = new_scope(http, prefix="pool-merge")
        scope_id = new_scope(http, prefix="pool-merge", context_references=[reference])
        family.add_short(http, scope_id)
        for i in range(half):
            family.add_long(http, scope_id, i)
        for i in range(in_reference):
            family.add_long(http, reference, i)
        assert_short_is_last(http, family, scope_id, half + 1)
        assert_only_the_short_one_fits(http, family, scope_id, at_bound)


# 1(c) The total-entries setting at start -----------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "eight", " 8", "8 ", "²", "٣", "1e1"])
def test_serve_refuses_a_total_entries_setting_that_is_not_a_positive_integer(
    tmp_path: Path, value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """R: "POWERCONTEXT_SERVER_RUNTIME_CONTEXT_ASSEMBLY_MAX_ENTRIES configures this positive-integer
    total policy." `powercontext serve` refuses anything else before it opens a store or a port:
    exit status 2 and one line naming the setting, no traceback. ("²" once passed `str.isdigit`
    and crashed in `int()`; "٣" was taken as 3: only ASCII digits are an integer here.)

    The command runs in process (its `main`, as the installed script calls it): a traceback would
    be an exception out of it; a process would add 1.5 s of imports to each of these cases.
    """
    for name in [k for k in os.environ if k.startswith("POWERCONTEXT_SERVER_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv(MAX_ENTRIES, value)
    # Were the value taken, serve would stop at its next check (no access control on a
    # non-loopback address) with another message, rather than start and wait for requests.
    monkeypatch.setenv("POWERCONTEXT_SERVER_HOST", "192.0.2.1")
    code = command_main(["serve", "--data-dir", str(tmp_path / "data")])
    out, err = capsys.readouterr()
    assert (code, out, err) == (2, "", f"powercontext: {MAX_ENTRIES} must be a positive integer.\n")
    assert not (tmp_path / "data").exists()  # refused before the store was opened


# 1(d) Independence from the total-entries setting -------------------------------------------------

SEEDED_SCOPE = "project:settings-independence"


def seed(http: httpx.Client) -> None:
    """The same data, with the same ids, on every server."""
    assert http.post("/v1/scopes", json={"scope_id": SEEDED_SCOPE}).status_code == 201
    for i in range(10):
        remember(http, SEEDED_SCOPE, f"shearwater fact {i} " + "w" * (300 + 40 * i))
    for i in range(3):
        experience(http, SEEDED_SCOPE, f"shearwater case {i}", "act", "out", "learn")
        topic(http, SEEDED_SCOPE, f"Shearwater topic {i}", "summary", "shearwater detail")


def observe(http: httpx.Client) -> dict[str, Any]:
    """Everything about a server's answers that must not depend on the total-entries setting."""
    seen: dict[str, Any] = {}
    for max_bytes in (8000, 1500, 512):
        seen[f"legacy {max_bytes}"] = prepare(http, SEEDED_SCOPE, "shearwater", max_bytes=max_bytes)
    for family in ("memory", "experience", "topic-memory"):  # one entry: within every server's total
        for max_bytes in (8000, 900, 700):
            body = {"sections": [{"family": family, "limit": 1}]}
            seen[f"{family} {max_bytes}"] = assembly(http, SEEDED_SCOPE, "shearwater", max_bytes, **body)
    invalid: dict[str, dict[str, Any]] = {
        "memory over 8": {"assembly": {"sections": [{"family": "memory", "limit": 9}]}},
        "experience over 2": {"assembly": {"sections": [{"family": "experience", "limit": 3}]}},
        "max_bytes under 512": {"max_bytes": 511},
        "max_bytes over 32768": {"max_bytes": 32769, "assembly": {"sections": []}},
    }
    for name, fields in invalid.items():
        response = http.post(
            "/v1/context/prepare", json={"scope_id": SEEDED_SCOPE, "query": "shearwater", **fields}
        )
        assert_invalid_request(response)
        seen[name] = [(e["type"], e["loc"]) for e in response.json()["error"]["details"]["errors"]]
    return seen


def test_per_family_limits_budgets_and_legacy_output_are_independent_of_the_total_entries_setting(
    start_server: Any,
) -> None:
    """R: "Per-family limits, byte budgets, and legacy output when assembly is omitted are
    independent of this setting."

    Three servers with the same data and a total of 1, 8 (the default) and 32 entries answer the
    legacy requests, the budgeted text requests and the per-family limit violations identically.
    """
    answers: dict[str, dict[str, Any]] = {}
    for total in ("1", "", "32"):
        server = start_server(**({MAX_ENTRIES: total} if total else {}))
        with httpx.Client(base_url=server.base_url, timeout=30.0) as http:
            seed(http)
            answers[total or "default"] = observe(http)
            if total == "32":
                # A total of 32 admits these sections, yet Memory still stops at 8 and Experience at 2.
                sections = [
                    {"family": "memory", "limit": 8},
                    {"family": "experience", "limit": 2},
                    {"family": "topic-memory", "limit": 8},
                ]
                content = assembly(http, SEEDED_SCOPE, "shearwater", 32768, sections=sections)["content"]
                assert (content.count("\n### Memory "), content.count("\n### Experience ")) == (8, 2)
            if total == "1":
                # The setting is in force: the 6 + 2 defaults are over this server's total.
                response = http.post(
                    "/v1/context/prepare", json={"scope_id": SEEDED_SCOPE, "query": "q", "assembly": {}}
                )
                assert [e["type"] for e in assert_invalid_request(response)] == ["too_many_entries"]
    assert answers["1"] == answers["default"] == answers["32"]
    legacy = answers["1"]["legacy 8000"]["content"]
    assert legacy.count('{"citation":') == 8  # the legacy cap of 8 items, not the total of 1
    assert "    Truncated: yes" in answers["1"]["memory 700"]["content"]  # the budget did cut


# 2. Exact citations survive a moved head -----------------------------------------------------------


@dataclass(frozen=True)
class PrintedEntry:
    """One entry as printed in the text: its citation lines parsed back, and its body unquoted."""

    scope_id: str
    family: str
    artifact_id: str
    revision: int
    entry_id: str | None
    entry_version_id: str | None
    body: str


def printed_entries(content: str) -> list[PrintedEntry]:
    """Parse the metadata and body of every entry of a prepared text (a test's reading only:
    machine readers are meant to use the exact-read operations, never the Markdown)."""
    entries: list[PrintedEntry] = []
    body_part = content.split("\n\nEND_POWERCONTEXT_PREPARED_TEXT_V1")[0]
    for chunk in body_part.split("\n\n### ")[1:]:
        meta_block, quoted = chunk.split("\n\n", 1)[1].split("\n\n>     ", 1)
        fields: dict[str, str] = {}
        for line in meta_block.split("\n"):
            name, value = line.strip().split(": ", 1)
            fields[name] = value
        artifact = dict(part.split("=", 1) for part in fields["Artifact"].split(", "))
        entry = dict(part.split("=", 1) for part in fields["Entry"].split(", ")) if "Entry" in fields else {}
        section_end = quoted.find("\n\n## ")
        quoted = quoted if section_end < 0 else quoted[:section_end]
        entries.append(
            PrintedEntry(
                scope_id=json.loads(fields["Scope"]),
                family=json.loads(artifact["family"]),
                artifact_id=json.loads(artifact["id"]),
                revision=int(artifact["revision"]),
                entry_id=json.loads(entry["id"]) if entry else None,
                entry_version_id=json.loads(entry["version"]) if entry else None,
                body=quoted.replace("\n>     ", "\n"),
            )
        )
    return entries


def exact_read(http: httpx.Client, printed: PrintedEntry) -> str:
    """The body of the cited version, read back through the exact-read operations."""
    ref = {"family": printed.family, "artifact_id": printed.artifact_id, "revision": printed.revision}
    if printed.family == "memory":
        citation = {
            "memory_ref": ref,
            "entry_id": printed.entry_id,
            "entry_version_id": printed.entry_version_id,
        }
        response = http.post(
            "/v1/memory/entries/get", json={"scope_id": printed.scope_id, "citation": citation}
        )
        assert response.status_code == 200, response.text
        return str(response.json()["text"])
    response = http.get(
        f"/v1/scopes/{printed.scope_id}/artifacts/{printed.family}/{printed.artifact_id}/revisions/{printed.revision}"
    )
    assert response.status_code == 200, response.text
    read = response.json()
    if printed.family == "experience":
        e = read["experience"]
        return f"Situation: {e['situation']}\nAction: {e['action']}\nOutcome: {e['outcome']}\nLesson: {e['lesson']}"
    if printed.family == "topic-memory":
        t = read["topic"]
        return f"Title: {t['title']}\n\nSummary: {t['summary']}"
    return str(read["profile"])


def test_a_printed_citation_reads_back_its_exact_old_version_after_the_head_moves(http: httpx.Client) -> None:
    """R: "For a complete body, the Agent reads the exact Artifact revision in the cited Scope.
    Memory also requires the entry ID and entry version ID. An exact citation must not be replaced
    with the latest Head." and acceptance 6: "cited reads still return the exact version".

    The citations are parsed from the delivered `content`, every head is then moved (Memory entry
    revised, Experience and Profile superseded by approved revisions, Topic revised), and each
    cited version is read back through the exact-read operations: the old text, as printed.
    """
    reference = new_scope(http)
    scope_id = new_scope(http, context_references=[reference])
    old_memory = remember(http, scope_id, "The cormorant roost is on pier 4.")
    remember(http, reference, "Cormorant counts happen at dawn.")
    old_experience = experience(http, reference, "cormorant survey", "counted", "41 birds", "start early")
    old_topic = topic(http, scope_id, "Cormorant roost", "Pier 4, north side")
    profile(http, scope_id, "Studies cormorants.\n")
    sections = [
        {"family": "memory", "limit": 2},
        {"family": "experience", "limit": 1},
        {"family": "topic-memory", "limit": 1},
        {"family": "profile", "limit": 1},
    ]
    content = assembly(http, scope_id, "cormorant", sections=sections)["content"]
    printed = printed_entries(content)
    assert [(p.family, p.scope_id) for p in printed] == [
        ("memory", scope_id),
        ("memory", reference),
        ("experience", reference),
        ("topic-memory", scope_id),
        ("profile", scope_id),
    ]
    assert all(exact_read(http, p) == p.body for p in printed)

    # Move every head past the printed versions.
    revised = http.post(
        "/v1/memory/entries/revise",
        json={
            "scope_id": scope_id,
            "citation": old_memory["citation"],
            "text": "The cormorant roost moved to pier 9.",
        },
    )
    assert revised.status_code == 200, revised.text
    [reference_entry] = [p for p in printed if p.family == "memory" and p.scope_id == reference]
    reference_citation = {
        "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": reference_entry.revision},
        "entry_id": reference_entry.entry_id,
        "entry_version_id": reference_entry.entry_version_id,
    }
    revised = http.post(
        "/v1/memory/entries/revise",
        json={
            "scope_id": reference,
            "citation": reference_citation,
            "text": "Cormorant counts moved to dusk.",
        },
    )
    assert revised.status_code == 200, revised.text
    proposed = http.post(
        "/v1/experience/propose",
        json={
            "scope_id": reference,
            "situation": "cormorant survey, again",
            "action": "counted twice",
            "outcome": "44 birds",
            "lesson": "start earlier",
            "artifact_id": old_experience["committed"]["artifact_id"],
        },
    ).json()
    approved = http.post(
        "/v1/candidates/approve",
        json={"scope_id": reference, "candidate_id": proposed["candidate_id"], "expected_version": 1},
    )
    assert approved.status_code == 200, approved.text
    topic(
        http,
        scope_id,
        "Cormorant roost",
        "Pier 9 now",
        artifact_id=old_topic["artifact"]["artifact_id"],
        expected_revision=old_topic["artifact"]["revision"],
    )
    profile(http, scope_id, "Studies cormorants and shags.\n")

    moved = printed_entries(assembly(http, scope_id, "cormorant", sections=sections)["content"])
    assert {p.body for p in moved}.isdisjoint({p.body for p in printed})  # every head moved
    for p in printed:
        assert exact_read(http, p) == p.body, p
    assert printed[0].body == old_memory["text"]
