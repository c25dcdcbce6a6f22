"""What the browser tests of the `/ui/` pages share: Debian's Chromium driven by Playwright, a page
that fails its test on any script, console or CSP error and leaves a screenshot in
`tests/ui/artifacts/` (ignored by git), and a live server for the test's settings.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from powercontext_runtime import Settings

from ..conftest import LiveServer

CHROMIUM = os.environ.get("POWERCONTEXT_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
TOKEN = "ui-test-secret-token"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """A missing Chromium is a failure, not a skip: `make test` installs it (make chromium)."""
    assert Path(CHROMIUM).exists(), f"no Chromium at {CHROMIUM}: run `make chromium`"
    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 1600})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    # An error answer the test asks for is logged as a failed load; anything else (a CSP refusal,
    # a script error) is a failure of the page.
    opened.on(
        "console",
        lambda message: (
            errors.append(message.text)
            if message.type == "error"
            and not message.text.startswith("Failed to load resource: the server responded")
            else None
        ),
    )
    yield opened
    ARTIFACTS.mkdir(exist_ok=True)
    opened.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    # A typed token lives in the page's memory only: nothing in storage, no cookie.
    stored = (
        opened.evaluate("[localStorage.length, sessionStorage.length]")
        if opened.url.startswith("http")
        else []
    )
    cookies = context.cookies()
    context.close()
    assert errors == [], errors
    assert stored in ([0, 0], []) and cookies == [], (stored, cookies)


@contextmanager
def running(settings: Settings) -> Iterator[LiveServer]:
    server = LiveServer(settings)
    server.start()
    try:
        yield server
    finally:
        server.stop()
