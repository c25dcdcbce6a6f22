"""Python client for the PowerContext HTTP API.

```python
from powercontext_client import PowerContextClient

with PowerContextClient("http://127.0.0.1:8000") as pc:
    prepared = pc.prepare_context("project:demo", "how do we validate an API change?")
```

Requests and responses are the generated models of `powercontext_api.models`.
"""

from ._client import (
    AssemblyArg,
    CandidateState,
    CitationArg,
    ExperienceRefArg,
    FamilyArg,
    PowerContextClient,
    TopicRefArg,
)
from ._errors import (
    ConflictError,
    ForbiddenError,
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
from ._serialize import UNSET

__all__ = [
    "UNSET",
    "AssemblyArg",
    "CandidateState",
    "CitationArg",
    "ConflictError",
    "ExperienceRefArg",
    "FamilyArg",
    "ForbiddenError",
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
]
