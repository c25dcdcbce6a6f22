"""PowerContext Runtime: cited, byte-budgeted, injection-safe prepared context, without HTTP.

The public surface is below: open an application from settings (`open_application`), call its one
method per operation, and catch the errors it raises. The subpackages group the rest by concern:
`search` (text to terms, BM25, the index and its mirror, ranked reads), `recall` (candidate pools,
recall per family), `prepare` (byte budget, the
Markdown and legacy formats, the builder), `access` (Principals, grants, the access policy) and
`store` (the SQL store and its backends). Cross-cutting modules stay at this level: `application`,
`operation`, `responses`, `models`, `errors`, `config`, `bootstrap`, `cursors`.
"""

# No cycle whatever the order: errors, models, config and nudged_thread import nothing above them,
# access only errors and config; search imports only those; store imports them and search; recall
# imports models, search and (as a type) store; prepare imports models and recall.pools;
# application and bootstrap use all.
from .access import (
    FULL_ACCESS,
    AccessPolicy,
    Forbidden,
    Grant,
    Principal,
    Unauthenticated,
    load_access_policy,
    token_digest,
)
from .application import ScopedContextApplication
from .bootstrap import backend_for, open_application, open_store
from .config import ConfigurationError, Settings
from .errors import (
    EntryErased,
    EntryNotFound,
    ErrorItem,
    InvalidExport,
    InvalidRequest,
    PowerContextError,
    RetrievalUnavailable,
    RevisionConflict,
    ScopeAlreadyExists,
    ScopeNotFound,
    ScopeReferenced,
)

__all__ = [
    "FULL_ACCESS",
    "AccessPolicy",
    "ConfigurationError",
    "EntryErased",
    "EntryNotFound",
    "ErrorItem",
    "Forbidden",
    "Grant",
    "InvalidExport",
    "InvalidRequest",
    "PowerContextError",
    "Principal",
    "RetrievalUnavailable",
    "RevisionConflict",
    "ScopeAlreadyExists",
    "ScopeNotFound",
    "ScopeReferenced",
    "ScopedContextApplication",
    "Settings",
    "Unauthenticated",
    "backend_for",
    "load_access_policy",
    "open_application",
    "open_store",
    "token_digest",
]
