"""Access: Principals, their grants and the checks the Runtime applies before it reads anything.

`policy` defines Principals, grants, credentials and the checks; `loading` builds the policy the
server enforces from its settings (an auth file of Principals, or one full-access token).
"""

from .loading import load_access_policy, read_auth_file
from .policy import (
    ACTIONS,
    FULL_ACCESS,
    AccessPolicy,
    Action,
    Credential,
    Forbidden,
    Grant,
    Principal,
    Unauthenticated,
    token_digest,
)

__all__ = [
    "ACTIONS",
    "FULL_ACCESS",
    "AccessPolicy",
    "Action",
    "Credential",
    "Forbidden",
    "Grant",
    "Principal",
    "Unauthenticated",
    "load_access_policy",
    "read_auth_file",
    "token_digest",
]
