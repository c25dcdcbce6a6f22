"""`@operation`: binds a Runtime method to the contract operation of the same name.

The decorated method checks the access the contract declares for it (`x-powercontext-access`) on
the Scope its request addresses, before it runs; so a direct Runtime call meets the same grant
check as an HTTP call. Checks that depend on stored data (Context References) stay in the methods.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from powercontext_api.operations import BY_ID

from .access import FULL_ACCESS, Action, Principal

PUBLIC = "public"

P = ParamSpec("P")
R = TypeVar("R")
SelfT = TypeVar("SelfT")


def addressed_scope(requests: tuple[Any, ...]) -> str | None:
    """The Scope an operation addresses: the first request model (parameters, then body) naming one."""
    for request in requests:
        scope_id = getattr(request, "scope_id", None)
        if isinstance(scope_id, str):
            return scope_id
    return None


def operation(method: Callable[Concatenate[SelfT, P], R]) -> Callable[Concatenate[SelfT, P], R]:
    declared = BY_ID.get(method.__name__)
    if declared is None:
        raise ValueError(f"{method.__name__} is not an operationId of the contract")
    access = declared.access

    @functools.wraps(method)
    def checked(self: SelfT, *requests: P.args, **options: P.kwargs) -> R:
        if access != PUBLIC:
            principal = cast(Principal, options.get("principal", FULL_ACCESS))
            scope_id = addressed_scope(requests)
            if scope_id is not None:
                principal.require(cast(Action, access), [scope_id])
        return method(self, *requests, **options)

    return cast(Callable[Concatenate[SelfT, P], R], checked)
