"""Authentication and per-operation authorization at the HTTP edge.

The contract names the action each operation needs (`x-powercontext-access`). Connexion's bearer
security turns the token into a Principal (or a 401) before the body is read; the guard below
then checks the declared action on the Scope the request addresses, after the body is parsed and
before the handler runs. Checks that depend on stored data (Context References) stay in the
Runtime, which receives the Principal.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping
from typing import Any, cast

from connexion.security import BearerSecurityHandler

from powercontext_runtime.access import FULL_ACCESS, AccessPolicy, Action, Principal, Unauthenticated

PUBLIC = "public"
ACCESS_KEY = "x-powercontext-access"
_PRINCIPAL = "principal"


def access_by_operation(spec: Mapping[str, Any]) -> dict[str, str]:
    """operationId → the access it declares; every operation must declare one."""
    found: dict[str, str] = {}
    for item in spec["paths"].values():
        for method, operation in item.items():
            if method == "parameters":
                continue
            declared = operation.get(ACCESS_KEY)
            if declared is None:
                raise ValueError(f"{operation['operationId']} declares no {ACCESS_KEY}")
            found[operation["operationId"]] = declared
    return found


def without_security(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The contract as an access-disabled server serves it: no operation asks for a token."""
    open_spec = copy.deepcopy(dict(spec))
    open_spec.pop("security", None)
    open_spec.get("components", {}).pop("securitySchemes", None)
    for item in open_spec["paths"].values():
        for method, operation in item.items():
            if method != "parameters":
                operation.pop("security", None)
    return open_spec


def bearer_security_map(policy: AccessPolicy) -> dict[str, type[BearerSecurityHandler]]:
    """Connexion instantiates handlers itself, so the policy travels in a class made for it."""

    def token_info(token: str) -> dict[str, Any] | None:
        try:
            principal = policy.authenticate(token)
        except Unauthenticated:
            return None  # connexion answers 401
        return {"sub": principal.name, _PRINCIPAL: principal}

    class PolicyBearer(BearerSecurityHandler):  # type: ignore[misc]  # connexion is untyped
        def _resolve_func(self, security_scheme: Mapping[str, Any]) -> Callable[[str], dict[str, Any] | None]:
            return token_info

    return {"bearer": PolicyBearer}


def _addressed_scope(kwargs: Mapping[str, Any]) -> str | None:
    scope_id = kwargs.get("scope_id")
    body = kwargs.get("body")
    if scope_id is None and isinstance(body, Mapping):
        scope_id = body.get("scope_id")
    return scope_id if isinstance(scope_id, str) else None


def guarded(handler: Callable[..., Any], access: str, enforced: bool) -> Callable[..., Any]:
    """Check the declared action on the addressed Scope, then call `handler`.

    Handlers that take a `principal` get it (for the Runtime's own checks); connexion sees the
    handler's parameters plus `token_info`, which it fills from the bearer check.
    """
    if access == PUBLIC:
        return handler
    action = cast(Action, access)
    signature = inspect.signature(handler)
    wants_principal = _PRINCIPAL in signature.parameters
    visible = [p for name, p in signature.parameters.items() if name != _PRINCIPAL]
    visible.append(inspect.Parameter("token_info", inspect.Parameter.KEYWORD_ONLY, default=None))

    def call(*args: Any, token_info: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        if token_info is not None:
            principal: Principal = token_info[_PRINCIPAL]
        elif enforced:  # an operation that skipped the bearer check must not pass as anyone
            raise Unauthenticated()
        else:
            principal = FULL_ACCESS
        scope_id = _addressed_scope(kwargs)
        if scope_id is not None:
            principal.require(action, [scope_id])
        if wants_principal:
            kwargs[_PRINCIPAL] = principal
        return handler(*args, **kwargs)

    # Not functools.wraps: connexion follows __wrapped__ and would miss `token_info`.
    call.__name__ = getattr(handler, "__name__", "handler")
    call.__doc__ = handler.__doc__
    call.__signature__ = signature.replace(parameters=visible)  # type: ignore[attr-defined]
    return call
