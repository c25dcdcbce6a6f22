"""Reading the access configuration: a TOML file of Principals, or one full-access token."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from ..config import ConfigurationError, Settings
from .policy import FULL_ACCESS, AccessPolicy, Action, Credential, Grant, Principal, token_digest

Digest = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class _GrantFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    actions: Annotated[
        tuple[Action, ...],
        Field(min_length=1),
    ]
    scopes: Annotated[tuple[Annotated[str, StringConstraints(min_length=1)], ...], Field(min_length=1)]


class _PrincipalFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: Annotated[str, StringConstraints(min_length=1)]
    token_sha256: Digest
    grants: tuple[_GrantFile, ...] = ()


class _AuthFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    principal: tuple[_PrincipalFile, ...] = ()


def read_auth_file(path: Path) -> tuple[Credential, ...]:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        parsed = _AuthFile.model_validate(raw)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigurationError(f"Cannot read the auth file {path}: {exc.__class__.__name__}") from None
    except ValidationError as exc:
        where = "; ".join(
            ".".join(str(p) for p in e["loc"]) + ": " + e["msg"] for e in exc.errors(include_input=False)
        )
        raise ConfigurationError(f"The auth file {path} is invalid: {where}") from None
    digests = [p.token_sha256 for p in parsed.principal]
    if len(set(digests)) != len(digests):
        raise ConfigurationError(f"The auth file {path} gives two Principals the same token.")
    return tuple(
        Credential(
            p.token_sha256,
            Principal(p.name, tuple(Grant(frozenset(g.actions), g.scopes) for g in p.grants)),
        )
        for p in parsed.principal
    )


def load_access_policy(settings: Settings) -> AccessPolicy:
    """The policy the server enforces; refuses combinations that would expose data by accident."""
    credentials: list[Credential] = []
    if settings.auth_file is not None:
        credentials.extend(read_auth_file(settings.auth_file))
    if settings.auth_token:
        credentials.append(Credential(token_digest(settings.auth_token), FULL_ACCESS))
    mode = settings.access_mode or ("enforced" if credentials else "disabled")
    if mode == "enforced" and not credentials:
        raise ConfigurationError(
            "Access is enforced but no credential is configured: set POWERCONTEXT_SERVER_AUTH_FILE "
            "or POWERCONTEXT_SERVER_AUTH_TOKEN."
        )
    return AccessPolicy(enforced=mode == "enforced", credentials=tuple(credentials))


__all__ = ["load_access_policy", "read_auth_file"]
