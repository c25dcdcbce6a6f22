"""Principals, grants and the access checks the Runtime applies before it reads anything.

A grant gives actions on Scope ids: an exact id, a prefix pattern ending in `*` (`project:*`), or
`*` for every Scope. A denial never depends on whether the Scope exists, so a 403 cannot reveal
that a Scope the caller may not read is there.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ..errors import PowerContextError

Action = Literal["scope.read", "scope.write", "scope.review", "scope.erase", "scope.export", "server.admin"]
ACTIONS: tuple[Action, ...] = (
    "scope.read",
    "scope.write",
    "scope.review",
    "scope.erase",
    "scope.export",
    "server.admin",
)


class Unauthenticated(PowerContextError):
    """No credential, or one that names no Principal."""


class Forbidden(PowerContextError):
    """The Principal lacks a grant the operation needs."""


@dataclass(frozen=True, slots=True)
class Grant:
    actions: frozenset[Action]
    scopes: tuple[str, ...]

    def covers(self, action: Action, scope_id: str) -> bool:
        return action in self.actions and any(_matches(pattern, scope_id) for pattern in self.scopes)


def _matches(pattern: str, scope_id: str) -> bool:
    if pattern.endswith("*"):
        return scope_id.startswith(pattern[:-1])
    return pattern == scope_id


@dataclass(frozen=True, slots=True)
class Principal:
    name: str
    grants: tuple[Grant, ...]

    def may(self, action: Action, scope_id: str) -> bool:
        return any(grant.covers(action, scope_id) for grant in self.grants)

    def require(self, action: Action, scope_ids: Iterable[str]) -> None:
        """All or nothing: every Scope must be granted before anything is read."""
        if not all(self.may(action, scope_id) for scope_id in scope_ids):
            raise Forbidden()


FULL_ACCESS = Principal("full-access", (Grant(frozenset(ACTIONS), ("*",)),))


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Credential:
    token_sha256: str
    principal: Principal


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    """`enforced=False` lets every request act with full access (loopback-only, one person)."""

    enforced: bool
    credentials: tuple[Credential, ...] = ()

    def authenticate(self, token: str | None) -> Principal:
        if not self.enforced:
            return FULL_ACCESS
        if not token:
            raise Unauthenticated()
        presented = token_digest(token)
        found: Principal | None = None
        # Compare against every credential in constant time; stop early on nothing.
        for credential in self.credentials:
            if hmac.compare_digest(presented, credential.token_sha256):
                found = credential.principal
        if found is None:
            raise Unauthenticated()
        return found
