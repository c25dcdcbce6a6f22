"""The Memory page `/ui/memory` in headless Chromium (Debian's package, driven by Playwright).

Every action is done through the page as a person would (type a token, pick a Scope, press the
buttons) and then checked through the API: entries listed and searched as the API lists and finds
them, a revision, a retirement and an erasure (behind a confirmation naming what goes) stored, a
Candidate approved and one rejected with their diffs shown, a stale expected version shown as the
API's 409. A read-only token is offered no write control. A screenshot of each test is kept
(`conftest.py`), which also fails a test on any console, script or CSP error, stored data or cookie.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, expect

from powercontext_runtime import Settings, token_digest

from ..api.helpers import new_scope, profile, remember
from .conftest import running

HOSTILE = '<img src=x onerror="alert(1)"> <script>alert("x")</script> & <b>bold</b> release notes'


def sqlite(tmp_path: Path, **fields: Any) -> Settings:
    return Settings(database_url=f"sqlite:///{tmp_path / 'memory-ui.sqlite3'}", **fields)


def seed(http: httpx.Client) -> tuple[str, list[dict[str, Any]]]:
    scope_id = new_scope(http, "ui")
    texts = [
        "The release train leaves on Thursdays at noon.",
        "Deploys need two approvals from the platform team.",
        "Rollbacks go through the release dashboard first.",
        HOSTILE,
    ]
    return scope_id, [remember(http, scope_id, text) for text in texts]


def open_scope(page: Page, base_url: str, scope_id: str, token: str = "") -> None:
    page.goto(base_url + "/ui/memory")
    page.wait_for_selector("body[data-ready='true']")
    if token:
        page.fill("#token", token)
        page.click("#load-scopes")
    page.wait_for_selector(f"#scope option[value='{scope_id}']", state="attached")
    page.select_option("#scope", scope_id)
    page.click("#open-scope")
    expect(page.locator("#status")).to_have_text(f"Opened {scope_id}.")


def open_entry(page: Page, entry_id: str) -> None:
    """Open an entry and wait until the page shows it (its history is read first)."""
    page.click(f"[aria-label='open {entry_id}']")
    expect(page.locator("#entry-id")).to_have_text(entry_id)


def table(page: Page, selector: str) -> list[list[str]]:
    return [
        [text for text in row.locator("td").all_text_contents()]
        for row in page.locator(f"{selector} tbody tr").all()
    ]


def listed(http: httpx.Client, scope_id: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = http.post(
        "/v1/memory/entries/list", json={"scope_id": scope_id, "limit": 200}
    ).json()["entries"]
    return entries


def history(http: httpx.Client, scope_id: str, entry_id: str) -> httpx.Response:
    return http.post("/v1/memory/entries/history", json={"scope_id": scope_id, "entry_id": entry_id})


def test_entries_are_listed_searched_revised_retired_and_erased_through_the_page(
    page: Page, tmp_path: Path
) -> None:
    with running(sqlite(tmp_path)) as server, httpx.Client(base_url=server.base_url) as http:
        scope_id, entries = seed(http)
        open_scope(page, server.base_url, scope_id)
        page.press("#token", "Enter")  # lists the Scopes again; the form is never sent anywhere
        expect(page.locator("#status")).to_have_text("1 Scope(s).")
        rows = table(page, "#entries")
        assert [(row[0], row[3], row[5]) for row in rows] == [
            (e["citation"]["entry_id"], e["citation"]["entry_version_id"], e["text"])
            for e in listed(http, scope_id)
        ]
        # Hostile text is shown as the characters it is: no element was made from it.
        assert page.locator("#entries img, #entries script, #entries b").count() == 0

        page.fill("#query", "release")
        page.click("#do-search")
        expect(page.locator("#status")).to_contain_text("hit(s) for the search")
        hits = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": "release", "limit": 50})
        assert [row[0] for row in table(page, "#entries")] == [
            h["citation"]["entry_id"] for h in hits.json()["hits"]
        ]
        page.click("#list-all")

        first, second, third = (e["citation"]["entry_id"] for e in entries[:3])
        open_entry(page, first)
        page.fill("#revise-text", "The release train leaves on Fridays at noon.")
        page.click("#revise")
        expect(page.locator("#status")).to_contain_text(f"Revised: {first}-v2")
        versions = history(http, scope_id, first).json()["versions"]
        assert [v["text"] for v in versions] == [
            "The release train leaves on Thursdays at noon.",
            "The release train leaves on Fridays at noon.",
        ]
        assert [row[-1] for row in table(page, "#history")] == [v["text"] for v in versions]

        open_entry(page, second)
        page.click("#retire")
        expect(page.locator("#status")).to_have_text(f"Retired {second}.")
        assert history(http, scope_id, second).json()["state"] == "retired"
        assert second not in [e["citation"]["entry_id"] for e in listed(http, scope_id)]

        open_entry(page, third)
        page.click("#erase")
        dialog = page.locator("#confirm-erase")
        expect(dialog).to_be_visible()
        expect(page.locator("#erase-entry-id")).to_have_text(third)
        expect(page.locator("#erase-words")).to_have_text("Rollbacks go through the release dashboard first.")
        page.click("#erase-cancel")
        assert history(http, scope_id, third).status_code == 200  # cancelled: nothing erased
        page.click("#erase")
        page.click("#erase-confirm")
        expect(page.locator("#status")).to_have_text(f"Erased {third}: 1 version(s).")
        assert history(http, scope_id, third).status_code == 410
        assert third not in [row[0] for row in table(page, "#entries")]


def test_candidates_show_their_diff_and_are_approved_or_rejected_with_the_expected_version(
    page: Page, tmp_path: Path
) -> None:
    with running(sqlite(tmp_path)) as server, httpx.Client(base_url=server.base_url) as http:
        scope_id = new_scope(http, "ui")
        profile(http, scope_id, "# Team\n\nPython 3.11\nSQLite storage\n")
        proposed = profile(
            http, scope_id, "# Team\n\nPython 3.12\nSQLite storage\n<b>hostile</b>\n", approve=False
        )
        experience = http.post(
            "/v1/experience/propose",
            json={"scope_id": scope_id, "situation": "s1", "action": "a1", "outcome": "o1", "lesson": "l1"},
        ).json()
        open_scope(page, server.base_url, scope_id)
        card = page.locator(f"article[data-candidate-id='{proposed['candidate_id']}']")
        diff = [
            (span.get_attribute("class"), span.text_content()) for span in card.locator("pre.diff span").all()
        ]
        assert diff == [
            ("kept", "  # Team\n"),
            ("kept", "  \n"),
            ("removed", "- Python 3.11\n"),
            ("added", "+ Python 3.12\n"),
            ("kept", "  SQLite storage\n"),
            ("added", "+ <b>hostile</b>\n"),
        ]
        assert card.locator("b").count() == 0

        page.click(f"[aria-label='approve {proposed['candidate_id']}']")
        expect(page.locator("#status")).to_have_text(f"{proposed['candidate_id']} approved.")
        got = http.post("/v1/profile/get", json={"scope_id": scope_id}).json()
        assert got["content"] == "# Team\n\nPython 3.12\nSQLite storage\n<b>hostile</b>\n"

        page.click(f"[aria-label='reject {experience['candidate_id']}']")
        expect(page.locator("#status")).to_have_text(f"{experience['candidate_id']} rejected.")
        decided = http.post(
            "/v1/candidates/get", json={"scope_id": scope_id, "candidate_id": experience["candidate_id"]}
        ).json()
        assert decided["state"] == "rejected"
        expect(page.locator("#no-candidates")).to_be_visible()


def test_a_stale_expected_version_or_citation_is_shown_as_the_api_409(page: Page, tmp_path: Path) -> None:
    with running(sqlite(tmp_path)) as server, httpx.Client(base_url=server.base_url) as http:
        scope_id, entries = seed(http)
        candidate = profile(http, scope_id, "# Profile\n", approve=False)
        open_scope(page, server.base_url, scope_id)
        # Someone else decides the Candidate after the page read it: its version moves on.
        http.post(
            "/v1/candidates/reject",
            json={"scope_id": scope_id, "candidate_id": candidate["candidate_id"], "expected_version": 1},
        ).raise_for_status()
        page.click(f"[aria-label='approve {candidate['candidate_id']}']")
        expect(page.locator("#status.error")).to_contain_text("Approval failed: 409 revision_conflict: ")
        expect(page.locator("#status")).to_contain_text("(stale:")
        after = http.post(
            "/v1/candidates/get", json={"scope_id": scope_id, "candidate_id": candidate["candidate_id"]}
        ).json()
        assert after["state"] == "rejected"

        # And an entry revised elsewhere after the page opened it.
        entry_id = entries[0]["citation"]["entry_id"]
        open_entry(page, entry_id)
        revised = {"scope_id": scope_id, "citation": entries[0]["citation"], "text": "Changed elsewhere."}
        http.post("/v1/memory/entries/revise", json=revised).raise_for_status()
        page.fill("#revise-text", "Changed in the page.")
        page.click("#revise")
        expect(page.locator("#status.error")).to_contain_text("Revision failed: 409 revision_conflict: ")
        versions = history(http, scope_id, entry_id).json()["versions"]
        assert [v["text"] for v in versions][-1] == "Changed elsewhere." and len(versions) == 2


def test_a_read_only_token_is_offered_no_write_control(page: Page, tmp_path: Path) -> None:
    tokens = {"reader": "ui-reader-secret-token", "owner": "ui-owner-secret-token"}
    auth = tmp_path / "auth.toml"
    auth.write_text(
        f'[[principal]]\nname = "reader"\ntoken_sha256 = "{token_digest(tokens["reader"])}"\n'
        'grants = [{ actions = ["scope.read"], scopes = ["ui:*"] }]\n'
        f'[[principal]]\nname = "owner"\ntoken_sha256 = "{token_digest(tokens["owner"])}"\n'
        'grants = [{ actions = ["scope.read", "scope.write", "scope.review", "scope.erase", "server.admin"],'
        ' scopes = ["*"] }]\n'
    )
    with running(sqlite(tmp_path, auth_file=auth)) as server:
        owner = {"Authorization": f"Bearer {tokens['owner']}"}
        with httpx.Client(base_url=server.base_url, headers=owner) as http:
            scope_id, entries = seed(http)
            candidate = profile(http, scope_id, "# Profile\n", approve=False)
        page.goto(server.base_url + "/ui/memory")
        page.wait_for_selector("body[data-ready='true']")
        expect(page.locator("#status.error")).to_contain_text("401 unauthorized")  # no token typed yet
        open_scope(page, server.base_url, scope_id, token=tokens["reader"])
        expect(page.locator("#grants")).to_have_text("your actions: scope.read")
        assert len(table(page, "#entries")) == len(entries)
        open_entry(page, entries[0]["citation"]["entry_id"])
        expect(page.locator("#history tbody tr")).to_have_count(1)
        for control in ("#revise", "#retire", "#erase", "#set-expiry", "#clear-expiry"):
            expect(page.locator(control)).to_be_hidden()
        expect(page.locator(f"article[data-candidate-id='{candidate['candidate_id']}']")).to_be_visible()
        assert page.locator("article.candidate button").count() == 0

        # The owner's token, typed into the same page, is offered them.
        open_scope(page, server.base_url, scope_id, token=tokens["owner"])
        open_entry(page, entries[0]["citation"]["entry_id"])
        for control in ("#revise", "#retire", "#erase"):
            expect(page.locator(control)).to_be_visible()
        expect(page.locator(f"[aria-label='approve {candidate['candidate_id']}']")).to_be_visible()


def test_an_expiry_is_set_and_cleared_through_the_page_and_expired_entries_are_listed(
    page: Page, tmp_path: Path
) -> None:
    with running(sqlite(tmp_path)) as server, httpx.Client(base_url=server.base_url) as http:
        scope_id, entries = seed(http)
        expired = remember(
            http, scope_id, "The old office was on Elm Street.", expires_at="2020-01-01T00:00:00Z"
        )
        assert expired["citation"]["entry_id"] not in [
            e["citation"]["entry_id"] for e in listed(http, scope_id)
        ]
        open_scope(page, server.base_url, scope_id)
        # Never recalled, but listed on the page, where a person may want to fix or erase it.
        rows = {row[0]: row for row in table(page, "#entries")}
        assert rows[expired["citation"]["entry_id"]][4].startswith("2020-01-01T00:00:00")

        entry_id = entries[0]["citation"]["entry_id"]
        open_entry(page, entry_id)
        page.fill("#expires-at", "2030-01-02T03:04:05")
        page.click("#set-expiry")
        expect(page.locator("#status")).to_have_text(f"Expiry set: {entry_id}-v2.")
        head = history(http, scope_id, entry_id).json()["versions"][-1]
        assert head["text"] == entries[0]["text"] and head["expires_at"].startswith("2030-01-02T03:04:05")
        assert {row[0]: row for row in table(page, "#entries")}[entry_id][4].startswith("2030-01-02T03:04:05")

        page.click("#clear-expiry")
        expect(page.locator("#status")).to_have_text(f"Expiry cleared: {entry_id}-v3.")
        head = history(http, scope_id, entry_id).json()["versions"][-1]
        assert head["text"] == entries[0]["text"] and head["expires_at"] is None
