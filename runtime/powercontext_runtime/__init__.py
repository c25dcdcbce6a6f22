"""PowerContext Runtime: cited, byte-budgeted, injection-safe prepared context, without HTTP.

The public surface is below: open an application from settings (`open_application`), call its one
method per operation, and catch the errors it raises; copy a database or export and import a Scope
by database URL with no application open (`offline`); or fit candidates of one's own with the
builder alone (`build_text_context`, `prepare_legacy`: bench's fitting figures, eval's ablation). The subpackages group the rest by concern:
`recall` (tokens, the BM25 index, candidate pools, recall per family), `prepare` (byte budget, the
Markdown and legacy formats, the builder), `access` (Principals, grants, the access policy) and
`store` (the SQL store and its backends). Cross-cutting modules stay at this level: `application`,
`operation`, `responses`, `models`, `errors`, `config`, `bootstrap`, `cursors`, `offline`.
"""

# No cycle whatever the order: errors, models and config import nothing above them, access only
# errors and config; recall imports only models (its store is a type); store imports models,
# errors and recall; prepare imports models and recall.pools; application and bootstrap use all.
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
from .offline import (
    MAX_EXPORT_LINE_BYTES,
    CopyFailed,
    CopyRefused,
    TransferFailed,
    TransferRefused,
    copy_database,
    export_scope_to,
    import_scope_from,
)
from .prepare import AssemblyOptions, Section, build_text_context, document, prepare_legacy, quote_body
from .recall import Candidate, Origin, SearchQuery, parse_query, recall_memory
from .store import Store

__all__ = [
    "FULL_ACCESS",
    "MAX_EXPORT_LINE_BYTES",
    "AccessPolicy",
    "AssemblyOptions",
    "Candidate",
    "ConfigurationError",
    "CopyFailed",
    "CopyRefused",
    "EntryErased",
    "EntryNotFound",
    "ErrorItem",
    "Forbidden",
    "Grant",
    "InvalidExport",
    "InvalidRequest",
    "Origin",
    "PowerContextError",
    "Principal",
    "RetrievalUnavailable",
    "RevisionConflict",
    "ScopeAlreadyExists",
    "ScopeNotFound",
    "ScopeReferenced",
    "ScopedContextApplication",
    "SearchQuery",
    "Section",
    "Settings",
    "Store",
    "TransferFailed",
    "TransferRefused",
    "Unauthenticated",
    "backend_for",
    "build_text_context",
    "copy_database",
    "document",
    "export_scope_to",
    "import_scope_from",
    "load_access_policy",
    "open_application",
    "open_store",
    "parse_query",
    "prepare_legacy",
    "quote_body",
    "recall_memory",
    "token_digest",
]
