"""PowerContext Runtime: cited, byte-budgeted, injection-safe prepared context, without HTTP.

The public surface is below: open an application from settings (`open_application`), call its one
method per operation, and catch the errors it raises; copy a database or export and import a Scope
by database URL with no application open (`offline`); or fit candidates of one's own with the
builder alone (`build_text_context`, `prepare_legacy`: bench's fitting figures, eval's ablation).
The subpackages group the rest by concern: `search` (text to terms, BM25, the index and its mirror,
ranked reads), `recall` (candidate pools, recall per family), `prepare` (byte budget, the
Markdown and legacy formats, the builder), `access` (Principals, grants, the access policy) and
`store` (the SQL store and its backends). Cross-cutting modules stay at this level: `application`,
`operation`, `responses`, `models`, `errors`, `config`, `bootstrap`, `cursors`, `offline`.
"""

# No cycle whatever the order: errors, models, config and nudged_thread import nothing above them,
# access only errors and config; search imports only those; store imports them and search; recall
# imports models, search and (as a type) store; prepare imports models and recall.pools;
# application and bootstrap use all.
from .access import (
    FULL_ACCESS,
    AccessPolicy,
    Action,
    Forbidden,
    Grant,
    Principal,
    Unauthenticated,
    load_access_policy,
    token_digest,
)
from .application import ScopedContextApplication
from .bootstrap import backend_for, open_application, open_store
from .config import ConfigurationError, Settings, positive_int
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
    vectors_pending,
)
from .prepare import (
    AssemblyOptions,
    BuiltContext,
    Section,
    build_text_context,
    document,
    prepare_legacy,
    quote_body,
)
from .recall import Candidate, Origin, recall_memory
from .search import SearchQuery, parse_query, terms_sources
from .store import Store

# A Scope as the store holds it, for those who call the store directly: `store.run(load_scope, id)`.
from .store.scopes import get_scope as load_scope
from .vectors import (
    DEFAULT_CACHE_BYTES,
    MAX_SPACE_CHARS,
    VECTOR_WEIGHT,
    EmbeddingFailed,
    EmbeddingLeg,
    one_blas_thread,
    vector_space,
)

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "FULL_ACCESS",
    "MAX_EXPORT_LINE_BYTES",
    "MAX_SPACE_CHARS",
    "VECTOR_WEIGHT",
    "AccessPolicy",
    "Action",
    "AssemblyOptions",
    "BuiltContext",
    "Candidate",
    "ConfigurationError",
    "CopyFailed",
    "CopyRefused",
    "EmbeddingFailed",
    "EmbeddingLeg",
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
    "load_scope",
    "one_blas_thread",
    "open_application",
    "open_store",
    "parse_query",
    "positive_int",
    "prepare_legacy",
    "quote_body",
    "recall_memory",
    "terms_sources",
    "token_digest",
    "vector_space",
    "vectors_pending",
]
