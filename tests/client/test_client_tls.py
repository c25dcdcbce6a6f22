"""A client for a plain-HTTP address loads no CA bundle (35 ms a client, paid by every CLI
command); one for an https address still verifies the server's certificate."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import pytest

from powercontext_client import AsyncPowerContextClient, PowerContextClient


@pytest.fixture
def verifying_contexts(monkeypatch: pytest.MonkeyPatch) -> list[ssl.SSLContext]:
    """The certificate-checking TLS contexts built (httpx builds one from the CA bundle)."""
    built: list[ssl.SSLContext] = []
    original = ssl.create_default_context

    def counted(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        built.append(original(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    return built


def test_a_client_for_a_plain_http_address_loads_no_certificates(
    verifying_contexts: list[ssl.SSLContext],
) -> None:
    PowerContextClient("http://127.0.0.1:9").close()

    async def open_async() -> None:
        await AsyncPowerContextClient("http://127.0.0.1:9").aclose()

    asyncio.run(open_async())
    assert verifying_contexts == []


def test_a_client_for_an_https_address_checks_the_certificate(
    verifying_contexts: list[ssl.SSLContext],
) -> None:
    PowerContextClient("https://127.0.0.1:9").close()
    assert [(c.verify_mode, c.check_hostname) for c in verifying_contexts] == [(ssl.CERT_REQUIRED, True)]
