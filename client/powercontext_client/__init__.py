"""Python client for the PowerContext HTTP API.

```python
from powercontext_client import PowerContextClient, validate_prepared_context

with PowerContextClient("http://127.0.0.1:8000") as pc:
    prepared = pc.prepare_context("project:demo", "how do we validate an API change?")
    context = validate_prepared_context(prepared, max_bytes=8000)
```

`AsyncPowerContextClient` has the same methods as coroutines. Requests and responses are the
generated models of `powercontext_api.models`. The `powercontext` command is `powercontext_client.cli`
(also `python -m powercontext_client`). `__version__` is the installed distribution's version.
"""

from powercontext_api.client import (
    UNSET,
    AssemblyArg,
    BatchEntryArg,
    CandidateState,
    CitationArg,
    ExperienceRefArg,
    FamilyArg,
    TopicRefArg,
)

from ._async_client import AsyncPowerContextClient
from ._client import PowerContextClient
from ._errors import (
    ConflictError,
    ForbiddenError,
    InvalidArgumentError,
    InvalidPreparedContextError,
    InvalidRequestError,
    NotFoundError,
    PowerContextError,
    PowerContextHTTPError,
    ServerError,
    TransportError,
    UnauthorizedError,
    UnavailableError,
    UnexpectedResponseError,
)
from ._validate import ValidatedContext, validate_prepared_context
from ._version import VERSION as __version__

__all__ = [
    "UNSET",
    "AssemblyArg",
    "AsyncPowerContextClient",
    "BatchEntryArg",
    "CandidateState",
    "CitationArg",
    "ConflictError",
    "ExperienceRefArg",
    "FamilyArg",
    "ForbiddenError",
    "InvalidArgumentError",
    "InvalidPreparedContextError",
    "InvalidRequestError",
    "NotFoundError",
    "PowerContextClient",
    "PowerContextError",
    "PowerContextHTTPError",
    "ServerError",
    "TopicRefArg",
    "TransportError",
    "UnauthorizedError",
    "UnavailableError",
    "UnexpectedResponseError",
    "ValidatedContext",
    "__version__",
    "validate_prepared_context",
]
