"""The prepare preview page `/ui/` in headless Chromium (Debian's package, driven by Playwright).

The page is used as a person would: pick a Scope, type a query, set sections, limits and the
budget, press Prepare. What it shows must be the API's answer for the same body, byte for byte,
and its receipt table must list the API's receipt. A screenshot of each run is kept in
`tests/ui/artifacts/` (ignored by git) for a human to look at (`conftest.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page

from powercontext_runtime import Settings

from ..api.helpers import new_scope, remember
from .conftest import TOKEN, running


def seed(http: httpx.Client) -> str:
    scope_id = new_scope(http, "ui")
    for i in range(6):
        remember(
            http, scope_id, f"Preview fact {i}: the ui gateway deploys on day {i}. " + "detail " * (25 * i)
        )
    remember(http, scope_id, 'Hostile <script>alert("x")</script> & <b>bold</b> ui gateway text')
    return scope_id


def shown(page: Page) -> tuple[str, list[list[str]]]:
    content = page.locator("#content").text_content() or ""
    rows = [
        [cell.strip() for cell in row.locator("td").all_text_contents()]
        for row in page.locator("#receipt tbody tr").all()
    ]
    return content, rows


def expected_rows(explained: dict[str, Any]) -> list[list[str]]:
    rows = []
    for item in explained["items"]:
        if item["included"]:
            result = "included, truncated" if item["truncated"] else "included"
        else:
            result = f"left out: {item['reason']}"
        rank = "-" if item["recall_rank"] is None else str(item["recall_rank"])
        version = item.get("entry_version_id", "-")
        rows.append(
            [
                item["family"],
                rank,
                item["scope_id"],
                item["artifact_id"],
                str(item["revision"]),
                version,
                str(item["bytes"]),
                str(item["body_bytes"]),
                result,
            ]
        )
    return rows


def test_the_page_shows_the_exact_prepared_text_and_its_receipt(page: Page, tmp_path: Path) -> None:
    with running(Settings(database_url=f"sqlite:///{tmp_path / 'ui.sqlite3'}")) as server:
        with httpx.Client(base_url=server.base_url) as http:
            scope_id = seed(http)
            page.goto(server.base_url + "/ui")  # redirects to /ui/
            page.wait_for_selector("body[data-ready='true']")
            page.select_option("#scope", scope_id)
            page.fill("#query", "ui gateway deploys hostile")
            page.fill("#max-bytes", "1500")
            # Memory at 3, Experience off, Topic Memory at 2, on and moved above Memory; show recall rank.
            page.fill("[aria-label='memory limit']", "3")
            page.fill("[aria-label='topic-memory limit']", "2")
            page.uncheck("[aria-label='use experience']")
            page.check("[aria-label='use topic-memory']")
            page.click("[aria-label='move topic-memory up']")
            page.click("[aria-label='move topic-memory up']")
            page.click("[aria-label='move topic-memory up']")
            page.check("#show-recall-rank")
            page.click("#prepare")
            page.wait_for_selector("#result:not([hidden])")

            body = {
                "scope_id": scope_id,
                "query": "ui gateway deploys hostile",
                "max_bytes": 1500,
                "assembly": {
                    "sections": [{"family": "topic-memory", "limit": 2}, {"family": "memory", "limit": 3}],
                    "show": ["recall_rank"],
                },
            }
            prepared = http.post("/v1/context/prepare", json=body).json()
            explained = http.post("/v1/context/prepare/explain", json=body).json()
        content, rows = shown(page)
        assert prepared["status"] == "ready"
        assert content == prepared["content"]
        assert page.locator("#content-bytes").text_content() == f"(ready, {prepared['content_bytes']} bytes)"
        assert rows == expected_rows(explained)
        assert any(row[-1].startswith("left out") for row in rows)
        # The hostile body is shown as text, never made into elements.
        assert page.locator("#content script, #content b").count() == 0


def test_legacy_mode_and_errors(page: Page, tmp_path: Path) -> None:
    with (
        running(Settings(database_url=f"sqlite:///{tmp_path / 'ui-legacy.sqlite3'}")) as server,
        httpx.Client(base_url=server.base_url) as http,
    ):
        scope_id = seed(http)
        page.goto(server.base_url + "/ui/")
        page.wait_for_selector("body[data-ready='true']")
        page.select_option("#scope", scope_id)
        page.fill("#query", "ui gateway")
        page.check("#legacy")
        page.click("#prepare")
        page.wait_for_selector("#result:not([hidden])")
        legacy = http.post("/v1/context/prepare", json={"scope_id": scope_id, "query": "ui gateway"}).json()
        assert shown(page)[0] == legacy["content"]
        # A body the contract refuses shows the error envelope's code and message.
        page.uncheck("#legacy")
        page.fill("[aria-label='memory limit']", "9")
        page.evaluate("document.getElementById('request').noValidate = true")
        page.click("#prepare")
        page.wait_for_selector("#status.error")
        assert "422 invalid_request" in (page.locator("#status").text_content() or "")


def test_the_page_works_with_access_enforced(page: Page, tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'ui-access.sqlite3'}", auth_token=TOKEN)
    with running(settings) as server:
        with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            scope_id = seed(http)
            page.goto(server.base_url + "/ui/")
            page.wait_for_selector("body[data-ready='true']")
            assert "401" in (page.locator("#status").text_content() or "")  # no token typed yet
            page.fill("#token", TOKEN)
            page.click("#load-scopes")
            page.wait_for_selector(f"#scope option[value='{scope_id}']", state="attached")
            page.select_option("#scope", scope_id)
            page.fill("#query", "ui gateway")
            page.click("#prepare")
            page.wait_for_selector("#result:not([hidden])")
            body = {
                "scope_id": scope_id,
                "query": "ui gateway",
                "max_bytes": 8000,
                "assembly": {
                    "sections": [{"family": "memory", "limit": 6}, {"family": "experience", "limit": 2}],
                    "show": [],
                },
            }
            assert shown(page)[0] == http.post("/v1/context/prepare", json=body).json()["content"]
        # The token lives in the page's memory only: nothing in storage or cookies.
        stored = page.evaluate("[localStorage.length, sessionStorage.length, document.cookie]")
        assert stored == [0, 0, ""]
